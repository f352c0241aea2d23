// Package shaders holds extensor's WGSL compute kernels, embedded in the
// binary with the go:embed directive.
//
// Kernels are specialised by templating: each .wgsl file is a
// text/template that Source expands with the kernel's parameters (element
// type, operation, register block), one pipeline a specialisation. (naga
// 29 has WGSL's override constants; templates also choose bindings,
// loops and whole functions, which overrides cannot.) The data is a
// struct of the kernel's family (device/webgpu's specs), or a map.
// Every kernel starts with the prelude. Binding 0, p, holds a dispatch's
// shapes, strides and scalars, read-only and bound at a dynamic offset, so
// that they need no buffer of their own: a WGSL struct Params that
// mirrors the kernel's Go parameter struct field for field (ParamsDecl,
// Words), read as p.M, p.Scale.
package shaders
