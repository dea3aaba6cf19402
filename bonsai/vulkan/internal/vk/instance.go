package vk

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// ValidationLayer is the Khronos validation layer's name.
const ValidationLayer = "VK_LAYER_KHRONOS_validation"

// debugUtils is the extension that carries the validation layer's messages.
const debugUtils = "VK_EXT_debug_utils"

// InstanceOptions say what instance to create.
type InstanceOptions struct {
	AppName    string
	APIVersion uint32 // APIVersion1_2 when zero
	Layers     []string
	Extensions []string
	// Messages collects what the layers report (VK_EXT_debug_utils) into the instance,
	// for Messages and TakeMessages; the debug messenger is made with the instance.
	Messages bool
}

// Message is one report of a layer through the debug messenger.
type Message struct {
	Severity uint32 // a DEBUG_UTILS_MESSAGE_SEVERITY_*_BIT_EXT
	ID       string // the message ID name, e.g. a VUID
	Text     string
}

// IsError reports whether m has error severity.
func (m Message) IsError() bool { return m.Severity&DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT != 0 }

// Instance is a VkInstance with its commands.
type Instance struct {
	handle uintptr
	counts *counts

	id        uintptr // the messenger's user data: a key of sinks
	messenger DebugUtilsMessenger
	mu        sync.Mutex
	messages  []Message

	gipa                                   uintptr
	destroyInstance, enumeratePhysical     uintptr
	properties2, memoryProperties, queueFP uintptr
	features2                              uintptr
	createDevice, getDeviceProcAddr        uintptr
	createMessenger, destroyMessenger      uintptr
}

// LayerPresent reports whether the loader offers the instance layer name.
func LayerPresent(name string) (bool, error) {
	gipa, err := getInstanceProcAddr()
	if err != nil {
		return false, err
	}
	enumerate := procAddr(gipa, 0, "vkEnumerateInstanceLayerProperties")
	var n uint32
	if err := check("vkEnumerateInstanceLayerProperties", syscallN(enumerate, uintptr(unsafe.Pointer(&n)), 0)); err != nil {
		return false, err
	}
	if n == 0 {
		return false, nil
	}
	layers := make([]LayerProperties, n)
	var p runtime.Pinner
	defer p.Unpin()
	if err := check("vkEnumerateInstanceLayerProperties", syscallN(enumerate, Ptr(&p, &n), Slice(&p, layers))); err != nil {
		return false, err
	}
	for _, l := range layers[:n] {
		if CBytes(l.LayerName[:]) == name {
			return true, nil
		}
	}
	return false, nil
}

