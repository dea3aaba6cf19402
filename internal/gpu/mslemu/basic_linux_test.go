//go:build linux && (amd64 || arm64)

package mslemu

import (
	"encoding/binary"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/internal/gpu"
)

var (
	_ gpu.Device     = (*device)(nil)
	_ gpu.WorkingSet = (*device)(nil)
)

// The working set a test sets is what the device reports (none by default).
func TestWorkingSetOption(t *testing.T) {
	require.Equal(t, int64(0), newDevice(t).(gpu.WorkingSet).RecommendedWorkingSet())
	require.Equal(t, int64(5<<30), newDevice(t, WithWorkingSet(5<<30)).(gpu.WorkingSet).RecommendedWorkingSet())
}

func TestVectorAdd(t *testing.T) {
	for _, o := range []Order{Forward, Reverse, Random} {
		t.Run(o.String(), func(t *testing.T) {
			d := newDevice(t, WithOrder(o))
			ps := pipelines(t, d)
			const n = 4096
			a, b := make([]float32, n), make([]float32, n)
			for i := range a {
				a[i], b[i] = float32(i), float32(2*i)+0.5
			}
			ba, bb, bc := bufF32(t, d, a), bufF32(t, d, b), bufBytes(t, d, 4*n)
			require.NoError(t, run(t, d, ps["vadd"], gpu.Size{n / 256, 1, 1}, gpu.Size{256, 1, 1},
				gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: bb}, gpu.Arg{Index: 2, Buf: bc}))
			c := f32s(bc)
			for i := range c {
				require.Equal(t, a[i]+b[i], c[i], "element %d", i)
			}
		})
	}
}

func TestPipelineProperties(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	assert.Equal(t, 1024, ps["vadd"].MaxThreadsPerThreadgroup())
	assert.Equal(t, 32, ps["vadd"].ThreadExecutionWidth())
	assert.Equal(t, "vadd", ps["vadd"].Name())
	assert.Equal(t, 256, ps["limited"].MaxThreadsPerThreadgroup())
	assert.Contains(t, d.Name(), "mslemu")
	err := run(t, d, ps["limited"], gpu.Size{1, 1, 1}, gpu.Size{512, 1, 1}, gpu.Arg{Index: 0, Buf: bufBytes(t, d, 4*512)})
	assert.ErrorIs(t, err, ErrBadDispatch)
	contains(t, err, "limited", "512 threads")
}

func TestThreadgroupReduction(t *testing.T) {
	for _, o := range []Order{Forward, Reverse, Random} {
		t.Run(o.String(), func(t *testing.T) {
			d := newDevice(t, WithOrder(o), WithSeed(7))
			ps := pipelines(t, d)
			const groups = 8
			a := make([]float32, 256*groups)
			for i := range a {
				a[i] = float32(i % 97)
			}
			ba, out := bufF32(t, d, a), bufBytes(t, d, 4*groups)
			require.NoError(t, run(t, d, ps["reduce_tg"], gpu.Size{groups, 1, 1}, gpu.Size{256, 1, 1},
				gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: out}))
			for g := 0; g < groups; g++ {
				var want float32
				for i := 0; i < 256; i++ {
					want += a[256*g+i]
				}
				assert.Equal(t, want, f32s(out)[g], "group %d", g)
			}
		})
	}
}

func TestDynamicThreadgroupMemory(t *testing.T) {
	d := newDevice(t, WithOrder(Reverse))
	ps := pipelines(t, d)
	for _, n := range []int{32, 64, 128, 1024} {
		const groups = 3
		a := make([]float32, n*groups)
		for i := range a {
			a[i] = float32(i%13) - 6
		}
		ba, out := bufF32(t, d, a), bufBytes(t, d, 4*groups)
		require.NoError(t, run(t, d, ps["reduce_dyn"], gpu.Size{groups, 1, 1}, gpu.Size{n, 1, 1},
			gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: out}, gpu.Arg{Index: 0, Threadgroup: 4 * n}))
		for g := 0; g < groups; g++ {
			var want float32
			for i := 0; i < n; i++ {
				want += a[n*g+i]
			}
			assert.Equal(t, want, f32s(out)[g], "n %d group %d", n, g)
		}
	}
	// a missing threadgroup length, a bad one, too much
	ba, out := bufF32(t, d, make([]float32, 64)), bufBytes(t, d, 4)
	err := run(t, d, ps["reduce_dyn"], gpu.Size{1, 1, 1}, gpu.Size{64, 1, 1}, gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: out})
	assert.ErrorIs(t, err, ErrBadDispatch)
	contains(t, err, "reduce_dyn", "threadgroup(0)")
	err = run(t, d, ps["reduce_dyn"], gpu.Size{1, 1, 1}, gpu.Size{64, 1, 1}, gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: out}, gpu.Arg{Index: 0, Threadgroup: 100})
	contains(t, err, "multiple of 16")
	err = run(t, d, ps["reduce_dyn"], gpu.Size{1, 1, 1}, gpu.Size{64, 1, 1}, gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: out}, gpu.Arg{Index: 0, Threadgroup: 65536})
	contains(t, err, "32768")
}

