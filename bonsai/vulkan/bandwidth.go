package vulkan

import (
	"context"
	"time"

	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/gpu/engine"
)

// Bandwidth measures the device o opens: its streaming read rate in bytes per second,
// by the engine's stream_read kernel over size bytes of device-local memory (the read
// the products are rated against), the median of command buffers of several passes
// repeated for about d. Decode reads every weight once per token, so this rate divided
// by the weights' bytes is the decode ceiling.
func Bandwidth(ctx context.Context, o Options, size int, d time.Duration) (float64, error) {
	dev, err := openDevice(o)
	if err != nil {
		return 0, err
	}
	defer dev.Close()
	passes := 8
	if dev.c.Choice.Type == "cpu" {
		passes = 1 // lavapipe reads at a few GB/s
	}
	return engine.ReadBandwidth(ctx, dev, size, passes, d)
}

// NewDeviceBuffer allocates device-local memory (gpu.DeviceLocal).
func (d *gpuDevice) NewDeviceBuffer(size int) (gpu.Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.alloc(size, d.devMT)
}
