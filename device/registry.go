package device

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
)

// EnvDevice is the environment variable that overrides Open("auto").
const EnvDevice = "EXTENSOR_DEVICE"

// EnvLocalRank is the process's index among a distributed job's
// processes on its machine, set by package dist: a backend with several
// adapters of the best kind opens the one of that index (counted round),
// so that one process a GPU uses every GPU of a machine.
const EnvLocalRank = "EXTENSOR_LOCAL_RANK"

// ErrNotRegistered is returned (wrapped) by Open for a name no backend has
// registered.
var ErrNotRegistered = errors.New("device not registered")

// ErrUnavailable is returned (wrapped) by a driver whose backend is
// registered but cannot run on this machine, e.g. WebGPU without an adapter.
var ErrUnavailable = errors.New("device unavailable")

// Driver opens devices of one backend.
type Driver interface {
	Open() (Device, error)
}

// DriverFunc adapts a function to the Driver interface.
type DriverFunc func() (Device, error)

// Open calls f.
func (f DriverFunc) Open() (Device, error) { return f() }

var (
	mu      sync.RWMutex
	drivers = map[string]Driver{}
)

// importPaths tells the "forgotten import?" hint where known backends live.
var importPaths = map[string]string{
	"webgpu": "github.com/extensor/extensor/device/webgpu",
	"cpu":    "github.com/extensor/extensor/cpu",
}

// Register makes a backend available under name. It panics if name is
// "auto", is registered twice, or d is nil; it is meant for init functions.
func Register(name string, d Driver) {
	mu.Lock()
	defer mu.Unlock()
	if f, isFunc := d.(DriverFunc); d == nil || isFunc && f == nil {
		panic("device: Register driver is nil")
	}
	if name == "auto" || name == "" {
		panic(fmt.Sprintf("device: Register with reserved name %q", name))
	}
	if _, dup := drivers[name]; dup {
		panic("device: Register called twice for driver " + name)
	}
	drivers[name] = d
}

// Drivers returns the sorted names of the registered backends.
func Drivers() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open opens a device by backend name: "cpu", "webgpu" or "auto". "auto"
// uses the EXTENSOR_DEVICE environment variable when it is set, and
// otherwise WebGPU when it is registered and an adapter exists, else CPU.
func Open(name string) (Device, error) {
	if name == "auto" {
		if env := strings.TrimSpace(os.Getenv(EnvDevice)); env != "" && env != "auto" {
			d, err := Open(env)
			if err != nil {
				return nil, fmt.Errorf("device: %s=%s: %w", EnvDevice, env, err)
			}
			return d, nil
		}
		mu.RLock()
		_, haveGPU := drivers["webgpu"]
		mu.RUnlock()
		if haveGPU {
			if d, err := Open("webgpu"); err == nil {
				return d, nil
			}
		}
		return Open("cpu")
	}
	mu.RLock()
	d, ok := drivers[name]
	mu.RUnlock()
	if !ok {
		msg := fmt.Sprintf("device: unknown device %q (registered: %s)", name, strings.Join(Drivers(), ", "))
		if p, known := importPaths[name]; known {
			msg += fmt.Sprintf("; forgotten import? add: import _ %q", p)
		}
		return nil, fmt.Errorf("%s: %w", msg, ErrNotRegistered)
	}
	return d.Open()
}
