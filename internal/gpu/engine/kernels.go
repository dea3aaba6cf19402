package engine

import (
	"embed"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"slices"
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
	kCopy         = "copy_f32"
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
	kEmbed, kSiteNorm, kSiteFWHT, kSiteSwiGLU, kArgmax, kStreamRead, kCopy,
	kMVPlain, kMVFWHT, kMVNorm, kMVSwiGLU, kGemm,
	kGDNDecode, kGDNSeq, kGDNChunk,
	kAttnF16, kAttnF32, kAttnI8, kAttnAppend16, kAttnAppend32, kAttnAppendI8, kAttnMerge,
	// PTQ1_0 twins of the ternary products.
	kGemmT1, kMVPlainT1, kMVFWHTT1, kMVNormT1, kMVSwiGLUT1,
}

// mvKernels are the matrix-vector kernels (matvec.metal). Their threadgroup memory is
// the activation chunk they hold (BONSAI_MAXCH floats and its 1/16 of group sums), so
// they are compiled once per chunk size the model's products use (geometry.mv), each
// variant holding no more than its products need: a core keeps as many threadgroups
// resident as its threadgroup memory allows (occupancy_test.go).
var mvKernels = []string{kMVPlain, kMVFWHT, kMVNorm, kMVSwiGLU, kMVPlainT1, kMVFWHTT1, kMVNormT1, kMVSwiGLUT1}

// KernelNames returns the names of the library's kernels.
func KernelNames() []string { return append([]string(nil), kernelNames...) }