// CreateInstance creates an instance.
func CreateInstance(o InstanceOptions) (*Instance, error) {
	gipa, err := getInstanceProcAddr()
	if err != nil {
		return nil, err
	}
	create := procAddr(gipa, 0, "vkCreateInstance")
	if create == 0 {
		return nil, fmt.Errorf("%w: the loader has no vkCreateInstance", ErrUnavailable)
	}
	if o.APIVersion == 0 {
		o.APIVersion = APIVersion1_2
	}
	in := &Instance{counts: &counts{}, gipa: gipa}
	exts := o.Extensions
	if o.Messages {
		exts = append(exts[:len(exts):len(exts)], debugUtils)
	}
	var p runtime.Pinner
	defer p.Unpin()
	app := ApplicationInfo{SType: STRUCTURE_TYPE_APPLICATION_INFO, PApplicationName: CString(&p, o.AppName), ApiVersion: o.APIVersion}
	info := InstanceCreateInfo{
		SType:                   STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		PApplicationInfo:        Ptr(&p, &app),
		EnabledLayerCount:       uint32(len(o.Layers)),
		PpEnabledLayerNames:     Strings(&p, o.Layers),
		EnabledExtensionCount:   uint32(len(exts)),
		PpEnabledExtensionNames: Strings(&p, exts),
	}
	var msgInfo DebugUtilsMessengerCreateInfoEXT
	if o.Messages {
		in.id = sinks.add(in)
		msgInfo = messengerInfo(in.id)
		info.PNext = Ptr(&p, &msgInfo) // reports from vkCreateInstance and vkDestroyInstance
	}
	if err := check("vkCreateInstance", syscallN(create, Ptr(&p, &info), 0, Ptr(&p, &in.handle))); err != nil {
		sinks.remove(in.id)
		return nil, err
	}
	in.counts.add("instance", 1)
	for _, f := range []struct {
		fn   *uintptr
		name string
	}{
		{&in.destroyInstance, "vkDestroyInstance"},
		{&in.enumeratePhysical, "vkEnumeratePhysicalDevices"},
		{&in.properties2, "vkGetPhysicalDeviceProperties2"},
		{&in.features2, "vkGetPhysicalDeviceFeatures2"},
		{&in.memoryProperties, "vkGetPhysicalDeviceMemoryProperties"},
		{&in.queueFP, "vkGetPhysicalDeviceQueueFamilyProperties"},
		{&in.createDevice, "vkCreateDevice"},
		{&in.getDeviceProcAddr, "vkGetDeviceProcAddr"},
	} {
		if *f.fn = procAddr(gipa, in.handle, f.name); *f.fn == 0 {
			in.Destroy()
			return nil, fmt.Errorf("%w: the instance has no %s", ErrUnavailable, f.name)
		}
	}
	if o.Messages {
		in.createMessenger = procAddr(gipa, in.handle, "vkCreateDebugUtilsMessengerEXT")
		in.destroyMessenger = procAddr(gipa, in.handle, "vkDestroyDebugUtilsMessengerEXT")
		if err := check("vkCreateDebugUtilsMessengerEXT", syscallN(in.createMessenger, in.handle, Ptr(&p, &msgInfo), 0, Ptr(&p, &in.messenger))); err != nil {
			in.Destroy()
			return nil, err
		}
		in.counts.add("debug messenger", 1)
	}
	return in, nil
}

// Destroy destroys the instance and its messenger; the devices must be gone.
func (in *Instance) Destroy() {
	if in.messenger != 0 {
		syscallN(in.destroyMessenger, in.handle, uintptr(in.messenger), 0)
		in.messenger = 0
		in.counts.add("debug messenger", -1)
	}
	if in.handle != 0 {
		syscallN(in.destroyInstance, in.handle, 0)
		in.handle = 0
		in.counts.add("instance", -1)
	}
	sinks.remove(in.id)
}

// Live returns the objects created through the instance and its devices that are not
// destroyed yet, by kind.
func (in *Instance) Live() map[string]int { return in.counts.snapshot() }

// Messages returns the layers' reports so far.
func (in *Instance) Messages() []Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Message(nil), in.messages...)
}

// TakeMessages returns the layers' reports so far and forgets them.
func (in *Instance) TakeMessages() []Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	m := in.messages
	in.messages = nil
	return m
}

