package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu/mslemu"
	"github.com/bonsai-go/sdk/ternary"
)

// The occupancy model of the decode kernels (defect 5 of issue 24): how many of a decode
// kernel's threadgroups one GPU core holds at once — its threadgroup memory and threads
// against the core's — and whether a kernel that streams the weights or the recurrent
// state spreads over enough threadgroups to reach every core.
//
// occupancyN is the fewest threadgroups a core must hold of every decode kernel: 2.
// Why two: a threadgroup of these kernels spends part of its life issuing no weight
// reads — the prologue (staging the activation, the norm's reductions, the FWHT's
// log2(blk) barrier-separated stages) and the epilogue (the SIMD-group sums and writes).
// With one resident threadgroup per core the core's memory pipe idles through each of
// them; a second overlaps them with its own reads. At the 27B sizes the prologue of a
// 5120-wide mv_norm is ~10 barrier-separated passes over 20 KB against ~270 rows × 1.4
// KB = ~370 KB of weights per threadgroup (ffn gate+up: 34,816 rows over 128
// threadgroups), i.e. a few percent of a threadgroup's time alone but all of the core's
// reads during it. Two is also the most the hardware lets these kernels promise: a
// 5120-wide activation (20 KiB) cannot be held by three threadgroups of ~60 KB per core,
// and nothing under 32 KiB a threadgroup (Metal's limit) can be held by fewer than one;
// a kernel over 30 KiB would hold one, and this test fails for it.
const occupancyN = 2

// appleFamily is one generation of Apple GPU's per-core limits, as best known. Apple
// publishes per-threadgroup limits only (Metal Feature Set Tables: 32 KiB of threadgroup
// memory and 1024 threads a threadgroup, Apple7–Apple9); the per-core figures are
// measured ones:
//   - threadgroup memory: "Shared Memory ~60 KB" per core, Apple 7 and 8 (M1, M2)
//     (github.com/philipturner/metal-benchmarks, "On-Chip Memory"), taken as 60 KiB;
//   - threads: "Max Threads 384–3072" per core (the same table): 3072 at low register
//     use, as few as 384 at the most registers a thread can have. Register use is not
//     known without Apple's compiler, so the model takes the ceiling, and a kernel's
//     register pressure is left to what a Mac shows (Xcode's occupancy counters);
//   - M3 and M4 (Apple9, as the feature set tables group them) allocate registers,
//     threadgroup memory and cache from one on-chip memory at run time (Apple's
//     "Dynamic Caching", WWDC23 "Explore GPU advancements in M3 and A17 Pro"), of a
//     size Apple does not publish: the model takes the Apple 7/8 figures as a floor.
//
// cores is the most GPU cores of the family's chips below an Ultra (base, Pro, Max).
type appleFamily struct {
	name     string
	cores    int
	tgMemory int
	threads  int
}

var appleFamilies = []appleFamily{
	{"M1 (Apple7; 7–8, Pro 14–16, Max 24–32 cores)", 32, 60 << 10, 3072},
	{"M2 (Apple8; 8–10, Pro 16–19, Max 30–38 cores)", 38, 60 << 10, 3072},
	{"M3 (Apple9; 8–10, Pro 14–18, Max 30–40 cores)", 40, 60 << 10, 3072},
	{"M4 (Apple9; 8–10, Pro 16–20, Max 32–40 cores)", 40, 60 << 10, 3072},
}

// gridMin is the fewest threadgroups a decode kernel that streams the weights or the
// recurrent state may run: the most cores of the 20–40-core GPUs the issue names (M3 Max
// and M4 Max, 40), so that none of them sits idle through the dispatch. (An Ultra's 64–80
// cores are beyond it: there the streamed ffn_down's 40 threadgroups leave half idle.)
const gridMin = 40

// vkSharedLimit is the Vulkan kernels' design rule: at most 32 KiB of shared memory a
// workgroup (common.glsl), their sg_* scratch included.
const vkSharedLimit = 32 << 10

// vkMaxThreads is the largest Vulkan workgroup (maxThreads in bonsai/vulkan): the engine
// dispatches min(its want, 256) there.
const vkMaxThreads = 256

