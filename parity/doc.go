// Package parity proves extensor's backends agree: for every op it draws
// seeded random inputs and
//
//   - compares the WebGPU forward and backward with the CPU backend in
//     float64 (rtol 1e-4, atol 1e-5 unless a case says otherwise);
//   - compares the CPU float32 forward and backward with CPU float64;
//   - compares the CPU float64 backward with central finite differences
//     from gonum's diff/fd (rtol 1e-6);
//   - checks that every gradient has exactly its input's shape.
//
// Values are compared with gonum's scalar.EqualWithinAbsOrRel: a pair
// agrees when its absolute difference is within atol or its relative
// difference within rtol. Inputs are rounded to float32 before either
// backend sees them, so the comparison measures the kernels, not the
// rounding of inputs.
//
// Specs lists the op catalogue; Check runs one case; a Table collects the
// results into the coverage table of docs/coverage.md (make parity rewrites
// it).
package parity
