package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/bonsai/vulkan"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -backend: what each value picks on each kind of machine, and why.
func TestChooseBackend(t *testing.T) {
	gpu := func(vulkan.Options) (vulkan.Choice, error) {
		return vulkan.Choice{Index: 1, Name: "NVIDIA GeForce RTX 4090", Type: "discrete", Reason: "the first discrete GPU"}, nil
	}
	none := func(vulkan.Options) (vulkan.Choice, error) { return vulkan.Choice{}, vulkan.ErrNoDevice }
	noLoader := func(vulkan.Options) (vulkan.Choice, error) {
		return vulkan.Choice{}, fmt.Errorf("%w: no Vulkan loader (libvulkan.so.1: not found)", vulkan.ErrUnavailable)
	}
	var asked vulkan.Options
	spy := func(o vulkan.Options) (vulkan.Choice, error) { asked = o; return gpu(o) }
	mac := platform{"darwin", "arm64", none}
	linuxGPU := platform{"linux", "amd64", spy}
	linuxCPU := platform{"linux", "amd64", none}
	for _, tc := range []struct {
		name     string
		flag     string
		cpuOpts  []cpu.Option
		p        platform
		backend  string // the backend's Name; "" for an error
		whyStart string
	}{
		{"auto on Apple silicon", "auto", nil, mac, "metal", "auto: Apple silicon"},
		{"auto with a Vulkan GPU", "", nil, linuxGPU, "vulkan", "auto"},
		{"auto without a GPU", "auto", nil, linuxCPU, "cpu", "auto: no Vulkan GPU"},
		{"auto without a loader", "auto", nil, platform{"windows", "amd64", noLoader}, "cpu", "auto: no Vulkan GPU: vulkan: not available: no Vulkan loader"},
		{"auto with CPU options", "auto", []cpu.Option{cpu.WithBatchTiles()}, linuxGPU, "cpu", "auto: CPU options given"},
		{"cpu", "cpu", []cpu.Option{cpu.WithBatchTiles()}, linuxGPU, "cpu", "asked for"},
		{"metal", "metal", nil, linuxCPU, "metal", "asked for"},
		{"vulkan", "vulkan", nil, linuxCPU, "vulkan", "asked for"},
		{"vulkan with CPU options", "vulkan", []cpu.Option{cpu.WithLayout(cpu.LayoutInterleaved)}, linuxCPU, "", ""},
		{"unknown", "cuda", nil, linuxCPU, "", ""},
	} {
		b, why, err := chooseBackend(tc.flag, tc.cpuOpts, tc.p)
		if tc.backend == "" {
			require.Error(t, err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.backend, b.Name(), tc.name)
		if tc.backend != "vulkan" || tc.flag != "vulkan" { // an asked-for Vulkan says its device after Load
			assert.Contains(t, why(), tc.whyStart, tc.name)
		}
	}
	assert.True(t, asked.GPUOnly, "auto never picks a CPU implementation of Vulkan")
	_, _, err := chooseBackend("cuda", nil, linuxCPU)
	assert.ErrorContains(t, err, "auto, cpu, metal, vulkan")
	assert.False(t, errors.Is(err, vulkan.ErrUnavailable))
}
