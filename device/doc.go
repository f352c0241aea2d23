// Package device defines the kernel-level interface every extensor backend
// implements, and the registry through which backends are selected.
//
// A backend registers itself from its package's init function, like a
// database/sql driver:
//
//	import _ "github.com/extensor/extensor/device/webgpu" // enables "webgpu"
//
// The CPU reference backend ("cpu") is always registered by package tensor.
// Open("auto") picks WebGPU when an adapter exists and falls back to CPU; the
// EXTENSOR_DEVICE environment variable overrides "auto".
//
// # Interfaces
//
// A Device is its Core (identity, memory, transfers, Sync and Close) and
// one interface a kernel family (Elementwise, Reducer, Softmaxer,
// Gatherer, MatMuler, Windower, Convolver, Strider, Stepper, Drawer,
// Normalizer, Selector, Scanner, Attender), each named in families.go
// with the WGSL files that run it. How a backend lowers a family is its
// own: a convolution may run as im2col and matrix products (package
// im2col, on any device's kernels) or on kernels of its own. Optional
// capabilities are interfaces a backend may implement besides: Flusher,
// Pooler and Counter.
//
// # Errors
//
// Devices record work asynchronously. Kernel methods do not return errors:
// a runtime failure (a GPU validation error, out of device memory, device
// loss) is kept by the device, the first one since the last report, and
// returned once, naming the kernel, by the next Read or Sync (the WebGPU
// backend's Flush too); work recorded after it still runs. Methods that
// can fail up front (Alloc, Write, Read, Sync, Open) return errors
// directly.
//
// Checking shapes, dtypes and devices is the caller's job (package ops and
// package tensor do it); a Device may assume well-formed arguments.
package device
