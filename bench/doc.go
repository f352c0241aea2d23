// Package bench holds extensor's benchmarks, run by make bench on both
// backends and named Benchmark<Op>/<device>/<size>:
//
//   - MatMul, n×n·n×n for n = 256, 512, 1024, reporting GFLOP/s;
//   - Add of two vectors of 1M and 16M float32, reporting GB/s moved
//     (two reads and a write per element);
//   - MLPStep, one SGD step of the 784-256-10 MLP on a batch of 128;
//   - TinyOp, the cost of one 64-element op recorded among many in a
//     batched command encoder.
//
// GPU work is asynchronous: each benchmark records b.N iterations and then
// waits for the device, so the figures are throughput; Add waits after
// every iteration instead, so that its 64 MB results can be recycled.
package bench