// A kernel that reads a neighbour's threadgroup slot without a barrier gives different
// results in forward and reverse order; the fixed kernel does not.
func TestMissingBarrierCaughtByOrders(t *testing.T) {
	results := map[string]map[Order][]float32{}
	for _, k := range []string{"race", "race_fixed"} {
		results[k] = map[Order][]float32{}
		for _, o := range []Order{Forward, Reverse, Random} {
			d := newDevice(t, WithOrder(o))
			ps := pipelines(t, d)
			a := make([]float32, 128)
			for i := range a {
				a[i] = float32(i)
			}
			ba, out := bufF32(t, d, a), bufBytes(t, d, 4*128)
			require.NoError(t, run(t, d, ps[k], gpu.Size{2, 1, 1}, gpu.Size{64, 1, 1}, gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: out}))
			results[k][o] = append([]float32(nil), f32s(out)...)
		}
	}
	differ := func(a, b []float32) bool {
		for i := range a {
			if !sameBits(a[i], b[i]) {
				return true
			}
		}
		return false
	}
	assert.True(t, differ(results["race"][Forward], results["race"][Reverse]), "forward and reverse agree on the racy kernel")
	assert.False(t, differ(results["race_fixed"][Forward], results["race_fixed"][Reverse]))
	assert.False(t, differ(results["race_fixed"][Forward], results["race_fixed"][Random]))
	for i, v := range results["race_fixed"][Forward] {
		g, tid := i/64, i%64
		assert.Equal(t, float32(64*g+(tid+1)%64), v)
	}
	// forward: each thread runs to its end before the next starts, so it reads the
	// poisoned (0xFF: NaN) slot of a neighbour that has not run yet
	assert.True(t, math.IsNaN(float64(results["race"][Forward][0])))
}

func TestDeadlock(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	out := bufBytes(t, d, 4*64)
	err := run(t, d, ps["deadlock_return"], gpu.Size{2, 1, 1}, gpu.Size{64, 1, 1}, gpu.Arg{Index: 0, Buf: out})
	require.ErrorIs(t, err, ErrDeadlock)
	contains(t, err, "deadlock_return", "basic.metal:", "16 of 64", "threads 16..63 returned", "threadgroup (0,0,0)")
	t.Log(err)
	err = run(t, d, ps["deadlock_split"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: out})
	require.ErrorIs(t, err, ErrDeadlock)
	contains(t, err, "deadlock_split", "different threadgroup_barrier", "threads 0..15", "threads 16..31")
	t.Log(err)
	// lenient barriers let returned threads count as arrived
	dl := newDevice(t, WithLenientBarriers())
	psl := pipelines(t, dl)
	outl := bufBytes(t, dl, 4*64)
	require.NoError(t, run(t, dl, psl["deadlock_return"], gpu.Size{1, 1, 1}, gpu.Size{64, 1, 1}, gpu.Arg{Index: 0, Buf: outl}))
	assert.Equal(t, float32(1), f32s(outl)[15])
}

// Params is the Go twin of struct Params in testdata/common.h.
type Params struct {
	N      uint32
	Scale  float32
	Offset [2]float32
}

func (p Params) bytes() []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint32(b[0:], p.N)
	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(p.Scale))
	binary.LittleEndian.PutUint32(b[8:], math.Float32bits(p.Offset[0]))
	binary.LittleEndian.PutUint32(b[12:], math.Float32bits(p.Offset[1]))
	return b
}

