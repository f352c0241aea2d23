package webgpu

import "github.com/extensor/extensor/device"

// The environment variables the backend reads when a device opens (with
// EnvMatMul and EnvProfile, beside the kernels they choose).
const (
	// EnvAdapter chooses the adapter: an index into the enumerated
	// adapters, or a substring of an adapter's name; or a
	// comma-separated list of those, one for each local rank.
	EnvAdapter = "EXTENSOR_ADAPTER"
	// EnvLocalRank is device.EnvLocalRank: without EnvAdapter, the
	// process takes the adapter of that index among the best kind (GPU i
	// for local rank i); EnvAdapter may list an adapter for each local
	// rank, separated by commas.
	EnvLocalRank = device.EnvLocalRank
	// EnvConv turns the direct convolution off: with
	// EXTENSOR_CONV=im2col every convolution runs as im2col and matrix
	// products. (The direct kernels are specialised by geometry, and
	// llvmpipe takes seconds to compile each: a fuzzer that tries a new
	// geometry each run uses im2col.)
	EnvConv = "EXTENSOR_CONV"
	// EnvSubgroups turns subgroup operations off: with
	// EXTENSOR_SUBGROUPS=off the reductions combine through workgroup
	// memory alone, as on adapters without subgroups (so that both paths
	// can be tested on one adapter).
	EnvSubgroups = "EXTENSOR_SUBGROUPS"
	// EnvF16 turns WGSL's f16 off: with EXTENSOR_F16=packed the kernels
	// read and write float16 tensors as 32-bit words of two halves, as on
	// adapters without the shader-f16 feature (so that both paths can be
	// tested on one adapter).
	EnvF16 = "EXTENSOR_F16"
	// EnvWait chooses how a wait for the device polls: "spin" (the
	// default: polling without blocking, sleeping longer as the wait goes
	// on; a blocking poll crashed lavapipe on dispatches of seconds, and
	// waited longer on the H100) or "block" (one blocking poll for the
	// last submission).
	EnvWait = "EXTENSOR_WAIT"
	// EnvFuse turns elementwise fusion off: with EXTENSOR_FUSE=off every
	// unary and binary call runs as a kernel of its own ("on", the
	// default, fuses chains of them; see Fusion).
	EnvFuse = "EXTENSOR_FUSE"
)
