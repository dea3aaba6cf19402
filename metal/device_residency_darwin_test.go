//go:build darwin && arm64

package metal

import (
	"encoding/binary"
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// On a Mac with residency sets (macOS 15), the committed set as Metal reports it
// (allocationCount): a buffer joins it with the command buffer after its creation and
// leaves it when it is freed, with no command buffer after (issue 24, defect 3: it used
// to stay until the next command buffer); a buffer released while a command buffer holds
// it leaves at that command buffer's Wait, when it is freed. TestResidencyOrder checks
// the same order on any platform against a model of the set; this checks the model.
func TestDeviceResidencyOnFree(t *testing.T) {
	d := devOpenTestDevice(t)
	base, ok := d.residentAllocations()
	if !ok {
		t.Skip("no residency set (macOS 14): Metal makes each command buffer's buffers resident")
	}
	count := func(want int, when string) {
		t.Helper()
		if n, _ := d.residentAllocations(); n != base+want {
			t.Errorf("%s: the committed residency set holds %d allocations, want %d", when, n, base+want)
		}
	}
	p := devCompileTest(t, d)["vadd"]
	const n = 256
	var bufs [3]gpu.Buffer
	for i := range bufs {
		b, err := d.NewBuffer(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		bufs[i] = b
	}
	defer bufs[2].Release()
	count(0, "three buffers made, no command buffer yet")
	devRun(t, d, func(gpu.CommandBuffer) {})
	count(3, "after a command buffer")
	bufs[0].Release()
	count(2, "one buffer released, no command buffer since")

	args := make([]byte, 8)
	binary.LittleEndian.PutUint32(args, n)
	cb, err := d.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{n, 1, 1},
		gpu.Arg{Index: 0, Buf: bufs[1]}, gpu.Arg{Index: 1, Buf: bufs[1]}, gpu.Arg{Index: 2, Buf: bufs[2]}, gpu.Arg{Index: 3, Bytes: args})
	bufs[1].Release()
	count(2, "a buffer released while a command buffer holds it")
	cb.Commit()
	if err := cb.Wait(); err != nil {
		t.Fatal(err)
	}
	count(1, "after that command buffer's Wait")
}
