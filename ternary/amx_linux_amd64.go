//go:build linux && amd64 && !purego

package ternary

import (
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/cpu"
)

// Intel AMX for batched products over both interleaved layouts.
//
// A tile × block of the interleaved layout is already two AMX operands away from a
// matrix product: its 2048 code bytes, read 64 at a time, are 32 rows of 16 dwords, row
// 16c + r holding the codes of columns 4r…4r+3 (of the block's chunk c of 64 columns)
// for rows L, 16+L, 32+L, 48+L of the tile in dword L. Row group j's 2-bit field of
// those bytes, less one (the weight −1, 0, 1, or 2 for code 3, as every kernel reads
// it), is exactly the B operand of TDPBSSD (16 rows of 64 bytes, row r the four K
// values 4r…4r+3 of each of 16 columns), so unpacking is a shift, a mask and a
// subtraction (amxUnpack, once per tile for every group of 16 vectors). The A operand
// is 16 vectors' 64 activations of a chunk; [Q8] keeps a block's 128 values in four
// 32-byte runs (between its pair partner's), which Q8Batch.Quantize copies into one
// run a block (amxActs). A block's C tile then holds each vector's and row's block
// integer Σ (c−1)·Q itself, exact for every code and activation (|·| ≤ 2·128·128).
//
// The block integers are then folded exactly as ilvTilesVNNI folds them (fp16 scale ×
// D in one VMULPS, one FMA into lane b mod 8, the same lane tree), so every vector's
// outputs are bit for bit those of MatVecInterleavedRange on the AVX-512 VNNI family,
// whatever the batch: AMX changes speed, never a result.
//
// Interleaved3's base-3 tiles are the same with a fifth row group in every code byte:
// its weights are trit g − 1 of each byte, the trit (x ≥ 86) + (x ≥ 171) of
// x = uint8(c·3^g) (amx3Unpack), and 80 rows need five C tiles, so amx3Products loads
// one activation chunk at a time.

// amxArgs is the AMX kernels' argument block (amx_linux_amd64.s reads its fields at fixed
// offsets: keep the order). One call runs one tile (64 or 80 rows) for 16 vectors.
type amxArgs struct {
	a   *int8    // vector 0's activations, a block's 128 in one run (amxActs)
	as  int      // bytes from one vector's activations to the next's
	bt  *byte    // the tile's weight tiles (amxUnpack: 8192 bytes a block; amx3Unpack: 10240)
	wf  *float32 // the tile's row scales as float32 (amxUnpack), 80 a block
	nb8 int      // groups of 8 blocks (≥ 1)
	d   *float32 // vector 0's D
	ds  int      // bytes from one vector's D to the next's
	c   *int32   // scratch: the block integers, 16 vectors × the tile's rows × 8·nb8 blocks
	y   *float32 // the 16 vectors' outputs of the tile's rows, one vector after the other
	cfg *byte    // the 64-byte tile configuration (amxConfig)
	// The calls of one tile and group of vectors take its blocks amxSegment at a time
	// (so that the block integers stay in the cache), the eight lanes of every vector
	// and row group kept between them in lanes (16 vectors × rows × 8 floats): flags
	// bit 0 is set on the first call (the lanes start at zero), bit 1 on the last (the
	// lanes' tree is written to y).
	lanes  *float32
	flags  int
	groups int // row groups of 16: 4 (PQ2_0's 64-row tiles) or 5 (PTQ1_0's 80)
}

// amxSegment is how many blocks one amxProducts call takes (a multiple of 8): its block
// integers, 4 KiB a block, stay in the L2 cache.
const amxSegment = 32

// amxProducts and amx3Products store a tile's block integers for 16 vectors (PQ2_0's
// 64-row tile, PTQ1_0's 80-row one); amxFold folds them into the outputs.
//
//go:noescape
func amxProducts(a *amxArgs)

//go:noescape
func amx3Products(a *amxArgs)

//go:noescape
func amxFold(a *amxArgs)

//go:noescape
func amx3Unpack(w *byte, nb int, dst *byte, wf *float32)

//go:noescape
func amxUnpack(w *byte, nb int, dst *byte, wf *float32)

// amxConfig is the tile configuration (palette 1): all eight tiles 16 rows of 64 bytes.
var amxConfig = func() (c [64]byte) {
	c[0] = 1
	for i := range 8 {
		c[16+2*i] = 64 // colsb
		c[48+i] = 16   // rows
	}
	return c
}()

// amxAvailable reports whether this CPU has AMX-INT8 and the kernel lets this process
// use it: Linux enables the 8 KiB of tile data per thread only on request
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), which also refuses when a
// thread's signal stack is too small for the larger signal frame).
var amxAvailable = sync.OnceValue(func() bool {
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXInt8 || !hasAVX512VNNI() {
		return false
	}
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
})

// amxOff turns AMX off (SetAMX; the tests, to compare it with the VNNI kernels).
var amxOff atomic.Bool