func TestArgumentStructAndOffsets(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	const n = 512
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i) * 0.25
	}
	bx := bufF32(t, d, x)
	by := bufBytes(t, d, 4*n)
	p := Params{N: 300, Scale: 2, Offset: [2]float32{1, 0.5}}
	// x bound at an offset of 64 elements
	require.NoError(t, run(t, d, ps["apply_params"], gpu.Size{2, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: bx, Offset: 256}, gpu.Arg{Index: 1, Buf: by}, gpu.Arg{Index: 2, Bytes: p.bytes()}))
	y := f32s(by)
	for i := 0; i < n; i++ {
		want := float32(0)
		if i < int(p.N) {
			want = x[i+64]*p.Scale + p.Offset[0] - p.Offset[1]
		}
		require.Equal(t, want, y[i], "element %d", i)
	}
	// the struct in a buffer at an offset works too
	pb := bufBytes(t, d, 64)
	copy(pb.Contents()[32:], p.bytes())
	require.NoError(t, run(t, d, ps["apply_params"], gpu.Size{1, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: bx}, gpu.Arg{Index: 1, Buf: by}, gpu.Arg{Index: 2, Buf: pb, Offset: 32}))
	assert.Equal(t, x[5]*2+0.5, f32s(by)[5])

	// binding errors name the kernel and the index
	err := run(t, d, ps["apply_params"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: bx}, gpu.Arg{Index: 1, Buf: by})
	assert.ErrorIs(t, err, ErrBadDispatch)
	contains(t, err, "apply_params", "buffer(2)", "not bound")
	err = run(t, d, ps["apply_params"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: bx}, gpu.Arg{Index: 1, Buf: by}, gpu.Arg{Index: 2, Bytes: p.bytes()[:8]})
	contains(t, err, "apply_params", "buffer(2)", "8 inline bytes", "needs 16")
	err = run(t, d, ps["apply_params"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: bx, Offset: 4 * n}, gpu.Arg{Index: 1, Buf: by}, gpu.Arg{Index: 2, Bytes: p.bytes()})
	contains(t, err, "apply_params", "buffer(0)", "offset 2048 outside")
	err = run(t, d, ps["apply_params"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: bx, Offset: 2}, gpu.Arg{Index: 1, Buf: by}, gpu.Arg{Index: 2, Bytes: p.bytes()})
	contains(t, err, "buffer(0)", "alignment")
	err = run(t, d, ps["apply_params"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: bx}, gpu.Arg{Index: 1, Buf: by}, gpu.Arg{Index: 2, Buf: pb, Offset: 56})
	contains(t, err, "buffer(2)", "8 bytes from offset 56", "needs 16")
	err = run(t, d, ps["apply_params"], gpu.Size{1, 1, 1}, gpu.Size{1025, 1, 1}, gpu.Arg{Index: 0, Buf: bx}, gpu.Arg{Index: 1, Buf: by}, gpu.Arg{Index: 2, Bytes: p.bytes()})
	contains(t, err, "1025 threads")
	err = run(t, d, ps["apply_params"], gpu.Size{0, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: bx}, gpu.Arg{Index: 1, Buf: by}, gpu.Arg{Index: 2, Bytes: p.bytes()})
	contains(t, err, "grid")
}

func TestAtomics(t *testing.T) {
	for _, workers := range []int{1, 2} {
		d := newDevice(t, WithWorkers(workers), WithOrder(Random))
		ps := pipelines(t, d)
		const groups, n = 16, 128
		vals := make([]byte, 4*groups*n)
		rng := rand.New(rand.NewSource(3))
		want := int32(math.MinInt32)
		for i := 0; i < groups*n; i++ {
			v := int32(rng.Intn(2000000) - 1000000)
			binary.LittleEndian.PutUint32(vals[4*i:], uint32(v))
			if v > want {
				want = v
			}
		}
		bv := bufBytes(t, d, len(vals))
		copy(bv.Contents(), vals)
		counter, imax, per := bufBytes(t, d, 4), bufBytes(t, d, 4), bufBytes(t, d, 4*groups)
		copy(imax.Contents(), u32bytes(uint32(0x80000000)))
		require.NoError(t, run(t, d, ps["atomics"], gpu.Size{groups, 1, 1}, gpu.Size{n, 1, 1},
			gpu.Arg{Index: 0, Buf: counter}, gpu.Arg{Index: 1, Buf: imax}, gpu.Arg{Index: 2, Buf: per}, gpu.Arg{Index: 3, Buf: bv}))
		assert.Equal(t, uint32(groups*n), u32s(counter)[0])
		assert.Equal(t, want, int32(u32s(imax)[0]))
		for g := 0; g < groups; g++ {
			assert.Equal(t, uint32(n*(n-1)/2), u32s(per)[g])
		}
	}
}

