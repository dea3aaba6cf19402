package cpu

import (
	"fmt"

	"github.com/bonsai-go/sdk/ternary"
)

// A Layout says how the backend keeps the model's ternary matrices.
type Layout uint8

const (
	// LayoutAuto interleaves the matrices whose format has native interleaved kernels
	// for decode steps and batches alike on this CPU (PQ2_0 on AVX-512 VNNI, AVX-VNNI,
	// AVX2 and NEON; PTQ1_0 on AVX-512 VNNI and AVX-VNNI), so that the copy replaces the
	// file's rows, and keeps the file's layout elsewhere. The default.
	LayoutAuto Layout = iota
	// LayoutFile reads the matrices where the file has them.
	LayoutFile
	// LayoutInterleaved interleaves every matrix whose format has a native interleaved
	// decode kernel here, even where batches would keep reading the file's rows: then
	// the copy comes on top of them. (Every family with a decode kernel has a batched
	// one today, so it is LayoutAuto.)
	LayoutInterleaved
)

// String returns "auto", "file" or "interleaved".
func (l Layout) String() string {
	switch l {
	case LayoutAuto:
		return "auto"
	case LayoutFile:
		return "file"
	case LayoutInterleaved:
		return "interleaved"
	}
	return "Layout(?)"
}

// ParseLayout returns the layout named s: "auto", "file" or "interleaved".
func ParseLayout(s string) (Layout, error) {
	for _, l := range []Layout{LayoutAuto, LayoutFile, LayoutInterleaved} {
		if s == l.String() {
			return l, nil
		}
	}
	return 0, fmt.Errorf("layout %q: want auto, file or interleaved", s)
}

// Resolve returns the layout l gives the matrices of format f on this CPU, with int8
// activations: LayoutInterleaved or LayoutFile.
func (l Layout) Resolve(f ternary.Format) Layout {
	decode, batch := packNative(f)
	if l == LayoutFile || !decode || (l == LayoutAuto && !batch) {
		return LayoutFile
	}
	return LayoutInterleaved
}

// A packed matrix is a ternary matrix's copy in the row-interleaved layout of its
// format, made at Load: [ternary.Interleaved] (64-row tiles of 2-bit codes) for PQ2_0,
// [ternary.Interleaved3] (80-row tiles of base-3 bytes) for PTQ1_0. Its products give
// the bits the file's rows give.
type packed struct {
	pq2  *ternary.Interleaved
	ptq1 *ternary.Interleaved3
	mem  []byte // the layout's memory, which the kernels stream
}

// packNative reports whether format f's interleaved kernels run natively here: decode
// (one vector) and batch (several; only then may the file's rows go). A variable, for
// the tests of what the layouts do on CPUs of other kernels.
var packNative = nativeKernels

func nativeKernels(f ternary.Format) (decode, batch bool) {
	switch f {
	case ternary.PQ2_0:
		return ternary.InterleavedNative(), ternary.InterleavedBatchNative()
	case ternary.PTQ1_0:
		return ternary.Interleaved3Native(), ternary.Interleaved3BatchNative()
	}
	return false, false
}

// packTile returns the row tile of format f's interleaved layout.
func packTile(f ternary.Format) int {
	if f == ternary.PTQ1_0 {
		return ternary.Ilv3Rows
	}
	return ternary.IlvRows
}

// packSize returns the bytes of the interleaved layout of an n×k matrix in format f.
func packSize(f ternary.Format, k, n int) (int, error) {
	if f == ternary.PTQ1_0 {
		return ternary.Interleaved3Size(k, n)
	}
	return ternary.InterleavedSize(k, n)
}

// newPacked lays out an n×k matrix in format f over mem (packSize bytes, 64-byte aligned).
func newPacked(f ternary.Format, mem []byte, k, n int) (*packed, error) {
	if f == ternary.PTQ1_0 {
		v, err := ternary.NewInterleaved3In(mem, k, n)
		return &packed{ptq1: v, mem: mem}, err
	}
	v, err := ternary.NewInterleavedIn(mem, k, n)
	return &packed{pq2: v, mem: mem}, err
}

func (p *packed) tile() int {
	if p.ptq1 != nil {
		return ternary.Ilv3Rows
	}
	return ternary.IlvRows
}

func (p *packed) fill(w []byte, lo, hi int) {
	if p.ptq1 != nil {
		p.ptq1.Fill(w, lo, hi)
	} else {
		p.pq2.Fill(w, lo, hi)
	}
}

// fillRows is fill from the rows lo ≤ i < hi alone (ternary.Interleaved.FillRows).
func (p *packed) fillRows(rows []byte, lo, hi int) {
	if p.ptq1 != nil {
		p.ptq1.FillRows(rows, lo, hi)
	} else {
		p.pq2.FillRows(rows, lo, hi)
	}
}

// batchNative reports whether batches should read p (see packNative).
func (p *packed) batchNative() bool {
	f := ternary.PQ2_0
	if p.ptq1 != nil {
		f = ternary.PTQ1_0
	}
	_, b := packNative(f)
	return b
}

// product sets y for rows lo ≤ i < hi (tile-aligned) of the first t vectors of x.
func (p *packed) product(x *ternary.Q8Batch, t int, y []float32, lo, hi int) {
	switch {
	case p.ptq1 != nil && t == 1:
		ternary.MatVecInterleaved3Range(p.ptq1, x.Row(0), y, lo, hi)
	case p.ptq1 != nil:
		ternary.MatMulInterleaved3Range(p.ptq1, x, t, y, lo, hi)
	case t == 1:
		ternary.MatVecInterleavedRange(p.pq2, x.Row(0), y, lo, hi)
	default:
		ternary.MatMulInterleavedRange(p.pq2, x, t, y, lo, hi)
	}
}
