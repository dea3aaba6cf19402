package engine

import (
	"embed"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
)

// The MSL sources, embedded: shaders/*.h (shared declarations) and shaders/*.metal (the
// kernels). Source returns them joined into one program.
//
//go:embed shaders/*.h shaders/*.metal
var shaderFS embed.FS

// Kernel names (the functions of the library).
const (
	kEmbed        = "embed"
	kSiteNorm     = "site_norm"
	kSiteFWHT     = "site_fwht"
	kSiteSwiGLU   = "site_swiglu"
	kArgmax       = "argmax"
	kStreamRead   = "stream_read"
	kMVPlain      = "mv_plain"
	kMVFWHT       = "mv_fwht"
	kMVNorm       = "mv_norm"
	kMVSwiGLU     = "mv_swiglu"
	kGemm         = "gemm"
	kGemmT1       = "gemm_t1"
	kMVPlainT1    = "mv_plain_t1"
	kMVFWHTT1     = "mv_fwht_t1"
	kMVNormT1     = "mv_norm_t1"
	kMVSwiGLUT1   = "mv_swiglu_t1"
	kGDNDecodeT1  = "gdn_decode_t1"
	kGDNDecode    = "gdn_decode"
	kGDNSeq       = "gdn_seq"
	kGDNChunk     = "gdn_chunk"
	kAttnF16      = "attn_f16"
	kAttnF32      = "attn_f32"
	kAttnI8       = "attn_i8"
	kAttnAppend16 = "attn_append_f16"
	kAttnAppend32 = "attn_append_f32"
	kAttnAppendI8 = "attn_append_i8"
)

// kernelNames lists every kernel of the library.
var kernelNames = []string{
	kEmbed, kSiteNorm, kSiteFWHT, kSiteSwiGLU, kArgmax, kStreamRead,
	kMVPlain, kMVFWHT, kMVNorm, kMVSwiGLU, kGemm,
	kGDNDecode, kGDNSeq, kGDNChunk,
	kAttnF16, kAttnF32, kAttnI8, kAttnAppend16, kAttnAppend32, kAttnAppendI8,
	// PTQ1_0 twins of the ternary products.
	kGemmT1, kMVPlainT1, kMVFWHTT1, kMVNormT1, kMVSwiGLUT1, kGDNDecodeT1,
}

// KernelNames returns the names of the library's kernels.
func KernelNames() []string { return append([]string(nil), kernelNames...) }

// Sizes fixed in the MSL (kept in step with shaders/common.h and the kernels).
const (
	maxChunk     = 6144 // BONSAI_MAXCH: activation floats a matvec threadgroup holds
	mvRows       = 4    // MV_R: rows per SIMD-group per pass
	siteMaxBlock = 4096 // SITE_MAXBLK
	gemmRows     = 64   // GEMM_NR
	gemmTokens   = 64   // GEMM_NT
	gemmThreads  = 128  // GEMM_THREADS
	attnThreads  = 256  // ATT_THREADS
	gdnCC        = 32   // GDN_CC: tokens per chunk of gdn_chunk
	gdnTMax      = 64   // GDN_TMAX: tokens per gdn_chunk dispatch
	gdnMaxConv   = 8    // GDN_MAXK
	tgMemory     = 32768
	simdWidth    = 32
)

// Sources returns the MSL sources of the library, one file name → text each, as
// embedded: the headers (common.h, pq2.h) and the kernel files.
func Sources() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(shaderFS, "shaders", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := shaderFS.ReadFile(path)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(path, "shaders/")] = string(b)
		return nil
	})
	return out
}

// Source returns the library as one MSL program: common.h, then the other headers, then
// the .metal files, each in name order, each preceded by a #line directive naming it and
// with its #include "…" lines of the program's own headers commented out. Passing one
// file keeps the program independent of how a device joins several.
func Source() string { return joinSources(Sources()) }

