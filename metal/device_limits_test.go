package metal

import (
	"context"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
)

// loadOn binds the model at path and loads it on dev; the model file stays open until
// the test ends.
func loadOn(t *testing.T, path string, dev gpu.Device, opt bonsai.LoadOptions) (bonsai.Engine, error) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := qwen35.Bind(f)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend("counting", func() (gpu.Device, error) { return dev, nil }, nil)
	return b.Load(context.Background(), w, opt)
}

// Defect 7 of issue 12: a GPU whose SIMD-groups are not 32 wide is refused at compile.
func TestSIMDWidthChecked(t *testing.T) {
	path := writeTiny(t)
	for _, w := range []int{16, 64} {
		dev := newCountingDevice(1 << 30)
		dev.simdWidth = w
		e, err := loadOn(t, path, dev, bonsai.LoadOptions{})
		if err == nil {
			e.Close()
			t.Fatalf("width %d: loaded", w)
		}
		if !strings.Contains(err.Error(), "threadExecutionWidth") || !strings.Contains(err.Error(), "need 32") {
			t.Errorf("width %d: %v", w, err)
		}
	}
	dev := newCountingDevice(1 << 30)
	e, err := loadOn(t, path, dev, bonsai.LoadOptions{})
	if err != nil {
		t.Fatalf("width 32: %v", err)
	}
	e.Close()
}
