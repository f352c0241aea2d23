// Package draw paints tensors into a canvas on their device, with the
// draw kernels of package device (DrawOp): rectangles, grids of images,
// curves and text from a bitmap font (golang.org/x/image's basicfont,
// rasterised once into a tensor). On the WebGPU device the pictures are
// made by the GPU from the tensors' own buffers, with no round trip
// through the CPU; Image reads the finished canvas back, to save as a PNG
// or to show.
package draw
