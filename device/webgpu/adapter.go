//go:build cgo || js

package webgpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/wgpu"
)

func chooseAdapter(inst *wgpu.Instance, surface *wgpu.Surface) (*wgpu.Adapter, error) {
	want := strings.TrimSpace(os.Getenv(EnvAdapter))
	noAdapter := fmt.Errorf("webgpu: no adapter found (on Debian without a GPU: apt-get install mesa-vulkan-drivers libvulkan1): %w", device.ErrUnavailable)
	if want == "" && surface != nil {
		a, err := inst.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreferenceHighPerformance, CompatibleSurface: surface})
		if err != nil || a == nil {
			return nil, noAdapter
		}
		return a, nil
	}
	adapters := inst.EnumerateAdapters(nil)
	if want == "" { // the best kind: a discrete GPU, an integrated one, then a CPU
		best := -1
		for i, a := range adapters {
			if best < 0 || rank(adapterInfo(a).AdapterType) < rank(adapterInfo(adapters[best]).AdapterType) {
				best = i
			}
		}
		for i, a := range adapters {
			if i != best {
				a.Release()
			}
		}
		if best < 0 {
			return nil, noAdapter
		}
		return adapters[best], nil
	}
	var names []string
	pick := -1
	idx, numeric := strconv.Atoi(want)
	for i, a := range adapters {
		name := adapterInfo(a).Device
		names = append(names, fmt.Sprintf("%d: %s", i, name))
		if pick < 0 && ((numeric == nil && i == idx) || (numeric != nil && strings.Contains(strings.ToLower(name), strings.ToLower(want)))) {
			pick = i
		}
	}
	for i, a := range adapters {
		if i != pick {
			a.Release()
		}
	}
	if pick < 0 {
		return nil, fmt.Errorf("webgpu: %s=%q matches no adapter (have: %s): %w", EnvAdapter, want, strings.Join(names, "; "), device.ErrUnavailable)
	}
	return adapters[pick], nil
}

// quietDeviceSelect turns Mesa's device-selection Vulkan layer off
// (NODEVICE_SELECT=1) unless the environment says otherwise: extensor
// chooses the adapter itself (EnvAdapter), and the layer probes the
// window systems when an instance is made, printing "error:
// XDG_RUNTIME_DIR is invalid or not set in the environment." on machines
// without a desktop session, four times in a training run.
func quietDeviceSelect() {
	if _, set := os.LookupEnv("NODEVICE_SELECT"); !set {
		os.Setenv("NODEVICE_SELECT", "1")
	}
}

// adapterTypeName names an adapter type as WebGPU's enum does:
// "DiscreteGPU", "IntegratedGPU", "CPU" or "Unknown".
func adapterTypeName(t wgpu.AdapterType) string {
	switch t {
	case wgpu.AdapterTypeDiscreteGPU:
		return "DiscreteGPU"
	case wgpu.AdapterTypeIntegratedGPU:
		return "IntegratedGPU"
	case wgpu.AdapterTypeCPU:
		return "CPU"
	}
	return "Unknown"
}

// backendName names a backend: "Vulkan", "Metal", "D3D12", …
func backendName(b wgpu.BackendType) string {
	switch b {
	case wgpu.BackendTypeVulkan:
		return "Vulkan"
	case wgpu.BackendTypeMetal:
		return "Metal"
	case wgpu.BackendTypeD3D12:
		return "D3D12"
	case wgpu.BackendTypeD3D11:
		return "D3D11"
	case wgpu.BackendTypeOpenGL:
		return "OpenGL"
	case wgpu.BackendTypeWebGPU:
		return "WebGPU"
	}
	return b.String()
}

// rank orders adapter types by preference: discrete GPUs first, CPU
// adapters (lavapipe) last.
func rank(t wgpu.AdapterType) int {
	switch t {
	case wgpu.AdapterTypeDiscreteGPU:
		return 0
	case wgpu.AdapterTypeIntegratedGPU:
		return 1
	case wgpu.AdapterTypeCPU:
		return 3
	}
	return 2
}

// Adapter describes an adapter that WebGPU offers.
type Adapter struct {
	Index   int    // its index for EXTENSOR_ADAPTER
	Name    string // e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
	Driver  string
	Type    string // "DiscreteGPU", "IntegratedGPU", "CPU" or "Unknown"
	Backend string // e.g. "Vulkan"
	Chosen  bool   // what Open picks without EXTENSOR_ADAPTER

	// MaxBufferSize and MaxBindingSize are the adapter's largest buffer
	// and largest storage buffer binding, in bytes, as a device asks for
	// them (an unbounded buffer as 1 TiB).
	MaxBufferSize, MaxBindingSize uint64

	// Features names the optional WebGPU and wgpu-native features the
	// adapter offers, e.g. "shader-f16".
	Features []string
}

// maxBuffer caps the largest buffer a device asks for where its adapter
// reports no bound: NVIDIA's Vulkan adapters report 2⁶⁴−1 bytes, which
// wgpu-native reads as "undefined" and replaces by WebGPU's default of
// 256 MiB (the largest tensor on an 80 GB H100 was 256 MiB so). A tensor
// larger than the GPU's memory fails its allocation with
// [device.ErrOutOfMemory].
const maxBuffer = 1 << 40

// requestable returns the adapter's limits l as a device asks for them:
// the largest buffer at most maxBuffer, so that no limit reads as
// undefined.
func requestable(l wgpu.Limits) wgpu.Limits {
	l.MaxBufferSize = min(l.MaxBufferSize, maxBuffer)
	return l
}

// Adapters lists the adapters of the primary backends (Vulkan, Metal,
// D3D12) in the order EXTENSOR_ADAPTER's indices count them, marking the
// one Open chooses by default: the first of the best kind (a discrete
// GPU, then an integrated one, then any other, a CPU adapter last).
func Adapters() []Adapter {
	quietDeviceSelect()
	inst, err := newInstance()
	if err != nil {
		return nil
	}
	defer inst.Release()
	var list []Adapter
	var types []wgpu.AdapterType
	best := -1
	for i, a := range inst.EnumerateAdapters(nil) {
		p := adapterInfo(a)
		l := requestable(a.GetLimits())
		list = append(list, Adapter{Index: i, Name: p.Device, Driver: p.Description, Type: adapterTypeName(p.AdapterType), Backend: backendName(p.BackendType),
			MaxBufferSize: l.MaxBufferSize, MaxBindingSize: l.MaxStorageBufferBindingSize})
		list[len(list)-1].Features = featureNames(a)
		types = append(types, p.AdapterType)
		if best < 0 || rank(p.AdapterType) < rank(types[best]) {
			best = i
		}
		a.Release()
	}
	if best >= 0 {
		list[best].Chosen = true
	}
	return list
}