// kernelFootprint is what a dispatch of a decode kernel holds per threadgroup.
type kernelFootprint struct {
	name     string
	tgBytes  int // threadgroup memory, as the MSL declares it (16-byte rounded arrays)
	vkShared int // shared memory of the GLSL twin at the Vulkan workgroup size
	threads  int // threads per threadgroup (Metal)
	grid     int // threadgroups
	streams  bool
	// For a matrix-vector kernel: its input width, the chunk it holds, and the chunk
	// its variant was compiled for (BONSAI_MAXCH).
	K, chunk, maxch int
}

// footprint models a recorded dispatch. ok is false for a kernel the model does not know.
func footprint(d countedDispatch) (kernelFootprint, bool, error) {
	if d.p == nil {
		return kernelFootprint{}, false, errors.New("a dispatch of a pipeline of another device")
	}
	f := kernelFootprint{name: d.p.name, threads: d.threads[0], grid: d.grid[0] * d.grid[1] * d.grid[2]}
	nt := min(f.threads, vkMaxThreads)
	// The GLSL twins' common scratch: sg_scratch_f and sg_scratch_u (4 bytes a thread
	// each) and tg_red (MAX_SG floats), counted whether or not a module keeps them.
	scratch := 8*nt + 4*32
	macro := func(k string) (int, error) {
		v, err := strconv.Atoi(d.p.macros[k])
		if err != nil {
			return 0, fmt.Errorf("%s: macro %s=%q", f.name, k, d.p.macros[k])
		}
		return v, nil
	}
	word := func(i int) int { return int(binary.LittleEndian.Uint32(d.args[4*i:])) }
	switch {
	case strings.HasPrefix(f.name, "mv_"):
		c, err := macro("BONSAI_MAXCH")
		if err != nil {
			return f, false, err
		}
		f.maxch, f.K, f.chunk, f.streams = c, word(0), word(7), true
		f.tgBytes = mvTGBytes(c)
		f.vkShared = 4*c + 4*(c/16) + scratch // xs, gs
	case f.name == kGDNDecode:
		dd, err := macro("BONSAI_GDN_D")
		if err != nil {
			return f, false, err
		}
		f.streams = true
		f.tgBytes = gdnDecodeTGBytes(dd)
		f.vkShared = 4*(3*dd+3) + scratch // qk, o, ab, hs
	case f.name == kEmbed: // site.metal: xs[SITE_MAXBLK]
		f.tgBytes = 4 * siteMaxBlock
		f.vkShared = 4*siteMaxBlock + scratch
	case f.name == kArgmax: // bv[MAX_SG], bi[MAX_SG]
		f.tgBytes = 2 * 4 * 32
		f.vkShared = 2*4*32 + scratch
	default:
		return f, false, nil
	}
	return f, true, nil
}

// occupancyProblems returns what breaks the rules for one dispatch's footprint: fewer
// than occupancyN threadgroups a core on a family, a weight- or state-streaming kernel
// on fewer than gridMin threadgroups, a matrix-vector variant holding more than its
// product's chunk (or a chunk other than mvChunk's at the engine's block), and a GLSL
// twin over 32 KiB.
func occupancyProblems(f kernelFootprint, blk int) []string {
	var out []string
	for _, fam := range appleFamilies {
		n := min(fam.tgMemory/max(f.tgBytes, 1), fam.threads/max(f.threads, 1))
		if n < occupancyN {
			out = append(out, fmt.Sprintf("%s: %d bytes × %d threads a threadgroup: %d a core on %s (%d bytes, %d threads), want ≥ %d",
				f.name, f.tgBytes, f.threads, n, fam.name, fam.tgMemory, fam.threads, occupancyN))
		}
	}
	if f.streams && f.grid < gridMin {
		out = append(out, fmt.Sprintf("%s: %d threadgroups, want ≥ %d (a core each of a 40-core GPU)", f.name, f.grid, gridMin))
	}
	if f.maxch > 0 {
		if want := mvChunk(f.K, blk, 0); f.chunk != want || f.maxch != f.chunk {
			out = append(out, fmt.Sprintf("%s: K %d held in chunks of %d by a variant for %d (%d bytes), want chunks of %d by a variant for %d (%d bytes)",
				f.name, f.K, f.chunk, f.maxch, f.tgBytes, want, want, mvTGBytes(want)))
		}
	}
	if f.vkShared > vkSharedLimit {
		out = append(out, fmt.Sprintf("%s: %d bytes of shared memory at %d invocations on Vulkan, over %d", f.name, f.vkShared, min(f.threads, vkMaxThreads), vkSharedLimit))
	}
	return out
}

