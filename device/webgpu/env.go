package webgpu

// The environment variables the backend reads when a device opens (with
// EnvMatMul and EnvProfile, beside the kernels they choose).
const (
	// EnvAdapter chooses the adapter: an index into the enumerated
	// adapters, or a substring of an adapter's name.
	EnvAdapter = "EXTENSOR_ADAPTER"
	// EnvConv turns the direct convolution off: with
	// EXTENSOR_CONV=im2col every convolution runs as im2col and matrix
	// products. (The direct kernels are specialised by geometry, and
	// llvmpipe takes seconds to compile each: a fuzzer that tries a new
	// geometry each run uses im2col.)
	EnvConv = "EXTENSOR_CONV"
)
