//go:build amd64 && !purego

package ternary

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestIlvAVXVNNIEncoding checks that the AVX-VNNI kernels, which no machine here runs,
// are the instructions of their EVEX twins, which TestIlvAVX2* run against the generic
// code on any AVX-512 VNNI machine: binutils' objdump (an independent decoder)
// disassembles both from this process's memory, and apart from VPDPBUSD's encoding
// ("{vex}") and addresses the two must read the same, VPDPBUSD for VPDPBUSD. Without
// objdump it skips, or fails where TERNARY_OBJDUMP_REQUIRE is set (CI).
func TestIlvAVXVNNIEncoding(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		if os.Getenv("TERNARY_OBJDUMP_REQUIRE") != "" {
			t.Fatal("objdump (binutils) not found and TERNARY_OBJDUMP_REQUIRE is set")
		}
		t.Skip("objdump (binutils) not installed: the AVX-VNNI kernels' encoding is unchecked")
	}
	type pair struct {
		vex, evex any
		dots      int // VPDPBUSD in the code
	}
	// Decode: a block's 32 steps of two halves of four products. Batched, nv vectors:
	// each of a block pair's 8 passes runs 8 steps of two products a vector.
	// The base-3 decode kernels: 32 steps of two halves of six products.
	pairs := []pair{{ilvTilesAVXVNNI, ilvTilesVNNI256, 256}, {ilvBlockAVXVNNI, ilvBlockVNNI256, 256},
		{ilv3TilesAVXVNNI, ilv3TilesVNNI256, 384}, {ilv3BlockAVXVNNI, ilv3BlockVNNI256, 384},
		// The base-3 pair kernel: two passes of 32 half steps of twelve products.
		{ilv3PairAVXVNNI, ilv3PairVNNI256, 768}}
	for nv, fs := range [][2]any{{ilvMatAVXVNNI1, ilvMatVNNI2561}, {ilvMatAVXVNNI2, ilvMatVNNI2562},
		{ilvMatAVXVNNI3, ilvMatVNNI2563}, {ilvMatAVXVNNI4, ilvMatVNNI2564},
		{ilvMatAVXVNNI5, ilvMatVNNI2565}, {ilvMatAVXVNNI6, ilvMatVNNI2566}} {
		pairs = append(pairs, pair{fs[0], fs[1], 128 * (nv + 1)})
	}
	for _, pr := range pairs {
		vexName, vex, vexFirst := disassemble(t, objdump, pr.vex)
		evexName, evex, _ := disassemble(t, objdump, pr.evex)
		if len(vex) != len(evex) {
			t.Fatalf("%s has %d instructions, %s %d", vexName, len(vex), evexName, len(evex))
		}
		dots := 0
		for i := range vex {
			v, e := vex[i], evex[i]
			// 0x62 begins an EVEX instruction in 64-bit mode, which a CPU without
			// AVX-512 faults on: the assembler must have found a VEX form for all.
			if vexFirst[i] == 0x62 {
				t.Fatalf("%s instruction %d %q is EVEX-encoded", vexName, i, v)
			}
			if rest, ok := strings.CutPrefix(v, "{vex} vpdpbusd "); ok {
				if e != "vpdpbusd "+rest {
					t.Fatalf("%s instruction %d is %q, %s's %q", vexName, i, v, evexName, e)
				}
				dots++
				continue
			}
			if strings.Contains(e, "vpdpbusd") || v != e {
				t.Fatalf("%s instruction %d is %q, %s's %q", vexName, i, v, evexName, e)
			}
		}
		if dots != pr.dots {
			t.Fatalf("%s: %d VEX-encoded VPDPBUSD, want %d", vexName, dots, pr.dots)
		}
	}
}

var (
	insnLine = regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)
	jumpDest = regexp.MustCompile(`^(j[a-z]+|call) +(0x)?([0-9a-f]+)( <.*>)?$`)
	ripDisp  = regexp.MustCompile(`-?0x[0-9a-f]+\(%rip\)(.*)# (0x)?([0-9a-f]+)( <.*>)?$`)
)