func TestBuiltins3D(t *testing.T) {
	d := newDevice(t, WithOrder(Reverse))
	ps := pipelines(t, d)
	grid, tpg := gpu.Size{3, 2, 2}, gpu.Size{5, 4, 3} // 60 threads: a full and a partial SIMD group
	total := grid[0] * grid[1] * grid[2] * tpg[0] * tpg[1] * tpg[2]
	out := bufBytes(t, d, 4*12*total)
	require.NoError(t, run(t, d, ps["builtins"], grid, tpg, gpu.Arg{Index: 0, Buf: out}))
	o := u32s(out)
	gx, gy := grid[0]*tpg[0], grid[1]*tpg[1]
	for z := 0; z < grid[2]*tpg[2]; z++ {
		for y := 0; y < gy; y++ {
			for x := 0; x < gx; x++ {
				r := o[12*((z*gy+y)*gx+x):]
				tx, ty, tz := x%tpg[0], y%tpg[1], z%tpg[2]
				idx := (tz*tpg[1]+ty)*tpg[0] + tx
				want := []uint32{uint32(x / tpg[0]), uint32(y / tpg[1]), uint32(z / tpg[2]), uint32(tx), uint32(ty), uint32(tz),
					uint32(idx), uint32(idx % 32), uint32(idx / 32), 2, 32, uint32(tpg[0]*1000000 + grid[1]*1000 + tpg[2])}
				require.Equal(t, want, r[:12], "thread (%d,%d,%d)", x, y, z)
			}
		}
	}
}

func TestTemplateKernels(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	a := []float32{1, 2, 3, 4}
	ba, bb := bufF32(t, d, a), bufBytes(t, d, 16)
	require.NoError(t, run(t, d, ps["scale_f32"], gpu.Size{1, 1, 1}, gpu.Size{4, 1, 1}, gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: bb}))
	assert.Equal(t, []float32{3, 6, 9, 12}, f32s(bb))
	h := bufBytes(t, d, 8)
	binary.LittleEndian.PutUint16(h.Contents()[0:], 0x3c00) // 1
	binary.LittleEndian.PutUint16(h.Contents()[2:], 0x4000) // 2
	binary.LittleEndian.PutUint16(h.Contents()[4:], 0x3800) // 0.5
	binary.LittleEndian.PutUint16(h.Contents()[6:], 0xbc00) // -1
	hb := bufBytes(t, d, 8)
	require.NoError(t, run(t, d, ps["scale_f16"], gpu.Size{1, 1, 1}, gpu.Size{4, 1, 1}, gpu.Arg{Index: 0, Buf: h}, gpu.Arg{Index: 1, Buf: hb}))
	assert.Equal(t, []uint16{0x4200, 0x4600, 0x3e00, 0xc200}, u16s(hb))
	// instantiations that take their parameters from the template's definition
	require.NoError(t, run(t, d, ps["add_one_f32"], gpu.Size{1, 1, 1}, gpu.Size{4, 1, 1}, gpu.Arg{Index: 0, Buf: ba}, gpu.Arg{Index: 1, Buf: bb}))
	assert.Equal(t, []float32{2, 3, 4, 5}, f32s(bb))
	ib := bufBytes(t, d, 16)
	require.NoError(t, run(t, d, ps["add_one_i32"], gpu.Size{1, 1, 1}, gpu.Size{4, 1, 1}, gpu.Arg{Index: 0, Buf: ib}, gpu.Arg{Index: 1, Buf: ib}))
	assert.Equal(t, []uint32{1, 1, 1, 1}, u32s(ib))
	// kernels in namespaces
	require.NoError(t, run(t, d, ps["ns_fill"], gpu.Size{1, 1, 1}, gpu.Size{4, 1, 1}, gpu.Arg{Index: 0, Buf: bb}))
	assert.Equal(t, []float32{7, 7, 7, 7}, f32s(bb))
	require.NoError(t, run(t, d, ps["anon_fill"], gpu.Size{1, 1, 1}, gpu.Size{4, 1, 1}, gpu.Arg{Index: 0, Buf: bb}))
	assert.Equal(t, []float32{8, 8, 8, 8}, f32s(bb))
}