// PhysicalDevices enumerates the physical devices.
func (in *Instance) PhysicalDevices() ([]PhysicalDevice, error) {
	var n uint32
	var p runtime.Pinner
	defer p.Unpin()
	if err := check("vkEnumeratePhysicalDevices", syscallN(in.enumeratePhysical, in.handle, Ptr(&p, &n), 0)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	devs := make([]PhysicalDevice, n)
	if err := check("vkEnumeratePhysicalDevices", syscallN(in.enumeratePhysical, in.handle, Ptr(&p, &n), Slice(&p, devs))); err != nil {
		return nil, err
	}
	return devs[:n], nil
}

// Properties returns a physical device's properties with its subgroup properties.
func (in *Instance) Properties(pd PhysicalDevice) (PhysicalDeviceProperties, PhysicalDeviceSubgroupProperties) {
	var p runtime.Pinner
	defer p.Unpin()
	sub := PhysicalDeviceSubgroupProperties{SType: STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES}
	props := PhysicalDeviceProperties2{SType: STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, PNext: Ptr(&p, &sub)}
	syscallN(in.properties2, uintptr(pd), Ptr(&p, &props))
	sub.PNext = 0
	return props.Properties, sub
}

// MaxAllocation returns the device's maxMemoryAllocationSize (Vulkan 1.1).
func (in *Instance) MaxAllocation(pd PhysicalDevice) uint64 {
	var p runtime.Pinner
	defer p.Unpin()
	m3 := PhysicalDeviceMaintenance3Properties{SType: STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES}
	props := PhysicalDeviceProperties2{SType: STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, PNext: Ptr(&p, &m3)}
	syscallN(in.properties2, uintptr(pd), Ptr(&p, &props))
	return m3.MaxMemoryAllocationSize
}

// Features are the features of a physical device that a compute backend asks about:
// Vulkan 1.0's, 1.1's and 1.2's, with their PNext fields cleared.
type Features struct {
	Base PhysicalDeviceFeatures
	V11  PhysicalDeviceVulkan11Features
	V12  PhysicalDeviceVulkan12Features
}

// Features returns what a physical device supports.
func (in *Instance) Features(pd PhysicalDevice) Features {
	var p runtime.Pinner
	defer p.Unpin()
	v12 := PhysicalDeviceVulkan12Features{SType: STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES}
	v11 := PhysicalDeviceVulkan11Features{SType: STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, PNext: Ptr(&p, &v12)}
	f2 := PhysicalDeviceFeatures2{SType: STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, PNext: Ptr(&p, &v11)}
	syscallN(in.features2, uintptr(pd), Ptr(&p, &f2))
	v11.PNext, v12.PNext = 0, 0
	return Features{Base: f2.Features, V11: v11, V12: v12}
}

// MemoryProperties returns a physical device's memory types and heaps.
func (in *Instance) MemoryProperties(pd PhysicalDevice) PhysicalDeviceMemoryProperties {
	var m PhysicalDeviceMemoryProperties
	var p runtime.Pinner
	defer p.Unpin()
	syscallN(in.memoryProperties, uintptr(pd), Ptr(&p, &m))
	return m
}

// QueueFamilies returns a physical device's queue families.
func (in *Instance) QueueFamilies(pd PhysicalDevice) []QueueFamilyProperties {
	var n uint32
	var p runtime.Pinner
	defer p.Unpin()
	syscallN(in.queueFP, uintptr(pd), Ptr(&p, &n), 0)
	if n == 0 {
		return nil
	}
	fams := make([]QueueFamilyProperties, n)
	syscallN(in.queueFP, uintptr(pd), Ptr(&p, &n), Slice(&p, fams))
	return fams[:n]
}

func messengerInfo(id uintptr) DebugUtilsMessengerCreateInfoEXT {
	return DebugUtilsMessengerCreateInfoEXT{
		SType:           STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
		MessageSeverity: DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
		MessageType: DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
			DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
		PfnUserCallback: messengerCallback(),
		PUserData:       id,
	}
}

// sinks routes the one process-wide messenger callback (purego's callbacks are never
// freed, so there is one) to the instance whose id the messenger carries.
var sinks = sinkTable{m: map[uintptr]*Instance{}}

type sinkTable struct {
	mu   sync.Mutex
	next atomic.Uintptr
	m    map[uintptr]*Instance
}

func (s *sinkTable) add(in *Instance) uintptr {
	id := s.next.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = in
	return id
}

func (s *sinkTable) remove(id uintptr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

func (s *sinkTable) get(id uintptr) *Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

var callback struct {
	once sync.Once
	fn   uintptr
}

func messengerCallback() uintptr {
	callback.once.Do(func() { callback.fn = newCallback(onMessage) })
	return callback.fn
}

// onMessage is the PFN_vkDebugUtilsMessengerCallbackEXT; the layer calls it on the
// thread of the command it reports on, during that command.
func onMessage(severity, types, data, user uintptr) uintptr {
	in := sinks.get(user)
	if in == nil || data == 0 {
		return 0
	}
	d := (*DebugUtilsMessengerCallbackDataEXT)(fromC(data))
	m := Message{Severity: uint32(severity), ID: GoString(d.PMessageIdName, 256), Text: GoString(d.PMessage, 1<<16)}
	in.mu.Lock()
	in.messages = append(in.messages, m)
	in.mu.Unlock()
	return 0 // VK_FALSE: the command goes on
}
