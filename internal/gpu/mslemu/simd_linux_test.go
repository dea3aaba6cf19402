//go:build linux && (amd64 || arm64)

package mslemu

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/internal/gpu"
)

var nan32 = math.Float32frombits(0xffffffff)

// simdOpsWant computes simd_ops' 20 outputs for lane l of a SIMD group whose lanes
// 0..len(v)-1 exist (all active).
func simdOpsWant(v []float32, l int) []float32 {
	n := len(v)
	get := func(src int) float32 {
		if src >= 0 && src < n {
			return v[src]
		}
		return nan32
	}
	var sum, prefix, excl, quad float32
	mx, mn := float32(math.Inf(-1)), float32(math.Inf(1))
	var or uint32
	all, any := true, false
	var ballot uint32
	var isum int32
	for m, x := range v {
		sum += x
		mx = float32(math.Max(float64(mx), float64(x)))
		mn = float32(math.Min(float64(mn), float64(x)))
		if m <= l {
			prefix += x
		}
		if m < l {
			excl += x
		}
		if m&^3 == l&^3 {
			quad += x
		}
		or |= uint32(x)
		all = all && x >= 1
		any = any || x > 98
		if x > 50 {
			ballot |= 1 << m
		}
		isum += int32(x)
	}
	b := func(c bool) float32 {
		if c {
			return 1
		}
		return 0
	}
	down := l + 1
	var o6 float32
	if down >= 32 {
		o6 = v[l]
	} else {
		o6 = get(down)
	}
	o7 := v[l]
	if l >= 2 {
		o7 = v[l-2]
	}
	return []float32{
		sum, mx, mn, prefix, excl,
		get((l + 3) % 32), o6, o7, get(l ^ 5), get(7),
		v[0], float32(or), b(all), b(any), math.Float32frombits(ballot),
		b(l == 0), quad, get((l &^ 3) | ((l & 3) ^ 1)), -sum, float32(isum),
	}
}

func simdDivergedWant(v []float32, l int) []float32 {
	n := len(v)
	var o0 float32
	if l%3 == 0 {
		for m := 0; m < n; m += 3 {
			o0 += v[m]
		}
	} else {
		o0 = float32(math.Inf(-1))
		for m := 0; m < n; m++ {
			if m%3 != 0 {
				o0 = float32(math.Max(float64(o0), float64(v[m])))
			}
		}
	}
	var o1, o2, o5 float32
	for m := 0; m < n; m++ {
		if l < 10 && m < 10 {
			o1 += v[m]
		}
		o2 += v[m]
		if m < 20 {
			o5 += v[m]
		}
	}
	if l >= 20 {
		o5 = -1
	}
	var o3 float32
	for i := 0; i <= l%4; i++ {
		var s float32
		for m := 0; m < n; m++ {
			if m%4 >= i {
				s += v[m]
			}
		}
		o3 += s
	}
	return []float32{o0, o1, o2, o3, float32(n), o5}
}

func TestSIMDGroupFunctions(t *testing.T) {
	for _, o := range []Order{Forward, Reverse, Random} {
		d := newDevice(t, WithOrder(o), WithSeed(11))
		ps := pipelines(t, d)
		// 64: two full SIMD groups; 40: a full and a partial one (8 lanes); 5: one partial
		for _, tpg := range []int{64, 40, 5, 96} {
			t.Run(fmt.Sprintf("%s/%d", o, tpg), func(t *testing.T) {
				const groups = 3
				n := groups * tpg
				x := make([]float32, n)
				rng := rand.New(rand.NewSource(int64(tpg)))
				for i := range x {
					x[i] = float32(rng.Intn(100))
				}
				bx := bufF32(t, d, x)
				for _, k := range []struct {
					name string
					nout int
					want func([]float32, int) []float32
				}{{"simd_ops", 20, simdOpsWant}, {"simd_diverged", 6, simdDivergedWant}} {
					out := bufBytes(t, d, 4*k.nout*n)
					require.NoError(t, run(t, d, ps[k.name], gpu.Size{groups, 1, 1}, gpu.Size{tpg, 1, 1},
						gpu.Arg{Index: 0, Buf: bx}, gpu.Arg{Index: 1, Buf: out}))
					got := f32s(out)
					for g := 0; g < groups; g++ {
						for base := 0; base < tpg; base += 32 {
							cnt := min(32, tpg-base)
							v := x[g*tpg+base : g*tpg+base+cnt]
							for l := 0; l < cnt; l++ {
								gid := g*tpg + base + l
								want := k.want(v, l)
								have := got[k.nout*gid : k.nout*gid+k.nout]
								for j := range want {
									if !sameBits(want[j], have[j]) {
										t.Fatalf("%s: group %d thread %d (lane %d of %d): output %d = %v, want %v\nall: %v\nwant %v",
											k.name, g, base+l, l, cnt, j, have[j], want[j], have, want)
									}
								}
							}
						}
					}
				}
			})
		}
	}
}