// disassemble returns the name of the assembly function behind the Go function value f,
// its instructions as objdump prints them (jump targets as instruction indices,
// RIP-relative operands as the address they reach) and each one's first byte. f's value is the ABI wrapper the
// compiler makes for a Go declaration of an assembly function; the body is the function
// of the same name that the wrapper calls.
func disassemble(t *testing.T, objdump string, f any) (string, []string, []byte) {
	t.Helper()
	wrapper := reflect.ValueOf(f).Pointer()
	name := runtime.FuncForPC(wrapper).Name()
	var body uintptr
	code := funcBytes(wrapper)
	for i := 0; i+5 <= len(code); i++ {
		if code[i] != 0xE8 { // CALL rel32
			continue
		}
		to := wrapper + uintptr(i+5) + uintptr(int32(binary.LittleEndian.Uint32(code[i+1:])))
		if fn := runtime.FuncForPC(to); fn != nil && fn.Entry() == to && to != wrapper && fn.Name() == name {
			body = to
			break
		}
	}
	if body == 0 {
		t.Fatalf("%s: no call to the assembly body in its wrapper", name)
	}
	file := filepath.Join(t.TempDir(), "code")
	code = funcBytes(body)
	if err := os.WriteFile(file, code, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "--no-show-raw-insn", file).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	var addrs []uint64
	var insns []string
	for _, line := range strings.Split(string(out), "\n") {
		m := insnLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, a)
		insns = append(insns, strings.Join(strings.Fields(m[2]), " "))
	}
	if len(insns) == 0 {
		t.Fatalf("objdump decoded nothing of %s", name)
	}
	index := make(map[uint64]int, len(addrs))
	for i, a := range addrs {
		index[a] = i
	}
	for i, s := range insns {
		if m := jumpDest.FindStringSubmatch(s); m != nil {
			a, _ := strconv.ParseUint(m[3], 16, 64)
			j, ok := index[a]
			if !ok {
				t.Fatalf("%s instruction %d %q leaves the function", name, i, s)
			}
			insns[i] = m[1] + " @" + strconv.Itoa(j)
		} else if m := ripDisp.FindStringSubmatch(s); m != nil {
			a, _ := strconv.ParseUint(m[3], 16, 64)
			insns[i] = ripDisp.ReplaceAllString(s, fmt.Sprintf("<%#x>$1", uint64(body)+a))
		}
	}
	first := make([]byte, len(addrs))
	for i, a := range addrs {
		first[i] = code[a]
	}
	return name, insns, first
}

// funcBytes returns the machine code of the function that starts at entry: the bytes
// up to where the runtime's table says the next function starts.
func funcBytes(entry uintptr) []byte {
	end := entry
	for fn := runtime.FuncForPC(end); fn != nil && fn.Entry() == entry; fn = runtime.FuncForPC(end) {
		end++
	}
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&entry))), end-entry)
}

// eachAVX2Impl runs f on every implementation of the AVX2 family's interleaved
// kernels this CPU runs, each in turn the one the family uses (forEachAVX2Impl).
func eachAVX2Impl(t *testing.T, f func(t *testing.T)) {
	forEachAVX2Impl(t, func(t *testing.T, _ ilvAVX2Impl) { f(t) })
}

