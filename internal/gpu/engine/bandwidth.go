package engine

import (
	"context"
	"slices"
	"time"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// ReadBandwidth measures dev's streaming read in bytes per second: the stream_read
// kernel (the read the products are rated against) over a buffer of size bytes —
// device-local where the device has such memory apart (gpu.DeviceLocal) — passes times
// per command buffer, so that submitting costs little beside the reads, repeated for
// about d (at least three times); it returns the median command buffer's rate. Decode
// reads every weight once per token, so this rate over the weights' bytes is the decode
// ceiling that examples/bench rates a GPU's decode against.
func ReadBandwidth(ctx context.Context, dev gpu.Device, size, passes int, d time.Duration) (float64, error) {
	p, err := dev.Compile(map[string]string{sourceFile: Source()}, nil, []string{kStreamRead})
	if err != nil {
		return 0, err
	}
	size = min(size, dev.MaxBufferLength()) &^ 15
	passes = max(passes, 1)
	var in gpu.Buffer
	if dl, ok := dev.(gpu.DeviceLocal); ok {
		in, err = dl.NewDeviceBuffer(size)
	} else {
		in, err = dev.NewBuffer(size)
	}
	if err != nil {
		return 0, err
	}
	defer in.Release()
	n4 := size / 16
	groups := min(4096, (n4+255)/256)
	out, err := dev.NewBuffer(4 * groups)
	if err != nil {
		return 0, err
	}
	defer out.Release()
	e := &engine{p: p}
	pass := func() (time.Duration, error) {
		cb, err := dev.NewCommandBuffer()
		if err != nil {
			return 0, err
		}
		for range passes {
			e.streamRead(cb, in, out, n4, groups)
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