// TestOccupancy27B records a greedy decode step of the 27B configuration (PQ2_0 and
// PTQ1_0) on the counting device and holds every dispatch to the model: each decode
// kernel (the matrix-vector variants, gdn_decode, embed, argmax) at least occupancyN
// threadgroups a core on M1–M4, the weight- and state-streaming ones on ≥ gridMin
// threadgroups, every matrix-vector variant holding exactly its product's chunk, every
// GLSL twin within 32 KiB. The attention kernels are the position split's (issue 24's
// attention item) and are listed, not modelled. It also shows the rules catch what
// defect 5 described.
func TestOccupancy27B(t *testing.T) {
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		t.Run(format.String(), func(t *testing.T) {
			e, _, done := loadCounting(t, sparse27BAs(t, format), 2<<30)
			defer done()
			cb := decodeDispatches(t, e, outArgmax)
			seen := map[string]bool{}
			var skipped []string
			for _, d := range cb.log {
				f, ok, err := footprint(d)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if !strings.HasPrefix(d.p.name, "attn") {
						t.Errorf("no occupancy model for decode kernel %s: add its threadgroup memory to footprint", d.p.name)
					} else if !seen[d.p.name] {
						skipped = append(skipped, d.p.name)
					}
					seen[d.p.name] = true
					continue
				}
				for _, p := range occupancyProblems(f, e.blk) {
					if !seen[p] { // once per kernel and width, not per layer
						t.Error(p)
					}
					seen[p] = true
				}
				key := fmt.Sprintf("%s K %d", f.name, f.K)
				if seen[key] {
					continue
				}
				seen[key] = true
				if f.maxch > 0 {
					t.Logf("%-13s K %5d chunk %4d: %5d bytes, %4d threads, %3d threadgroups; %d a core on M1–M4; Vulkan %5d bytes",
						f.name, f.K, f.chunk, f.tgBytes, f.threads, f.grid, perCore(f), f.vkShared)
				} else {
					t.Logf("%-13s %22s %5d bytes, %4d threads, %3d threadgroups; %d a core on M1–M4; Vulkan %5d bytes",
						f.name, "", f.tgBytes, f.threads, f.grid, perCore(f), f.vkShared)
				}
			}
			t.Logf("not modelled here (the attention split's): %v", skipped)
		})
	}

	// The rules catch what defect 5 described, and a kernel over 30 KiB.
	for _, c := range []struct {
		what string
		f    kernelFootprint
		want string
	}{
		{"the fused gdn_decode: one threadgroup per q/k head group", kernelFootprint{name: kGDNDecode, tgBytes: 26020, threads: 1024, grid: 16, streams: true}, "16 threadgroups, want ≥ 40"},
		{"mv_norm at K 5120 in the fixed 6144-float variant", kernelFootprint{name: kMVNorm, tgBytes: mvTGBytes(6144), threads: 256, grid: 128, streams: true, K: 5120, chunk: 5120, maxch: 6144}, "by a variant for 6144 (26240 bytes)"},
		{"a variant of 7680 floats", kernelFootprint{name: kMVNorm, tgBytes: mvTGBytes(7680), threads: 256, grid: 128, streams: true, K: 7680, chunk: 7680, maxch: 7680}, "1 a core on M1"},
		{"a GLSL twin over 32 KiB", kernelFootprint{name: kMVNorm, tgBytes: mvTGBytes(6144), vkShared: vkSharedLimit + 4, threads: 256, grid: 128}, "shared memory at 256 invocations on Vulkan"},
	} {
		got := occupancyProblems(c.f, 1024)
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: the rules report %q, want one saying %q", c.what, got, c.want)
		}
	}
}