func TestFaults(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	a, out := bufF32(t, d, make([]float32, 256)), bufBytes(t, d, 4*256)
	err := run(t, d, ps["oob_read"], gpu.Size{1, 1, 1}, gpu.Size{256, 1, 1}, gpu.Arg{Index: 0, Buf: a}, gpu.Arg{Index: 1, Buf: out})
	require.ErrorIs(t, err, ErrFault)
	contains(t, err, "oob_read", "past the end of buffer(0)", "thread (")
	t.Log(err)

	ints := bufBytes(t, d, 4*32)
	for i := 0; i < 32; i++ {
		binary.LittleEndian.PutUint32(ints.Contents()[4*i:], uint32(i+1))
	}
	binary.LittleEndian.PutUint32(ints.Contents()[4*17:], 0)
	err = run(t, d, ps["int_div"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: ints}, gpu.Arg{Index: 1, Buf: out})
	if runtime.GOARCH == "amd64" {
		// x86 traps on integer division by zero (a GPU and arm64 give some value)
		require.ErrorIs(t, err, ErrFault)
		contains(t, err, "int_div", "SIGFPE", "thread (17,0,0)")
	} else {
		require.NoError(t, err)
	}

	err = run(t, d, ps["stack_hog"], gpu.Size{1, 1, 1}, gpu.Size{4, 1, 1}, gpu.Arg{Index: 0, Buf: out})
	require.ErrorIs(t, err, ErrFault)
	contains(t, err, "stack_hog", "stack overflow")

	// the emulator keeps working after faults, and a Go nil dereference still panics
	// normally (the signal handler passes faults outside kernels on to Go's)
	require.NoError(t, run(t, d, ps["vadd"], gpu.Size{1, 1, 1}, gpu.Size{256, 1, 1}, gpu.Arg{Index: 0, Buf: a}, gpu.Arg{Index: 1, Buf: a}, gpu.Arg{Index: 2, Buf: out}))
	assert.Panics(t, func() {
		var p *Params
		_ = p.N
	})
	// the dispatches after a failing one do not run
	cb, _ := d.NewCommandBuffer()
	cb.Dispatch(ps["int_div"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: ints}, gpu.Arg{Index: 1, Buf: out})
	cb.Dispatch(ps["vadd"], gpu.Size{1, 1, 1}, gpu.Size{256, 1, 1}, gpu.Arg{Index: 0, Buf: a}, gpu.Arg{Index: 1, Buf: a}, gpu.Arg{Index: 2, Buf: out})
	assert.Equal(t, 2, cb.Dispatches())
	cb.Commit()
	if runtime.GOARCH == "amd64" {
		var de *DispatchError
		require.ErrorAs(t, cb.Wait(), &de)
		assert.Equal(t, 0, de.Dispatch)
	}
}

func TestCommandBufferOrder(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	const n = 256
	one := make([]float32, n)
	for i := range one {
		one[i] = 1
	}
	b1 := bufF32(t, d, one)
	acc := bufF32(t, d, make([]float32, n))
	// 20 command buffers, each adds 1 to acc, committed without waiting in between
	var cbs []gpu.CommandBuffer
	for i := 0; i < 20; i++ {
		cb, err := d.NewCommandBuffer()
		require.NoError(t, err)
		cb.Dispatch(ps["vadd"], gpu.Size{1, 1, 1}, gpu.Size{n, 1, 1}, gpu.Arg{Index: 0, Buf: acc}, gpu.Arg{Index: 1, Buf: b1}, gpu.Arg{Index: 2, Buf: acc})
		cb.Commit()
		cbs = append(cbs, cb)
	}
	require.NoError(t, cbs[len(cbs)-1].Wait())
	for _, v := range f32s(acc) {
		require.Equal(t, float32(20), v)
	}
	cb, _ := d.NewCommandBuffer()
	assert.Error(t, cb.Wait(), "Wait before Commit")
}

func TestWrapNoCopy(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	page := d.PageSize()
	mem := make([]byte, 3*page)
	// find a page-aligned window in Go memory
	off := 0
	for (uintptrOf(mem[off:]) % uintptr(page)) != 0 {
		off++
	}
	win := mem[off : off+page]
	for i := 0; i < page/4; i++ {
		binary.LittleEndian.PutUint32(win[4*i:], math.Float32bits(float32(i)))
	}
	w, err := d.WrapNoCopy(win)
	require.NoError(t, err)
	out := bufBytes(t, d, page)
	require.NoError(t, run(t, d, ps["vadd"], gpu.Size{page / 4 / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: w}, gpu.Arg{Index: 1, Buf: w}, gpu.Arg{Index: 2, Buf: out}))
	assert.Equal(t, float32(2*100), f32s(out)[100])
	w.Release()
	_, err = d.WrapNoCopy(mem[off+1 : off+1+page])
	assert.Error(t, err)
}

