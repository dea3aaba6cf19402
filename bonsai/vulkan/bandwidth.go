package vulkan

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// Bandwidth measures the device's streaming read rate in bytes per second: the engine's
// stream_read kernel (the read shader the products are rated against) over a
// device-local buffer of size bytes, several passes per command buffer so that the
// submission's cost is spread, repeated for about d; it returns the median command
// buffer's rate. Decode reads every weight once per token, so this rate divided by the
// weights' bytes is the decode ceiling.
func Bandwidth(ctx context.Context, o Options, size int, d time.Duration) (float64, error) {
	c, err := Open(o)
	if err != nil {
		return 0, err
	}
	if !c.gpuReady {
		c.Close()
		return 0, fmt.Errorf("vulkan: %s lacks what the kernels need (%s): %w", c.Choice.Name, c.missing, ErrUnavailable)
	}
	dev, err := newGPUDevice(c)
	if err != nil {
		c.Close()
		return 0, err
	}
	defer dev.Close()
	size = min(size, dev.MaxBufferLength()) &^ 15
	p, err := dev.Compile(nil, nil, []string{"stream_read"})
	if err != nil {
		return 0, err
	}
	dev.mu.Lock()
	in, err := dev.alloc(size, dev.devMT)
	dev.mu.Unlock()
	if err != nil {
		return 0, err
	}
	defer in.Release()
	const threads = 256
	groups := int(min(c.Limits.MaxWorkGroupCount[0], 4096))
	out, err := dev.NewBuffer(4 * groups)
	if err != nil {
		return 0, err
	}
	defer out.Release()
	args := make([]byte, 16)
	binary.LittleEndian.PutUint32(args[0:], uint32(size/16))
	binary.LittleEndian.PutUint32(args[4:], uint32(groups))
	passes := 8
	if c.Choice.Type == "cpu" {
		passes = 1
	}
	pass := func() (time.Duration, error) {
		cb, err := dev.NewCommandBuffer()
		if err != nil {
			return 0, err
		}
		for range passes {
			cb.Dispatch(p["stream_read"], gpu.Size{groups, 1, 1}, gpu.Size{threads, 1, 1},
				gpu.Arg{Index: 0, Bytes: args}, gpu.Arg{Index: 1, Buf: in}, gpu.Arg{Index: 2, Buf: out})
		}
		t0 := time.Now()
		cb.Commit()
		err = cb.Wait()
		return time.Since(t0), err
	}
	if _, err := pass(); err != nil { // warm-up: the pipeline, the pages
		return 0, err
	}
	var times []time.Duration
	for start := time.Now(); len(times) < 3 || time.Since(start) < d && len(times) < 1000; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		t, err := pass()
		if err != nil {
			return 0, err
		}
		times = append(times, t)
	}
	slices.Sort(times)
	return float64(passes*size) / times[len(times)/2].Seconds(), nil
}