// perCore is the fewest of f's threadgroups a core holds on any of the families.
func perCore(f kernelFootprint) int {
	n := -1
	for _, fam := range appleFamilies {
		if m := min(fam.tgMemory/max(f.tgBytes, 1), fam.threads/max(f.threads, 1)); n < 0 || m < n {
			n = m
		}
	}
	return n
}

// TestOccupancyModelMatchesCompiler holds the model's threadgroup byte counts
// (mvTGBytes, gdnDecodeTGBytes) to what the compiler counts: the emulator's lint sums a
// kernel's static threadgroup arrays as Metal does (each rounded up to 16 bytes) and
// refuses a kernel over 32 KiB, so at the sizes where the model says a kernel reaches
// exactly 32 KiB it must compile, and one size step above it must be refused, by name.
func TestOccupancyModelMatchesCompiler(t *testing.T) {
	compile := func(src map[string]string, macros map[string]string) error {
		err := mslemu.CompileCheck(src, macros)
		skipNoClang(t, err)
		return err
	}
	over := func(err error, kernel string) bool {
		return errors.Is(err, mslemu.ErrCompile) && strings.Contains(err.Error(), "kernel "+kernel+": static threadgroup memory over")
	}
	// The matrix-vector kernels: 7680 floats is 32,768 bytes by the model, 7684 is 32,784.
	mv := librarySources(true)
	for _, c := range []struct{ maxch, bytes int }{{7680, 32768}, {7684, 32784}} {
		if got := mvTGBytes(c.maxch); got != c.bytes {
			t.Fatalf("mvTGBytes(%d) = %d, want %d", c.maxch, got, c.bytes)
		}
		err := compile(mv, geom27B.mvMacros(c.maxch))
		switch fits := c.bytes <= 32768; {
		case fits && err != nil:
			t.Errorf("BONSAI_MAXCH %d (%d bytes by the model) refused: %v", c.maxch, c.bytes, err)
		case !fits && !over(err, kMVNorm):
			t.Errorf("BONSAI_MAXCH %d (%d bytes by the model): got %v, want mv_norm refused for its threadgroup memory", c.maxch, c.bytes, err)
		}
	}
	// gdn_decode alone (the other GDN kernels hold far more at these head dimensions):
	// d 2716 is 32,752 bytes by the model, d 2720 is 32,800 — no d reaches 32,768
	// exactly, so here the model is held to the compiler within one 16-byte step.
	src := Sources()
	g := src["gdn.metal"]
	i := strings.Index(g, "kernel void gdn_decode(")
	j := strings.Index(g[i:], "\n}\n")
	if i < 0 || j < 0 {
		t.Fatal("gdn.metal: no gdn_decode kernel")
	}
	one := map[string]string{"gdn.metal": g[:strings.Index(g, "kernel void")] + g[i:i+j+3]}
	for h, ht := range src {
		if strings.HasSuffix(h, ".h") {
			one[h] = ht
		}
	}
	for _, c := range []struct{ d, bytes int }{{2716, 32752}, {2720, 32800}} {
		if got := gdnDecodeTGBytes(c.d); got != c.bytes {
			t.Fatalf("gdnDecodeTGBytes(%d) = %d, want %d", c.d, got, c.bytes)
		}
		m := geom27B.macros()
		m["BONSAI_GDN_D"], m["BONSAI_GDN_REP"] = strconv.Itoa(c.d), "1"
		err := compile(one, m)
		switch fits := c.bytes <= 32768; {
		case fits && err != nil:
			t.Errorf("gdn_decode at d %d (%d bytes by the model) refused: %v", c.d, c.bytes, err)
		case !fits && !over(err, kGDNDecode):
			t.Errorf("gdn_decode at d %d (%d bytes by the model): got %v, want it refused for its threadgroup memory", c.d, c.bytes, err)
		}
	}
}
