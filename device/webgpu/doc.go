// Package webgpu is extensor's GPU backend: every kernel is a WGSL compute
// shader (package shaders) run through wgpu-native (the Go binding
// github.com/oliverbestmann/webgpu), on Vulkan,
// Metal or D3D12, or on Mesa's lavapipe where there is no GPU.
//
// Import it for its side effect of registering the device "webgpu":
//
//	import _ "github.com/extensor/extensor/device/webgpu"
//
// The runtime:
//   - chooses an adapter of the best kind (a discrete GPU, then an
//     integrated one, then any other, a CPU adapter such as lavapipe last;
//     Adapters lists them, and go run ./cmd/adapters prints the list), or
//     by the EXTENSOR_ADAPTER environment variable (an index into the
//     enumerated adapters, or a case-insensitive substring of the
//     adapter's name); with OpenSurface, one that can present to a window
//     (Present then shows canvases drawn by the draw kernels on it); it
//     requests the adapter's limits when it creates the device, keeping
//     the storage binding size no larger than the buffer size;
//   - compiles each kernel once per specialisation: a comparable struct
//     per WGSL file (specs.go) that is both the template's data and the
//     pipeline cache's key, so no key is written by hand;
//   - chooses the matrix-product kernel per adapter: texture or register
//     kernels on CPU adapters (products under 2¹⁸ multiply-adds on the
//     register kernel's smallest blocks, quickest to compile), shared-memory
//     tiles on GPUs, the tile variant timed once per shape class (see
//     EnvMatMul and MatMulKernel);
//   - on CPU adapters, runs convolutions of at least 4 channels and 8
//     filters, and as much work as a product of 2¹⁸ multiply-adds, on direct
//     kernels (its device.Convolver): images and filters packed into textures 4
//     channels a texel, an implicit matrix product with no im2col matrix,
//     the input's gradient a convolution of the bordered upstream
//     gradient with the filters turned by 180°; the forward of images of
//     fewer than 4 channels runs on the same kernel over a texture of
//     their rows' window entries (channels × columns of the window, 4 a
//     texel), their gradients by im2col; other convolutions, and all on
//     GPUs, run as im2col and matrix products (package im2col);
//   - records each batch's dispatches into one compute pass, with bind
//     groups cached by kernel and buffers;
//   - where the adapter has the shader-f16 feature (and EnvF16 does not
//     turn it off), stores float16 tensors as WGSL's f16 for the unary,
//     binary, reduction, softmax, gather, loss and axpy kernels, which
//     compute in float32; without it those kernels read 32-bit words of
//     two halves (unary and same-shape binary ops, sums and maxima) or
//     run on float32 stand-ins of their float16 buffers, converted in
//     and back (widen), as do CPU adapters' register, texture and
//     direct-convolution kernels (whose unrolled loops compile several
//     times as slowly unpacking words). The tiled product, poolings and
//     strided copies read and write the words of two halves on every
//     adapter (the bytes are the same either way);
//   - where the adapter has subgroups (and EnvSubgroups does not turn
//     them off), combines a workgroup's values in reductions and softmax
//     rows with subgroup operations, else through workgroup memory;
//   - keeps a size-bucketed buffer pool; a freed buffer is reused at once,
//     even by work in the same batch as its last use (the queue runs in
//     order, and a host write first submits the open batch);
//   - records kernels into a shared command encoder and submits them in
//     batches: on readback, past BatchSize dispatches, and before a queue
//     write, never once per op;
//   - passes each dispatch's shapes, strides and scalars as words of one
//     parameter buffer bound at a dynamic offset, its slots kept by their
//     contents, so that a dispatch that repeats an earlier one's
//     parameters (a training loop's, step after step) writes nothing;
//   - spreads dispatches of more than 65535 workgroups over x and y, with
//     bounds guards in every kernel, and splits large matrix products into
//     several dispatches so that none runs for long;
//   - waits with non-blocking polls, without sleeping for the first 2 ms,
//     until wgpu's work-done callbacks have counted every submission
//     (lavapipe crashes in a blocking wait on a dispatch that runs for
//     more than about 5 s, and on the H100 a blocking wait took longer);
//     EnvWait=block chooses one blocking poll instead;
//   - turns WebGPU validation errors into Go errors naming the kernel;
//   - with the EXTENSOR_PROFILE environment variable set (EnvProfile),
//     times every dispatch, by the GPU's timestamps where the adapter has
//     them (else the host's clock, each dispatch alone), and tells where
//     the device time went (Profile, ProfileClock): the tool behind the
//     speed-ups in docs/performance.md.
//
// Tensors may be as large as the adapter's maximum buffer size; a larger
// one is an error wrapping device.ErrOutOfMemory. Elementwise kernels
// (unary and same-shape binary ops, fills, axpy, optimiser steps) bind a
// tensor larger than the maximum storage buffer binding size a chunk at a
// time, at offsets; any other kernel given one records an error naming
// the limit, which the next Sync or read returns.
//
// A Device is safe for concurrent use by several goroutines: a mutex
// guards its state, and work is recorded in the order callers take it.
//
// Built for the browser (GOOS=js GOARCH=wasm), Open uses the browser's
// WebGPU (navigator.gpu): the adapter is the browser's choice, and the
// validation errors it reports asynchronously (the device's
// "uncapturederror" events) are reported at the next wait, as wgpu-native's
// are; a waiting goroutine yields to the browser's event loop. Where the
// JavaScript runtime has no WebGPU (Node.js), Open fails with
// device.ErrUnavailable. Built without cgo (CGO_ENABLED=0) for any other
// system the package still registers "webgpu", whose Open then fails with
// device.ErrUnavailable, so "auto" selects CPU.
package webgpu
