package vulkan

import (
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vk"
)

// Context is an open Vulkan device with one compute queue.
type Context struct {
	Choice Choice
	Limits Limits

	in     *vk.Instance
	dev    *vk.Device
	pd     vk.PhysicalDevice
	family uint32
	queue  vk.Queue
	pool   vk.CommandPool
	mem    vk.PhysicalDeviceMemoryProperties
}

// Open opens the device o asks for (see Options.Device).
func Open(o Options) (*Context, error) {
	io := vk.InstanceOptions{AppName: "bonsai", APIVersion: vk.APIVersion1_2}
	if o.Validation {
		ok, err := vk.LayerPresent(vk.ValidationLayer)
		if err != nil {
			return nil, fmt.Errorf("vulkan: %w", err)
		}
		if !ok {
			return nil, errNoLayer
		}
		io.Layers, io.Messages = []string{vk.ValidationLayer}, true
	}
	in, err := vk.CreateInstance(io)
	if err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	c := &Context{in: in}
	if err := c.open(wantedDevice(o)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Context) open(want string) error {
	pds, err := c.in.PhysicalDevices()
	if err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	cands := make([]candidate, len(pds))
	for i, pd := range pds {
		props, _ := c.in.Properties(pd)
		_, hasQ := computeFamily(c.in.QueueFamilies(pd))
		cands[i] = candidate{name: vk.CBytes(props.DeviceName[:]), kind: props.DeviceType, computeQ: hasQ}
	}
	i, reason, err := choose(cands, want)
	if err != nil {
		return err
	}
	c.pd = pds[i]
	c.Choice = Choice{Index: i, Name: cands[i].name, Type: typeName(cands[i].kind), Reason: reason}
	c.Limits = readLimits(c.in, c.pd)
	c.mem = c.in.MemoryProperties(c.pd)
	c.family, _ = computeFamily(c.in.QueueFamilies(c.pd))
	if c.dev, err = c.in.CreateDevice(c.pd, c.family, nil); err != nil {
		return fmt.Errorf("vulkan: %s: %w", c.Choice.Name, err)
	}
	c.queue = c.dev.Queue(c.family, 0)
	if c.pool, err = c.dev.CreateCommandPool(c.family); err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	return nil
}

// Close waits for the device and destroys everything the context made.
func (c *Context) Close() {
	if c.dev != nil {
		c.dev.WaitIdle()
		c.dev.DestroyCommandPool(c.pool)
		c.dev.Destroy()
		c.dev = nil
	}
	if c.in != nil {
		c.in.Destroy()
	}
}

// Messages returns and forgets what the validation layer reported (nil without
// Options.Validation).
func (c *Context) Messages() []Message { return c.in.TakeMessages() }

// live returns the Vulkan objects the context has not destroyed, by kind.
func (c *Context) live() map[string]int { return c.in.Live() }

// Message is one report of the validation layer.
type Message = vk.Message
