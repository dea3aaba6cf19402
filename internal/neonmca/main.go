// Command neonmca gives the paper figures of the NEON SDOT matrix-vector kernels, which
// no machine of the project's CI can time (qemu checks their bits, not their speed): it
// builds package ternary's arm64 test binary, disassembles each kernel's innermost loop
// with llvm-objdump and has llvm-mca schedule it on the cores LLVM models, printing
// the product's multiply-adds (weights × vectors) a cycle.
//
//	go run ./internal/neonmca [-cpus apple-m1,neoverse-n1,cortex-a55]
//
// It needs llvm-objdump and llvm-mca (Debian's llvm package). The figures are a
// scheduling model's, not a measurement: no cache misses, no memory.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// kernel is one kernel's innermost loop and the share of its SDOTs' 16 byte products a
// cycle that are the product's multiply-adds: 1 for the 2-bit codes, 5/6 for the base-3
// interleave (six products give five trits), 1024/1280 for the PTQ1_0 file kernel
// (a block's 128 trits in 160 byte lanes).
type kernel struct {
	sym    string
	useful float64
	what   string
}

var kernels = []kernel{
	{"ilv3TilesNEONDot", 5.0 / 6, "PTQ1_0 interleaved (base 3), decode"},
	{"ilv3PairNEONDot", 5.0 / 6, "PTQ1_0 interleaved, batches: two vectors"},
	{"ilv3QuadNEONDot", 5.0 / 6, "PTQ1_0 interleaved, batches: four vectors"},
	{"q8RowsPTQ1NEONDot", 1024.0 / 1280, "PTQ1_0 file rows, decode"},
	{"ilvTilesNEONDot", 1, "PQ2_0 interleaved, decode"},
	{"ilvMatNEONDot5", 1, "PQ2_0 interleaved, batches: five vectors"},
	{"q8RowsNEONDot", 1, "PQ2_0 file rows, decode"},
	{"q8TileNEONDotr1v6", 1, "file rows, batches (both formats once repacked): six vectors; its repacking not counted"},
}

func main() {
	cpus := flag.String("cpus", "apple-m1,neoverse-n1,cortex-a55", "llvm-mca -mcpu values, comma-separated")
	flag.Parse()
	if err := run(strings.Split(*cpus, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "neonmca:", err)
		os.Exit(1)
	}
}

func run(cpus []string) error {
	dir, err := os.MkdirTemp("", "neonmca")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "ternary.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./ternary")
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the arm64 test binary: %w", err)
	}
	fmt.Printf("%-20s", "multiply-adds/cycle")
	for _, c := range cpus {
		fmt.Printf(" %12s", c)
	}
	fmt.Println()
	for _, k := range kernels {
		loop, sdots, err := innermostLoop(bin, k.sym)
		if err != nil {
			return err
		}
		src := filepath.Join(dir, k.sym+".s")
		if err := os.WriteFile(src, []byte(strings.Join(loop, "\n")+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Printf("%-20s", k.sym)
		for _, c := range cpus {
			cycles, err := mcaCycles(src, c, 200)
			if err != nil {
				return err
			}
			fmt.Printf(" %12.1f", 16*float64(sdots)*k.useful*200/cycles)
		}
		fmt.Printf("   %s (%d instructions, %d SDOTs)\n", k.what, len(loop), sdots)
	}
	return nil
}

var insnLine = regexp.MustCompile(`^\s*([0-9a-f]+):\s+(\S.*)$`)
var backBranch = regexp.MustCompile(`^b\.\w+\s+0x([0-9a-f]+)`)

// innermostLoop returns the body (its branch left out) of the shortest backward-branching
// loop of sym's disassembly that holds an SDOT, and its SDOTs.
func innermostLoop(bin, sym string) ([]string, int, error) {
	out, err := exec.Command("llvm-objdump", "-d", "--no-show-raw-insn", "--mattr=+dotprod",
		"--disassemble-symbols=github.com/bonsai-go/sdk/ternary."+sym+".abi0", bin).Output()
	if err != nil {
		return nil, 0, fmt.Errorf("llvm-objdump %s: %w", sym, err)
	}
	type insn struct {
		addr uint64
		text string
	}
	var ins []insn
	for _, l := range strings.Split(string(out), "\n") {
		m := insnLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a, _ := strconv.ParseUint(m[1], 16, 64)
		text, _, _ := strings.Cut(m[2], "//")
		ins = append(ins, insn{a, strings.TrimSpace(text)})
	}
	var best []string
	bestSdots := 0
	for i, x := range ins {
		m := backBranch.FindStringSubmatch(x.text)
		if m == nil {
			continue
		}
		target, _ := strconv.ParseUint(m[1], 16, 64)
		if target >= x.addr {
			continue
		}
		var body []string
		sdots := 0
		for _, y := range ins[:i] {
			if y.addr >= target {
				body = append(body, y.text)
				if strings.HasPrefix(y.text, "sdot") {
					sdots++
				}
			}
		}
		if sdots > 0 && (best == nil || len(body) < len(best)) {
			best, bestSdots = body, sdots
		}
	}
	if best == nil {
		return nil, 0, fmt.Errorf("%s: no loop with an SDOT in its disassembly", sym)
	}
	return best, bestSdots, nil
}

var totalCycles = regexp.MustCompile(`Total Cycles:\s+(\d+)`)

// mcaCycles returns llvm-mca's cycles for iters passes over the loop in src on cpu.
func mcaCycles(src, cpu string, iters int) (float64, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("llvm-mca", "-mtriple=aarch64", "-mcpu="+cpu, "-mattr=+dotprod",
		"-iterations="+strconv.Itoa(iters), src)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("llvm-mca -mcpu=%s: %w: %s", cpu, err, stderr.String())
	}
	m := totalCycles.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("llvm-mca -mcpu=%s: no total cycles in its report", cpu)
	}
	c, _ := strconv.ParseFloat(string(m[1]), 64)
	return c, nil
}