// BenchmarkIlvKernelAVX2 is BenchmarkIlvKernel's interleaved run for each
// implementation of the AVX2 family's decode kernel this CPU runs: on an AVX-512 VNNI
// machine the EVEX twin shows what the AVX-VNNI kernel's instructions cost against the
// AVX2 one's on the same cores.
func BenchmarkIlvKernelAVX2(b *testing.B) {
	kern := ilvNeedAVX2(b)
	for _, k := range []int{5120, 17408} {
		_, v, x, y := ilvKernelBench(b, k)
		n := len(y)
		for _, impl := range ilvAVX2Impls {
			b.Run(fmt.Sprintf("%s/K=%d", impl.name, k), func(b *testing.B) {
				withAVX2Impl(impl, func() {
					withKernel(kern, func() {
						for b.Loop() {
							MatVecInterleavedRange(v, x, y, 0, n)
						}
					})
				})
				b.ReportMetric(float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gw/s")
			})
		}
	}
}

// BenchmarkIlvMatKernelAVX2Impls is BenchmarkIlvMatKernel for each implementation of
// the AVX2 family's batched kernel this CPU runs (the EVEX twin on an AVX-512 VNNI
// machine shows what the AVX-VNNI kernels' instructions cost on its cores).
func BenchmarkIlvMatKernelAVX2Impls(b *testing.B) {
	ilvNeedAVX2(b)
	for _, impl := range ilvAVX2Impls {
		b.Run(impl.name, func(b *testing.B) { benchIlvMatKernel(b, impl.mat) })
	}
}

// BenchmarkMatMulIlvAVX2Impls is BenchmarkMatMulIlvAVX2's interleaved prefill product
// (5120×17408 and 17408×5120, 64 and 256 vectors, two threads) for each implementation
// of the AVX2 family's kernels this CPU runs.
func BenchmarkMatMulIlvAVX2Impls(b *testing.B) {
	k8 := ilvNeedAVX2(b)
	for _, impl := range ilvAVX2Impls {
		for _, sh := range matMulShapes[:2] {
			for _, t := range []int{64, 256} {
				b.Run(fmt.Sprintf("%s/%dx%d/t=%d", impl.name, sh[0], sh[1], t), func(b *testing.B) {
					withAVX2Impl(impl, func() {
						withKernel(k8, func() { benchMatMulIlvMode(b, sh[0], sh[1], t, 2, "interleaved") })
					})
				})
			}
		}
	}
}

// BenchmarkIlvStreamAVX2Impls is BenchmarkIlvStream for each implementation of the AVX2
// family's decode kernel this CPU runs.
func BenchmarkIlvStreamAVX2Impls(b *testing.B) {
	k8 := ilvNeedAVX2(b)
	for _, impl := range ilvAVX2Impls {
		b.Run(impl.name, func(b *testing.B) {
			withAVX2Impl(impl, func() { withKernel(k8, func() { ilvStream(b) }) })
		})
	}
}

// BenchmarkIlv3StreamAVX2Impls is BenchmarkIlv3Stream on the AVX2 family, for each
// implementation with a base-3 kernel this CPU runs: PTQ1_0's interleave against
// PQ2_0's under the same implementation, each against a read of its own bytes.
func BenchmarkIlv3StreamAVX2Impls(b *testing.B) {
	k8 := ilvNeedAVX2(b)
	for _, impl := range ilvAVX2Impls {
		if !impl.base3() {
			continue
		}
		b.Run(impl.name, func(b *testing.B) {
			withAVX2Impl(impl, func() { withKernel(k8, func() { ilv3Stream(b) }) })
		})
	}
}

// BenchmarkMatMulIlv3AVX2Impls is BenchmarkMatMulIlv3 on the AVX2 family, for each
// implementation with a base-3 kernel this CPU runs (whose batches run two vectors at a
// time), against the 2-bit interleave and the PTQ1_0 file's tiled path on the same
// family.
func BenchmarkMatMulIlv3AVX2Impls(b *testing.B) {
	k8 := ilvNeedAVX2(b)
	for _, impl := range ilvAVX2Impls {
		if !impl.base3() {
			continue
		}
		for _, sh := range matMulShapes[:2] {
			for _, t := range []int{64, 256} {
				b.Run(fmt.Sprintf("%s/%dx%d/t=%d", impl.name, sh[0], sh[1], t), func(b *testing.B) {
					withAVX2Impl(impl, func() {
						withKernel(k8, func() { benchMatMulIlv3(b, sh[0], sh[1], t, 2) })
					})
				})
			}
		}
	}
}