// TestWrapNoCopyFile wraps what production wraps: a read-only shared mapping of a file
// (the model's weights), at an offset of whole pages, with a partial last page. The
// kernels read the file's bytes through it, the buffer's contents are the mapping
// itself (no copy), and a change to the file shows through.
func TestWrapNoCopyFile(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	page := d.PageSize()
	n := page / 4                    // floats per page
	data := make([]byte, 3*page+100) // three pages and a partial fourth
	for i := 0; i < len(data)/4; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)))
	}
	path := filepath.Join(t.TempDir(), "weights.bin")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	// as gguf maps a file: its length rounded up to whole pages
	m, err := syscall.Mmap(int(f.Fd()), 0, 4*page, syscall.PROT_READ, syscall.MAP_SHARED)
	require.NoError(t, err)
	defer syscall.Munmap(m)

	// pages 1 and 2, and the last page (whole, as page rounding makes it)
	w, err := d.WrapNoCopy(m[page : 3*page])
	require.NoError(t, err)
	defer w.Release()
	require.Equal(t, uintptrOf(m[page:]), uintptrOf(w.Contents()), "the buffer is the mapping, not a copy")
	last, err := d.WrapNoCopy(m[3*page : 4*page])
	require.NoError(t, err)
	defer last.Release()

	out := bufBytes(t, d, 2*page)
	require.NoError(t, run(t, d, ps["vadd"], gpu.Size{2 * n / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: w}, gpu.Arg{Index: 1, Buf: w}, gpu.Arg{Index: 2, Buf: out}))
	got := f32s(out)
	for _, i := range []int{0, 1, n - 1, n, 2*n - 1} {
		require.Equal(t, 2*float32(n+i), got[i], "element %d of page 1", i)
	}
	tail := bufBytes(t, d, page)
	require.NoError(t, run(t, d, ps["vadd"], gpu.Size{n / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: last}, gpu.Arg{Index: 1, Buf: last}, gpu.Arg{Index: 2, Buf: tail}))
	require.Equal(t, 2*float32(3*n+24), f32s(tail)[24], "the last float in the file")
	require.Equal(t, float32(0), f32s(tail)[25], "past the end of the file the page reads zeros")

	// a write to the file is seen through the mapping the kernel reads
	fw, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], math.Float32bits(-7))
	_, err = fw.WriteAt(b[:], int64(page+4*5))
	require.NoError(t, err)
	require.NoError(t, fw.Close())
	require.NoError(t, run(t, d, ps["vadd"], gpu.Size{2 * n / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: w}, gpu.Arg{Index: 1, Buf: w}, gpu.Arg{Index: 2, Buf: out}))
	require.Equal(t, float32(-14), f32s(out)[5])
}

func TestMatvecThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 5120×5120 matrix-vector product on the emulator, with one and two workers, runs in the full go test")
	}
	const rows, k = 5120, 5120
	for _, workers := range []int{1, 2} {
		d := newDevice(t, WithWorkers(workers))
		ps := pipelines(t, d)
		W := make([]float32, rows*k)
		x := make([]float32, k)
		rng := rand.New(rand.NewSource(1))
		for i := range W {
			W[i] = float32(rng.Intn(7) - 3)
		}
		for i := range x {
			x[i] = float32(rng.Intn(5) - 2)
		}
		bw, bx, by := bufF32(t, d, W), bufF32(t, d, x), bufBytes(t, d, 4*rows)
		args := []gpu.Arg{{Index: 0, Buf: bw}, {Index: 1, Buf: bx}, {Index: 2, Buf: by}, {Index: 3, Bytes: u32bytes(k)}}
		require.NoError(t, run(t, d, ps["matvec"], gpu.Size{rows / 256, 1, 1}, gpu.Size{256, 1, 1}, args...)) // warm up
		const reps = 3
		start := nowNano()
		for i := 0; i < reps; i++ {
			require.NoError(t, run(t, d, ps["matvec"], gpu.Size{rows / 256, 1, 1}, gpu.Size{256, 1, 1}, args...))
		}
		sec := float64(nowNano()-start) / 1e9 / reps
		for r := 0; r < rows; r += 997 {
			var want float32
			for j := 0; j < k; j++ {
				want += W[r*k+j] * x[j]
			}
			require.Equal(t, want, f32s(by)[r], "row %d", r)
		}
		t.Logf("naive matvec %dx%d, %d worker(s): %.1f ms, %.2f GFLOP/s, %.2f GB/s of weights",
			rows, k, workers, sec*1e3, 2*rows*k/sec/1e9, 4*rows*k/sec/1e9)
	}
}
