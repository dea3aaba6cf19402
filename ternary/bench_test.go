package ternary_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bonsai-go/sdk/ternary"
)

// benchElems is one 5120×256 slab: big enough to leave the L1 and L2 caches
// and show streaming throughput, small enough to run quickly.
const benchElems = 5120 * 256

func benchWeights() []float32 {
	r := rand.New(rand.NewPCG(7, 8))
	w := make([]float32, benchElems)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.01)
	}
	return w
}

// SetBytes counts the packed bytes for Decode, Transcode and Scan (what a
// loader streams from the file) and the float32 input for Quantize.

func BenchmarkDecode(b *testing.B) {
	w := benchWeights()
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			src := make([]byte, f.RowBytes(benchElems))
			if err := f.Quantize(src, w); err != nil {
				b.Fatal(err)
			}
			dst := make([]float32, benchElems)
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if err := f.Decode(dst, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkQuantize(b *testing.B) {
	w := benchWeights()
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			dst := make([]byte, f.RowBytes(benchElems))
			b.SetBytes(4 * benchElems)
			for b.Loop() {
				if err := f.Quantize(dst, w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTranscode(b *testing.B) {
	w := benchWeights()
	pq := make([]byte, ternary.PQ2_0.RowBytes(benchElems))
	tq := make([]byte, ternary.PTQ1_0.RowBytes(benchElems))
	if err := ternary.QuantizePQ2_0(pq, w); err != nil {
		b.Fatal(err)
	}
	b.Run("PTQ1_0-to-PQ2_0", func(b *testing.B) {
		if err := ternary.QuantizePTQ1_0(tq, w); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(tq)))
		for b.Loop() {
			if err := ternary.Transcode(pq, ternary.PQ2_0, tq, ternary.PTQ1_0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PQ2_0-to-PTQ1_0", func(b *testing.B) {
		b.SetBytes(int64(len(pq)))
		for b.Loop() {
			if err := ternary.Transcode(tq, ternary.PTQ1_0, pq, ternary.PQ2_0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkScan(b *testing.B) {
	w := benchWeights()
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			src := make([]byte, f.RowBytes(benchElems))
			if err := f.Quantize(src, w); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := ternary.Scan(f, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDotRef(b *testing.B) {
	const k = 17408
	w := benchWeights()[:k]
	x := benchWeights()[k : 2*k]
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			row := make([]byte, f.RowBytes(k))
			if err := f.Quantize(row, w); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(row)))
			for b.Loop() {
				if _, err := ternary.DotRef(f, row, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
