package engine

import (
	"cmp"
	"fmt"
	"sync"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// countingDevice is a gpu.Device that runs nothing: buffers are host memory, pipelines
// are names, command buffers record and check their dispatches. It measures the host
// logic — bindings, offsets, geometry, the dispatch count — without a GPU or emulator.
type countingDevice struct {
	maxBuf, page int
	simdWidth    int            // the pipelines' threadExecutionWidth; 0 means 32
	workingSet   int64          // RecommendedWorkingSet
	allocated    int            // bytes of NewBuffer allocations
	cbs          int            // command buffers made
	dispatched   map[string]int // dispatches per kernel, over every command buffer
	waitErr      error          // what every Wait returns, when set
	mu           sync.Mutex
	wrapped      []int // lengths of the wrapped views
	last         *countingCB
}

func newCountingDevice(maxBuf int) *countingDevice {
	return &countingDevice{maxBuf: maxBuf, page: 16384}
}

func (d *countingDevice) Name() string         { return "counting device" }
func (d *countingDevice) MaxBufferLength() int { return d.maxBuf }
func (d *countingDevice) PageSize() int        { return d.page }
func (d *countingDevice) Close() error         { return nil }

type countingBuf struct{ b []byte }

func (b *countingBuf) Len() int         { return len(b.b) }
func (b *countingBuf) Contents() []byte { return b.b }
func (b *countingBuf) Release()         {}

func (d *countingDevice) RecommendedWorkingSet() int64 { return d.workingSet }

func (d *countingDevice) NewBuffer(size int) (gpu.Buffer, error) {
	// Allocations are not held to maxBuf, which only shapes how the weights are wrapped.
	d.mu.Lock()
	d.allocated += size
	d.mu.Unlock()
	return &countingBuf{make([]byte, size)}, nil
}

func (d *countingDevice) WrapNoCopy(mem []byte) (gpu.Buffer, error) {
	if err := gpu.CheckNoCopy(addr(mem), len(mem), d.page, d.maxBuf); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.wrapped = append(d.wrapped, len(mem))
	d.mu.Unlock()
	return &countingBuf{mem}, nil
}

type countingPipe struct {
	name   string
	width  int
	macros map[string]string // the macros it was compiled with
}

func (p *countingPipe) Name() string                  { return p.name }
func (p *countingPipe) MaxThreadsPerThreadgroup() int { return 1024 }
func (p *countingPipe) ThreadExecutionWidth() int     { return p.width }

func (d *countingDevice) Compile(sources, macros map[string]string, kernels []string) (map[string]gpu.Pipeline, error) {
	out := map[string]gpu.Pipeline{}
	for _, k := range kernels {
		out[k] = &countingPipe{k, cmp.Or(d.simdWidth, 32), macros}
	}
	return out, nil
}

type countingCB struct {
	dev     *countingDevice
	n       int
	perName map[string]int
	log     []countedDispatch // every dispatch, in order
	err     error
}

// countedDispatch is one dispatch a countingCB recorded.
type countedDispatch struct {
	p             *countingPipe
	grid, threads gpu.Size
	args          []byte // the argument words (buffer 0's bytes)
}

func (d *countingDevice) NewCommandBuffer() (gpu.CommandBuffer, error) {
	cb := &countingCB{dev: d, perName: map[string]int{}, err: d.waitErr}
	d.mu.Lock()
	d.cbs++
	d.last = cb
	d.mu.Unlock()
	return cb, nil
}

func (cb *countingCB) Dispatch(p gpu.Pipeline, grid, threads gpu.Size, args ...gpu.Arg) {
	cb.n++
	cb.perName[p.Name()]++
	rec := countedDispatch{grid: grid, threads: threads}
	rec.p, _ = p.(*countingPipe)
	for _, a := range args {
		if a.Index == 0 && a.Bytes != nil {
			rec.args = a.Bytes
		}
	}
	cb.log = append(cb.log, rec)
	cb.dev.mu.Lock()
	if cb.dev.dispatched == nil {
		cb.dev.dispatched = map[string]int{}
	}
	cb.dev.dispatched[p.Name()]++
	cb.dev.mu.Unlock()
	if err := gpu.CheckSizes(p.Name(), grid, threads, p.MaxThreadsPerThreadgroup()); err != nil && cb.err == nil {
		cb.err = err
	}
	seen := map[int]bool{}
	for _, a := range args {
		if _, err := gpu.CheckArg(p.Name(), a); err != nil && cb.err == nil {
			cb.err = err
		}
		if seen[a.Index] && cb.err == nil {
			cb.err = fmt.Errorf("dispatch %s: argument %d bound twice", p.Name(), a.Index)
		}
		seen[a.Index] = true
	}
}

func (cb *countingCB) Commit()         {}
func (cb *countingCB) Wait() error     { return cb.err }
func (cb *countingCB) Dispatches() int { return cb.n }
