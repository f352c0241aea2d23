// Package im2col lowers 2-D convolutions and their gradients to the
// kernel families every device has: the window family's im2col and
// col2im (device.Windower), batched matrix products (device.MatMuler),
// strided copies and sums, in chunks of bounded memory. A backend's
// device.Convolver runs it for the convolutions its own kernels do not
// take: the CPU backend for all of them, the WebGPU backend for those its
// direct kernels decline.
package im2col