// Sizes fixed in the MSL (kept in step with shaders/common.h and the kernels).
const (
	maxChunk     = 6144 // the largest BONSAI_MAXCH: activation floats a matvec threadgroup holds
	mvRows       = 4    // MV_R: rows per SIMD-group per pass
	siteMaxBlock = 4096 // SITE_MAXBLK
	gemmRows     = 64   // GEMM_NR
	gemmTokens   = 64   // GEMM_NT
	gemmThreads  = 128  // GEMM_THREADS
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

// geometry holds the model sizes the library is specialised for: the macros of the
// main library, the chunk sizes of the matrix-vector kernels' variants, and whether
// gdn_decode fits in threadgroup memory for them.
type geometry struct {
	E, D, Rep, HD int
	fusedGDN      bool
	// mv holds the activation chunk sizes (BONSAI_MAXCH) the matrix-vector kernels are
	// compiled at, ascending: one variant per distinct chunk the products need (mvChunk
	// of each input width), so that each holds no more threadgroup memory than its
	// products use — 21,888 bytes for the 27B model's 5120-wide products rather than
	// the 26,240 of the widest chunk.
	mv []int
}

// newGeometry derives the library's sizes from a configuration, refusing a model whose
// shapes the kernels cannot take. The matrix-vector variants come from withProducts.
func newGeometry(c *qwen35.Config, block int) (geometry, error) {
	g := geometry{E: c.Embedding, D: c.StateSize, Rep: c.HeadRepeat(), HD: c.HeadDim}
	switch {
	case block < 2 || block > siteMaxBlock || block&(block-1) != 0:
		return g, fmt.Errorf("Hadamard block size %d: the kernels take powers of two up to %d", block, siteMaxBlock)
	case c.HeadDim > 512:
		return g, fmt.Errorf("attention head dim %d: the kernels take at most 512", c.HeadDim)
	case c.KVHeads < 1 || c.Heads%c.KVHeads != 0 || c.Heads/c.KVHeads > attnSG*attnQPS(c.HeadDim):
		// A threadgroup of attn_* holds a KV head's query heads in its SIMD-groups' registers.
		return g, fmt.Errorf("%d query heads over %d KV heads: the attention kernels take groups of at most %d query heads per KV head", c.Heads, c.KVHeads, attnSG*attnQPS(c.HeadDim))
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
	// gdn_decode holds one head's q, k and output (its products run in mv_norm): it
	// fits wherever gdn_seq does.
	g.fusedGDN = gdnDecodeTGBytes(d) <= tgMemory
	return g, nil
}

// withProducts returns g with the matrix-vector kernels' variants for products of the
// given input widths, streamed in chunks of at most capacity values (0: maxChunk).
func (g geometry) withProducts(widths []int, blk, capacity int) geometry {
	g.mv = nil
	for _, K := range widths {
		if c := mvChunk(K, blk, capacity); !slices.Contains(g.mv, c) {
			g.mv = append(g.mv, c)
		}
	}
	slices.Sort(g.mv)
	return g
}

// macros returns the preprocessor macros that specialise the library.
func (g geometry) macros() map[string]string {
	return map[string]string{
		"BONSAI_GDN_D":   strconv.Itoa(g.D),
		"BONSAI_GDN_REP": strconv.Itoa(g.Rep),
		"BONSAI_HD":      strconv.Itoa(g.HD),
	}
}

// mvMacros returns the macros of the matrix-vector variant for chunks of c values.
func (g geometry) mvMacros(c int) map[string]string {
	m := g.macros()
	m["BONSAI_MAXCH"] = strconv.Itoa(c)
	return m
}

// mvKey is the name a matrix-vector kernel's variant for chunks of c values has among
// the engine's pipelines.
func mvKey(kernel string, c int) string { return kernel + "@" + strconv.Itoa(c) }

// Threadgroup memory of the kernels whose sizes the engine chooses (bytes), as their
// MSL declares it, each array rounded up to 16 bytes — Metal's granularity, which the
// emulator's lint counts too (occupancy_test.go holds these to it). The GLSL twins
// declare the same arrays.
func tgRound(n int) int { return (n + 15) &^ 15 }

// mvTGBytes is a matrix-vector kernel's at chunk size c: xs4[c/4] (float4), gs[c/16],
// red[MAX_SG].
func mvTGBytes(c int) int { return tgRound(4*c) + tgRound(4*(c/16)) + tgRound(4*32) }

// gdnDecodeTGBytes is gdn_decode's at GDN head dimension d: qk[2d], o[d], ab[2],
// red[MAX_SG], hs[1].
func gdnDecodeTGBytes(d int) int {
	return tgRound(8*d) + tgRound(4*d) + tgRound(8) + tgRound(4*32) + tgRound(4)
}

// librarySources returns the sources of the main library (every file but
// matvec.metal) or, with mv, of the matrix-vector variants (the headers and
// matvec.metal), each joined into one program as Source joins them all.
func librarySources(mv bool) map[string]string {
	src := Sources()
	for n := range src {
		if strings.HasSuffix(n, ".metal") && (n == "matvec.metal") != mv {
			delete(src, n)
		}
	}
	return map[string]string{sourceFile: joinSources(src)}
}

// compile builds the library for g on dev: the main library, then the matrix-vector
// kernels once per chunk size of g.mv (their pipelines under mvKey names).
func compile(dev gpu.Device, g geometry) (map[string]gpu.Pipeline, error) {
	var core []string
	for _, k := range kernelNames {
		if !slices.Contains(mvKernels, k) {
			core = append(core, k)
		}
	}
	p, err := dev.Compile(librarySources(false), g.macros(), core)
	if err != nil {
		return nil, err
	}
	want := slices.Clone(core)
	for _, c := range g.mv {
		q, err := dev.Compile(librarySources(true), g.mvMacros(c), mvKernels)
		if err != nil {
			return nil, fmt.Errorf("the matrix-vector kernels for chunks of %d values: %w", c, err)
		}
		for _, k := range mvKernels {
			p[mvKey(k, c)] = q[k]
			want = append(want, mvKey(k, c))
		}
	}
	for _, k := range want {
		if p[k] == nil {
			return nil, fmt.Errorf("compile: no pipeline for kernel %s", k)
		}
		// The kernels are written for 32-lane SIMD-groups (lane == t in gdn_chunk, the
		// int8 kv_put's one scale per SIMD-group, every lane + 32u*u loop): on any other
		// width they would compute garbage without an error.
		if w := p[k].ThreadExecutionWidth(); w != simdWidth {
			return nil, fmt.Errorf("compile: kernel %s runs SIMD-groups of %d threads (threadExecutionWidth); the kernels need %d, the width of every Apple GPU: this GPU is not supported", p[k].Name(), w, simdWidth)
		}
		if (k == kGemm || k == kGemmT1) && p[k].MaxThreadsPerThreadgroup() < gemmThreads {
			return nil, fmt.Errorf("kernel %s runs at most %d threads per threadgroup; it needs %d", k, p[k].MaxThreadsPerThreadgroup(), gemmThreads)
		}
		if p[k].MaxThreadsPerThreadgroup() < simdWidth {
			return nil, fmt.Errorf("kernel %s runs at most %d threads per threadgroup", p[k].Name(), p[k].MaxThreadsPerThreadgroup())
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
	mvfConv   = 8 // MVF_CONV
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

// mvChunk returns the activation values a matrix-vector product of K inputs holds per
// chunk, for Hadamard block size blk and at most capacity (0: maxChunk) values: K when
// it fits — the input in one chunk, built once per threadgroup — else the fewest chunks
// of whole Hadamard and PQ2_0 blocks the capacity allows, of equal size but the last
// (the 27B model's ffn_down, K = 17408 in blocks of 1024: 6144, 6144 and 5120).
func mvChunk(K, blk, capacity int) int {
	if capacity <= 0 || capacity > maxChunk {
		capacity = maxChunk
	}
	if K <= capacity {
		return K
	}
	unit := max(blk, 128)
	per := max(capacity/unit, 1)   // units a chunk holds at most
	units := (K + unit - 1) / unit // units of the input
	n := (units + per - 1) / per   // chunks
	return (units + n - 1) / n * unit
}

// planWidths returns the input widths of the plan's matrix-vector products: its sites'
// widths (the head's and every layer's), each once.
func planWidths(p *qwen35.Plan) []int {
	var w []int
	add := func(s *qwen35.Site) {
		if len(s.Products) > 0 && !slices.Contains(w, s.Width) {
			w = append(w, s.Width)
		}
	}
	for _, s := range p.Sites() {
		add(s)
	}
	return w
}