// amxUse reports whether the batched interleaved products take AMX for t vectors on
// family fam.
func amxUse(fam ilvFamily, t int) bool {
	return fam == ilvVNNI && t >= amxMinBatch && !amxOff.Load() && amxAvailable()
}

// amxScratch is one call's working memory, kept in amxPool between calls.
type amxScratch struct {
	bt []byte    // a tile's weight tiles
	wf []float32 // its row scales
	c  []int32   // a segment's block integers
	y  [amxVectors * Ilv3Rows]float32
	// lanes holds the accumulator lanes between a group's segments.
	lanes [amxVectors * Ilv3Rows * 8]float32
}

// grow sizes sc for nb blocks of wtb bytes of weight tiles.
func (sc *amxScratch) grow(nb, wtb int) {
	if len(sc.bt) < nb*wtb {
		sc.bt = make([]byte, nb*wtb)
	}
	if len(sc.wf) < nb*Ilv3Rows {
		sc.wf = make([]float32, nb*Ilv3Rows)
		sc.c = make([]int32, min(nb, amxSegment)*amxVectors*Ilv3Rows)
	}
}

var amxPool = sync.Pool{New: func() any { return new(amxScratch) }}

// matMulInterleavedAMX is MatMulInterleavedRange by AMX for t ≥ 1 vectors of x (whose
// AMX copy Quantize wrote), v's blocks at least one group of 8.
func matMulInterleavedAMX(v *Interleaved, x *Q8Batch, t int, y []float32, lo, hi int) {
	amxRange(amxTiling{buf: v.buf, nb: v.nb, rows: IlvRows, blockBytes: ilvBlockBytes}, x, t, y, v.n, lo, hi)
}

// matMulInterleaved3AMX is MatMulInterleaved3Range by AMX, as matMulInterleavedAMX.
func matMulInterleaved3AMX(v *Interleaved3, x *Q8Batch, t int, y []float32, lo, hi int) {
	amxRange(amxTiling{buf: v.buf, nb: v.nb, rows: Ilv3Rows, blockBytes: ilv3BlockBytes, base3: true}, x, t, y, v.n, lo, hi)
}

// amxTiling is the geometry of an interleaved matrix's tiles.
type amxTiling struct {
	buf        []byte
	nb         int  // blocks a row
	rows       int  // a tile's: 64 (2-bit) or 80 (base 3)
	blockBytes int  // a tile × block's
	base3      bool // Interleaved3's layout
}

// amxRange multiplies the tiles of rows lo…hi of a matrix of n rows with geometry g
// by the first t vectors of x.
func amxRange(g amxTiling, x *Q8Batch, t int, y []float32, n, lo, hi int) {
	nb := g.nb
	nb8 := nb / 8
	as := amxActBytes(x.K)
	wtb := 2048 * g.rows / 16 // a block's unpacked weight tiles
	sc := amxPool.Get().(*amxScratch)
	defer amxPool.Put(sc)
	sc.grow(8*nb8, wtb)
	tb := nb * g.blockBytes
	for r0 := lo; r0 < hi; r0 += g.rows {
		tile := g.buf[r0/g.rows*tb : (r0/g.rows+1)*tb]
		rows := min(g.rows, hi-r0)
		if g.base3 {
			amx3Unpack(&tile[0], 8*nb8, &sc.bt[0], &sc.wf[0])
		} else {
			amxUnpack(&tile[0], 8*nb8, &sc.bt[0], &sc.wf[0])
		}
		for s0 := 0; s0 < t; s0 += amxVectors {
			for b0 := 0; b0 < 8*nb8; b0 += amxSegment {
				seg := min(amxSegment, 8*nb8-b0)
				a := amxArgs{a: &x.aq[s0*as+b0*BlockSize], as: as, bt: &sc.bt[b0*wtb], wf: &sc.wf[b0*Ilv3Rows],
					nb8: seg / 8, d: &x.d[s0*nb+b0], ds: 4 * nb, c: &sc.c[0], y: &sc.y[0], cfg: &amxConfig[0],
					lanes: &sc.lanes[0], groups: g.rows / 16}
				if b0 == 0 {
					a.flags |= 1
				}
				if b0+seg == 8*nb8 {
					a.flags |= 2
				}
				if g.base3 {
					amx3Products(&a)
				} else {
					amxProducts(&a)
				}
				amxFold(&a)
			}
			for s := s0; s < min(s0+amxVectors, t); s++ {
				yt := y[s*n+r0 : s*n+r0+rows]
				copy(yt, sc.y[(s-s0)*g.rows:])
				if nb > 8*nb8 {
					if g.base3 {
						ilv3TailAdd(true, tile, nb, nb8, &x.rows[s], yt)
					} else {
						ilvTailAdd(ilvVNNI, tile, nb, nb8, &x.rows[s], yt)
					}
				}
			}
		}
	}
}
