// Command neonmca gives the paper figures of the NEON integer kernels — the SDOT
// matrix-vector kernels of package ternary and the attention scorers of package qwen35
// (SDOT, and widening multiplies where a core lacks SDOT) — which no machine of the
// project's CI can time (qemu checks their bits, not their speed): it builds the
// packages' arm64 test binaries, disassembles each kernel's innermost loop with
// llvm-objdump and has llvm-mca schedule it on the cores LLVM models, printing the
// product's multiply-adds (weights × vectors, or query × key codes) a cycle.
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

// kernel is one kernel's innermost loop (in package pkg) and the share of its byte
// products (SDOT's 16, a widening multiply's 8) that are the product's multiply-adds: 1
// for the 2-bit codes and the scorers, 5/6 for the base-3 interleave (six products give
// five trits), 1024/1280 for the PTQ1_0 file kernel (a block's 128 trits in 160 byte
// lanes).
type kernel struct {
	pkg    string
	sym    string
	useful float64
	what   string
	float  bool // its products are FMLA lanes, not integer byte products
}

var kernels = []kernel{
	{"qwen35", "scoreInt8SDOT", 1, "int8 attention scores, SDOT (a query head × a key a loop)", false},
	{"qwen35", "scoreInt8NEON", 1, "int8 attention scores, widening multiplies (ARMv8.0)", false},
	{"qwen35", "scoreQ4SDOT", 1, "q4 attention scores, SDOT", false},
	{"qwen35", "scoreQ4NEON", 1, "q4 attention scores, widening multiplies (ARMv8.0)", false},
	{"qwen35", "dot6x4F32NEON", 1, "f32 cache's attention scores: FMLA lanes (six heads × four keys a block)", true},
	{"qwen35", "dot6x4F16NEON", 1, "f16 cache's attention scores (the default cache)", true},
	{"qwen35", "axpy6F32NEON", 1, "f32 cache's values: FMLA lanes (six heads, eight columns, four positions a loop)", true},
	{"qwen35", "axpy6F16NEON", 1, "f16 cache's values", true},
	{"qwen35", "axpy6Int8NEON", 1, "int8 cache's values (codes widened, converted and scaled in registers)", true},
	{"qwen35", "axpy6Q4NEON", 1, "q4 cache's values", true},
	{"qwen35", "gdnStepNEON", 1, "GDN decode step: FMLA lanes (eight state rows a loop)", true},
	{"ternary", "ilv3TilesNEONDot", 5.0 / 6, "PTQ1_0 interleaved (base 3), decode", false},
	{"ternary", "ilv3PairNEONDot", 5.0 / 6, "PTQ1_0 interleaved, batches: two vectors", false},
	{"ternary", "ilv3QuadNEONDot", 5.0 / 6, "PTQ1_0 interleaved, batches: four vectors", false},
	{"ternary", "q8RowsPTQ1NEONDot", 1024.0 / 1280, "PTQ1_0 file rows, decode", false},
	{"ternary", "ilvTilesNEONDot", 1, "PQ2_0 interleaved, decode", false},
	{"ternary", "ilvMatNEONDot5", 1, "PQ2_0 interleaved, batches: five vectors", false},
	{"ternary", "q8RowsNEONDot", 1, "PQ2_0 file rows, decode", false},
	{"ternary", "q8TileNEONDotr1v6", 1, "file rows, batches (both formats once repacked): six vectors; its repacking not counted", false},
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
	bins := map[string]string{}
	for _, k := range kernels {
		if bins[k.pkg] != "" {
			continue
		}
		bin := filepath.Join(dir, k.pkg+".test")
		build := exec.Command("go", "test", "-c", "-o", bin, "./"+k.pkg)
		build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the arm64 test binary of %s: %w", k.pkg, err)
		}
		bins[k.pkg] = bin
	}
	fmt.Printf("%-20s", "multiply-adds/cycle")
	for _, c := range cpus {
		fmt.Printf(" %12s", c)
	}
	fmt.Println()
	for _, k := range kernels {
		loop, products, err := innermostLoop(bins[k.pkg], k)
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
			fmt.Printf(" %12.1f", float64(products)*k.useful*200/cycles)
		}
		unit := "byte products"
		if k.float {
			unit = "FMLA lanes"
		}
		fmt.Printf("   %s (%d instructions, %d %s)\n", k.what, len(loop), products, unit)
	}
	return nil
}

var insnLine = regexp.MustCompile(`^\s*([0-9a-f]+):\s+(\S.*)$`)
var backBranch = regexp.MustCompile(`^b\.\w+\s+0x([0-9a-f]+)`)

// byteProducts is the byte products of each integer multiply the kernels use, and
// floatProducts the lanes of the float ones: a kernel's products are the one or the
// other (the integer kernels' float folds are not their product).
var (
	byteProducts  = map[string]int{"sdot": 16, "smull": 8, "smull2": 8, "smlal": 8, "smlal2": 8}
	floatProducts = map[string]int{"fmla": 4}
)

// innermostLoop returns the body (its branch left out) of the innermost backward-branching
// loop of pkg.sym's disassembly with the most multiplies (SDOT, widening multiplies,
// FMLA), and its products.
func innermostLoop(bin string, k kernel) ([]string, int, error) {
	pkg, sym := k.pkg, k.sym
	counts := byteProducts
	if k.float {
		counts = floatProducts
	}
	out, err := exec.Command("llvm-objdump", "-d", "--no-show-raw-insn", "--mattr=+dotprod",
		"--disassemble-symbols=github.com/bonsai-go/sdk/"+pkg+"."+sym+".abi0", bin).Output()
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
	bestProducts := 0
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
		products, inner := 0, true
		for _, y := range ins[:i] {
			if y.addr >= target {
				body = append(body, y.text)
				if f := strings.Fields(y.text); len(f) > 0 {
					products += counts[f[0]]
				}
				if backBranch.MatchString(y.text) {
					inner = false // holds a loop of its own
				}
			}
		}
		// Of the innermost loops, the main one: a kernel's tail loops (the positions or
		// rows left over) do less work a pass.
		if inner && products > bestProducts {
			best, bestProducts = body, products
		}
	}
	if best == nil {
		return nil, 0, fmt.Errorf("%s.%s: no loop with an integer multiply in its disassembly", pkg, sym)
	}
	return best, bestProducts, nil
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