// joinSources joins MSL sources (file name → text) as Source joins the embedded ones.
func joinSources(src map[string]string) string {
	names := make([]string, 0, len(src))
	for n := range src {
		names = append(names, n)
	}
	rank := func(n string) int {
		switch {
		case n == "common.h":
			return 0
		case strings.HasSuffix(n, ".h"):
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "#line 1 %q\n", n)
		for _, line := range strings.SplitAfter(src[n], "\n") {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, "#include \"") {
				inc := strings.TrimSuffix(strings.TrimPrefix(t, "#include \""), "\"")
				if _, ok := src[inc]; ok {
					b.WriteString("// " + t + " (joined above)\n")
					continue
				}
			}
			b.WriteString(line)
		}
		if !strings.HasSuffix(src[n], "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// sourceFile is the name the joined program is compiled under.
const sourceFile = "bonsai.metal"

// geometry holds the model sizes the library is specialised for, and whether the fused
// GDN decode kernel fits in threadgroup memory for them.
type geometry struct {
	E, D, Rep, HD int
	fusedGDN      bool
}

// newGeometry derives the library's sizes from a configuration, refusing a model whose
// shapes the kernels cannot take.
func newGeometry(c *qwen35.Config, block int) (geometry, error) {
	g := geometry{E: c.Embedding, D: c.StateSize, Rep: c.HeadRepeat(), HD: c.HeadDim}
	switch {
	case block < 2 || block > siteMaxBlock || block&(block-1) != 0:
		return g, fmt.Errorf("Hadamard block size %d: the kernels take powers of two up to %d", block, siteMaxBlock)
	case c.HeadDim > 512:
		return g, fmt.Errorf("attention head dim %d: the kernels take at most 512", c.HeadDim)
	case c.RopeDims/2 > c.HeadDim/2:
		return g, fmt.Errorf("rope dims %d exceed the head dim %d", c.RopeDims, c.HeadDim)
	case c.ConvKernel < 2:
		return g, fmt.Errorf("conv kernel %d", c.ConvKernel)
	}
	// Threadgroup memory of gdn_seq, gdn_chunk and gdn_decode (bytes).
	d, rep := c.StateSize, c.HeadRepeat()
	seq := 4 * ((2+rep)*d + rep*d + 2*rep + 32 + rep)
	chunk := 4 * (2*gdnTMax*rep + 4*gdnCC*gdnCC + 2*gdnCC + 32*gdnCC)
	if c.ConvKernel > gdnMaxConv {
		return g, fmt.Errorf("conv kernel %d: the kernels take at most %d taps", c.ConvKernel, gdnMaxConv)
	}
	if seq > tgMemory || chunk > tgMemory {
		return g, fmt.Errorf("GDN head dim %d × %d heads per group needs %d bytes of threadgroup memory; the device has %d", d, rep, seq, tgMemory)
	}
	dec := seq + 4*(c.Embedding+c.Embedding/16)
	g.fusedGDN = c.Embedding <= maxChunk && dec <= tgMemory
	return g, nil
}

// macros returns the preprocessor macros that specialise the library.
func (g geometry) macros() map[string]string {
	e := g.E
	if !g.fusedGDN {
		e = 128 // gdn_decode is not used; keep its threadgroup arrays small
	}
	return map[string]string{
		"BONSAI_MAXCH":   strconv.Itoa(maxChunk),
		"BONSAI_E":       strconv.Itoa(e),
		"BONSAI_GDN_D":   strconv.Itoa(g.D),
		"BONSAI_GDN_REP": strconv.Itoa(g.Rep),
		"BONSAI_HD":      strconv.Itoa(g.HD),
	}
}

// compile builds the library for g on dev.
func compile(dev gpu.Device, g geometry) (map[string]gpu.Pipeline, error) {
	p, err := dev.Compile(map[string]string{sourceFile: Source()}, g.macros(), kernelNames)
	if err != nil {
		return nil, err
	}
	for _, k := range kernelNames {
		if p[k] == nil {
			return nil, fmt.Errorf("compile: no pipeline for kernel %s", k)
		}
		// The kernels are written for 32-lane SIMD-groups (lane == t in gdn_chunk, the
		// int8 kv_put's one scale per SIMD-group, every lane + 32u*u loop): on any other
		// width they would compute garbage without an error.
		if w := p[k].ThreadExecutionWidth(); w != simdWidth {
			return nil, fmt.Errorf("compile: kernel %s runs SIMD-groups of %d threads (threadExecutionWidth); the kernels need %d, the width of every Apple GPU: this GPU is not supported", k, w, simdWidth)
		}
		if (k == kGemm || k == kGemmT1) && p[k].MaxThreadsPerThreadgroup() < gemmThreads {
			return nil, fmt.Errorf("kernel %s runs at most %d threads per threadgroup; it needs %d", k, p[k].MaxThreadsPerThreadgroup(), gemmThreads)
		}
		if p[k].MaxThreadsPerThreadgroup() < simdWidth {
			return nil, fmt.Errorf("kernel %s runs at most %d threads per threadgroup", k, p[k].MaxThreadsPerThreadgroup())
		}
	}
	return p, nil
}

// threads returns the threadgroup size for p: want, capped by the pipeline's limit, in
// whole SIMD-groups.
func threads(p gpu.Pipeline, want int) int {
	n := min(want, p.MaxThreadsPerThreadgroup())
	n -= n % simdWidth
	return max(n, simdWidth)
}

// args lays out a kernel's argument struct: 32-bit words, little-endian.
type args []uint32

func f32(x float32) uint32 { return math.Float32bits(x) }

func (a args) bytes() []byte {
	b := make([]byte, 4*len(a))
	for i, w := range a {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// Argument flag bits (common.h).
const (
	mvfDelta  = 1 // MVF_DELTA
	mvfXOut   = 2 // MVF_XOUT
	mvfHOut   = 4 // MVF_HOUT
	siteDelta = 1 // SITE_DELTA
	siteH     = 2 // SITE_H
	sitePTQ1  = 4 // SITE_PTQ1
)

// Matrix-vector prologue modes and their kernels.
type mvMode int

const (
	mvPlain mvMode = iota
	mvFWHT
	mvNorm
	mvSwiGLU
)

func (m mvMode) kernel(ptq1 bool) string {
	if ptq1 {
		return [...]string{kMVPlainT1, kMVFWHTT1, kMVNormT1, kMVSwiGLUT1}[m]
	}
	return [...]string{kMVPlain, kMVFWHT, kMVNorm, kMVSwiGLU}[m]
}

// mvChunk returns the activation values a matvec holds per chunk for block size blk:
// whole Hadamard blocks and whole PQ2_0 blocks, at most capacity (0: maxChunk) values.
func mvChunk(blk, capacity int) int {
	if capacity <= 0 || capacity > maxChunk {
		capacity = maxChunk
	}
	unit := max(blk, 128)
	return max(capacity/unit, 1) * unit
}
