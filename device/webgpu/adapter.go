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
	local, err := localRank()
	if err != nil {
		return nil, err
	}
	if want == "" && surface != nil {
		a, err := inst.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreferenceHighPerformance, CompatibleSurface: surface})
		if err != nil || a == nil {
			return nil, errNoAdapter
		}
		return a, nil
	}
	adapters := inst.EnumerateAdapters(nil)
	list := make([]choice, len(adapters))
	for i, a := range adapters {
		p := adapterInfo(a)
		list[i] = choice{name: p.Device, rank: rank(p.AdapterType)}
	}
	pick, err := pickAdapter(list, want, local)
	for i, a := range adapters {
		if i != pick {
			a.Release()
		}
	}
	if err != nil {
		return nil, err
	}
	return adapters[pick], nil
}

var errNoAdapter = fmt.Errorf("webgpu: no adapter found (on Debian without a GPU: apt-get install mesa-vulkan-drivers libvulkan1): %w", device.ErrUnavailable)

// choice is what pickAdapter knows of an adapter.
type choice struct {
	name string
	rank int // rank's order of its type
}

// pickAdapter returns the index in list of the adapter that the process
// of local rank local opens, as want (EnvAdapter) says: unset, the
// local-th adapter of the best kind, counted round; an index or a part
// of a name, that adapter; a comma-separated list of those, its
// local-th entry, counted round.
func pickAdapter(list []choice, want string, local int) (int, error) {
	if len(list) == 0 {
		return -1, errNoAdapter
	}
	if want == "" {
		best := list[0].rank
		for _, c := range list {
			best = min(best, c.rank)
		}
		var same []int
		for i, c := range list {
			if c.rank == best {
				same = append(same, i)
			}
		}
		return same[local%len(same)], nil
	}
	entry := want
	if strings.Contains(want, ",") {
		entries := strings.Split(want, ",")
		entry = strings.TrimSpace(entries[local%len(entries)])
	}
	idx, numeric := strconv.Atoi(entry)
	var names []string
	for i, c := range list {
		names = append(names, fmt.Sprintf("%d: %s", i, c.name))
	}
	for i, c := range list {
		if (numeric == nil && i == idx) || (numeric != nil && entry != "" && strings.Contains(strings.ToLower(c.name), strings.ToLower(entry))) {
			return i, nil
		}
	}
	what := fmt.Sprintf("%s=%q", EnvAdapter, want)
	if entry != want {
		what += fmt.Sprintf(" (entry %q, for local rank %d)", entry, local)
	}
	return -1, fmt.Errorf("webgpu: %s matches no adapter (have: %s): %w", what, strings.Join(names, "; "), device.ErrUnavailable)
}

// localRank is EnvLocalRank's count: the process's index among a
// distributed job's on its machine (0 when unset).
func localRank() (int, error) {
	s := strings.TrimSpace(os.Getenv(EnvLocalRank))
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("webgpu: %s=%q; want a count ≥ 0 (the process's local rank): %w", EnvLocalRank, s, device.ErrUnavailable)
	}
	return n, nil
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
	Chosen  bool   // what Open picks in this process

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
// one Open chooses for this process (EnvAdapter, EnvLocalRank); by
// default the first of the best kind (a discrete GPU, then an integrated
// one, then any other, a CPU adapter last).
func Adapters() []Adapter {
	list, choices := adapters()
	local, err := localRank()
	if err != nil {
		return list
	}
	if pick, err := pickAdapter(choices, strings.TrimSpace(os.Getenv(EnvAdapter)), local); err == nil {
		list[pick].Chosen = true
	}
	return list
}

// AdapterFor returns the index, in Adapters, of the adapter that Open
// chooses in the process of local rank local (a distributed job's
// process on one machine; package dist) under EnvAdapter as now set.
func AdapterFor(local int) (int, error) {
	_, choices := adapters()
	return pickAdapter(choices, strings.TrimSpace(os.Getenv(EnvAdapter)), local)
}

// adapters enumerates the adapters and what pickAdapter knows of them.
func adapters() ([]Adapter, []choice) {
	quietDeviceSelect()
	inst, err := newInstance()
	if err != nil {
		return nil, nil
	}
	defer inst.Release()
	var list []Adapter
	var choices []choice
	for i, a := range inst.EnumerateAdapters(nil) {
		p := adapterInfo(a)
		l := requestable(a.GetLimits())
		list = append(list, Adapter{Index: i, Name: p.Device, Driver: p.Description, Type: adapterTypeName(p.AdapterType), Backend: backendName(p.BackendType),
			MaxBufferSize: l.MaxBufferSize, MaxBindingSize: l.MaxStorageBufferBindingSize})
		list[len(list)-1].Features = featureNames(a)
		choices = append(choices, choice{name: p.Device, rank: rank(p.AdapterType)})
		a.Release()
	}
	return list, choices
}
