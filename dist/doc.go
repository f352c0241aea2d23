// Package dist trains one model in many processes, on many GPUs and many
// machines, over MPI (Open MPI through cgo): a process started by
// mpirun is one rank of the job; a process started otherwise runs as the
// only rank, and every collective returns its input.
//
// Comm is the binding: rank and size, the local rank (the process's
// index among those on its machine, which chooses its GPU), allreduce
// of float32, float16 and float64 buffers, broadcast, allgather and
// barrier. Every collective has a deadline: a rank that waits longer
// than Comm.Timeout for the others ends the whole job (MPI_Abort) with
// a message naming itself and the collective, so that a rank that hangs
// or dies never leaves the others waiting. Abort does the same for an
// error.
//
// DataParallel is data-parallel training on top of it, as PyTorch's
// DistributedDataParallel: every rank holds the whole model (rank 0's
// parameters and optimiser state, given to all by Comm.BroadcastTensors
// at the start), and after each backward the gradients are averaged
// across ranks in buckets, each bucket read back and reduced while the
// backward of the layers before it still runs.
//
// MPI is called from one goroutine of its own, locked to its thread
// (MPI_THREAD_FUNNELED); a Comm's methods may be called from any
// goroutine, its collectives in one order on every rank. Built
// without cgo (CGO_ENABLED=0, or for the browser), the package has the
// one-rank Comm only.
package dist
