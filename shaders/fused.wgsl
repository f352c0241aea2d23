// The fused family: a chain of elementwise ops of the unary, binary and
// where families (their op_ functions, included whole) run as one kernel,
// rendered by device/webgpu (fuse.go): {{.Ops}}. elem(i) reads each
// input once, computes the chain's nodes in order in f32 (rounding each
// to the storage type, as the unfused kernels store it), and writes the
// values read after the chain. p: device/webgpu's fusedParams, N items
// then words W: the shape, its magic numbers (udiv) and the broadcast
// inputs' strides, then the unary nodes' scalars as f32 bits.
{{template "unary_ops"}}
{{template "binary_ops"}}
{{template "where_ops"}}
{{template "math"}}
{{- if .Bcast}}
{{template "udiv"}}
{{- end}}
{{.Body}}
{{template "main_unrolled" dict "Count" "p.N" "N" .Unroll "Coalesce" .Coalesce}}
