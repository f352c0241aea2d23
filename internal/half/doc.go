// Package half converts between float32 and IEEE 754 binary16 (float16)
// bits as github.com/x448/float16 does, faster where the CPU backend, the
// tensors' reads and writes and the parity suite convert millions of
// values: float16 to float32 by a table of x448's results, float32 to
// float16 by its rounding (to nearest, ties to even) in a few integer
// operations for the values whose result is a normal float16 or
// infinity, and by x448 for the rest (subnormals, zeros, NaNs).
package half
