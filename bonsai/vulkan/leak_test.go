package vulkan

import (
	"context"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// Closing a model on the backend destroys every Vulkan object its device made: weights,
// states, pipelines, shader modules, arenas, fences, the command pool, the device and
// the instance.
func TestModelLeavesNothing(t *testing.T) {
	var devs []*gpuDevice
	b := validated(t, func(c *config) { c.onOpen = func(d *gpuDevice) { devs = append(devs, d) } })
	m, err := bonsai.Open(synthtest.Path(t, "tiny", 1, ternary.PQ2_0), bonsai.WithBackend(b), bonsai.WithContextSize(64))
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prefill(context.Background(), []int32{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(context.Background(), 6); err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 {
		t.Fatalf("%d devices opened, want 1", len(devs))
	}
	live := devs[0].c.live()
	if live["buffer"] == 0 || live["pipeline"] == 0 || live["device"] != 1 {
		t.Fatalf("while open: live objects %v, want buffers, pipelines and a device", live)
	}
	s.Close()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if live := devs[0].c.live(); len(live) != 0 {
		t.Errorf("after Close: live objects %v", live)
	}
}
