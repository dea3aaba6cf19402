package metal

import (
	"context"
	"time"

	"github.com/bonsai-go/sdk/internal/gpu/engine"
)

// Bandwidth measures the system's GPU: its streaming read rate in bytes per second, by
// the library's stream_read kernel over size bytes, the median of command buffers of
// several passes repeated for about d. Decode reads every weight once per token, so this
// rate divided by the weights' bytes is the decode ceiling. Without Metal it returns an
// error wrapping ErrUnavailable.
func Bandwidth(ctx context.Context, size int, d time.Duration) (float64, error) {
	dev, err := newDevice()
	if err != nil {
		return 0, err
	}
	defer dev.Close()
	return engine.ReadBandwidth(ctx, dev, size, 8, d)
}
