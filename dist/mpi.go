//go:build cgo

package dist

// The binding to MPI. Every call runs on one goroutine locked to its OS
// thread, the thread that initialised MPI (MPI_THREAD_FUNNELED); the
// collectives are the non-blocking ones, tested until they finish or
// their deadline passes, so that no call waits without bound.

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdint.h>
#include <string.h>

static MPI_Request ex_req;  // the collective in flight (one at a time)
static MPI_Op ex_halfsum_op;

// ex_halfsum adds float16 values (their bits), each sum rounded to
// float16.
static void ex_halfsum(void *in, void *inout, int *len, MPI_Datatype *dt) {
	const uint16_t *a = in;
	uint16_t *b = inout;
	for (int i = 0; i < *len; i++) {
		_Float16 x, y, z;
		memcpy(&x, &a[i], 2);
		memcpy(&y, &b[i], 2);
		z = (_Float16)((float)x + (float)y);
		memcpy(&b[i], &z, 2);
	}
}

static int ex_init(int *rank, int *size, int *local, int *local_size, int *provided) {
	int rc;
	if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided)) != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if ((rc = MPI_Comm_rank(MPI_COMM_WORLD, rank)) != MPI_SUCCESS) return rc;
	if ((rc = MPI_Comm_size(MPI_COMM_WORLD, size)) != MPI_SUCCESS) return rc;
	MPI_Comm node;
	if ((rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node)) != MPI_SUCCESS) return rc;
	MPI_Comm_rank(node, local);
	MPI_Comm_size(node, local_size);
	MPI_Comm_free(&node);
	return MPI_Op_create(ex_halfsum, 1, &ex_halfsum_op);
}

// The kinds of ex_iallreduce.
enum { ex_f32, ex_f64, ex_f16 };

static int ex_iallreduce(void *buf, int n, int kind) {
	switch (kind) {
	case ex_f32: return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &ex_req);
	case ex_f64: return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &ex_req);
	default: return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_UINT16_T, ex_halfsum_op, MPI_COMM_WORLD, &ex_req);
	}
}

static int ex_ibcast(void *buf, int n, int root) { return MPI_Ibcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD, &ex_req); }
static int ex_iallgather(void *send, void *recv, int n) { return MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD, &ex_req); }
static int ex_ibarrier(void) { return MPI_Ibarrier(MPI_COMM_WORLD, &ex_req); }
static int ex_test(int *done) { return MPI_Test(&ex_req, done, MPI_STATUS_IGNORE); }
static void ex_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
static int ex_finalize(void) { return MPI_Finalize(); }

static void ex_error(int rc, char *buf) {
	int n = 0;
	if (MPI_Error_string(rc, buf, &n) != MPI_SUCCESS) n = 0;
	buf[n] = 0;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// engine runs MPI calls on its thread.
type engine struct {
	calls chan func()
	abort chan int // an exit code: MPI_Abort at once, even mid-collective
}

// startMPI initialises MPI on a goroutine of its own and returns the
// world's layout.
func startMPI() (e *engine, rank, size, local, localSize int, err error) {
	e = &engine{calls: make(chan func()), abort: make(chan int, 1)}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // for good: this thread is MPI's
		var r, s, l, ls, provided C.int
		if rc := C.ex_init(&r, &s, &l, &ls, &provided); rc != C.MPI_SUCCESS {
			ready <- fmt.Errorf("dist: MPI_Init_thread: %s", mpiError(rc))
			return
		}
		if provided < C.MPI_THREAD_FUNNELED {
			ready <- fmt.Errorf("dist: MPI_Init_thread gave thread level %d; want MPI_THREAD_FUNNELED (%d) or more", int(provided), int(C.MPI_THREAD_FUNNELED))
			return
		}
		rank, size, local, localSize = int(r), int(s), int(l), int(ls)
		ready <- nil
		for {
			select {
			case f := <-e.calls:
				f()
			case code := <-e.abort:
				C.ex_abort(C.int(code))
			}
		}
	}()
	err = <-ready
	return e, rank, size, local, localSize, err
}

// mpiError is MPI's text for the return code rc.
func mpiError(rc C.int) string {
	buf := make([]byte, C.MPI_MAX_ERROR_STRING+1)
	C.ex_error(rc, (*C.char)(unsafe.Pointer(&buf[0])))
	for i, b := range buf {
		if b == 0 {
			return fmt.Sprintf("%s (MPI error %d)", buf[:i], int(rc))
		}
	}
	return fmt.Sprintf("MPI error %d", int(rc))
}

// run runs f on MPI's thread and returns its error.
func (e *engine) run(f func() error) error {
	done := make(chan error, 1)
	e.calls <- func() { done <- f() }
	return <-done
}

// collective starts a non-blocking collective on MPI's thread with
// start, keeping pins' pointers pinned while it runs, and tests it until
// it completes; past the deadline it calls expired, which ends the job.
func (e *engine) collective(c *Comm, what string, pins []unsafe.Pointer, start func() C.int) error {
	return e.run(func() error {
		var p runtime.Pinner
		defer p.Unpin()
		for _, ptr := range pins {
			if ptr != nil {
				p.Pin(ptr)
			}
		}
		if rc := start(); rc != C.MPI_SUCCESS {
			return fmt.Errorf("dist: rank %d of %d: %s: %s", c.rank, c.size, what, mpiError(rc))
		}
		timeout := c.Timeout()
		now := time.Now()
		deadline, spin := now.Add(timeout), now.Add(spinFor)
		pause := time.Microsecond
		for {
			var done C.int
			if rc := C.ex_test(&done); rc != C.MPI_SUCCESS {
				// The collective's state is unknown, its buffers perhaps
				// still MPI's: the job cannot go on.
				c.say(fmt.Sprintf("%s: %s", what, mpiError(rc)))
				C.ex_abort(1)
			}
			if done != 0 {
				return nil
			}
			select {
			case code := <-e.abort:
				C.ex_abort(C.int(code))
			default:
			}
			now := time.Now()
			if now.After(deadline) {
				c.say(fmt.Sprintf("%s: the other ranks did not join it within %v (Comm.Timeout)", what, timeout))
				C.ex_abort(1)
			}
			if now.After(spin) {
				time.Sleep(pause)
				pause = min(2*pause, maxPause)
			}
		}
	})
}

// A collective in flight is tested without pause for spinFor, then with
// pauses growing to maxPause, so that a rank waiting long for the others
// leaves the cores to them: MPI moves a collective's data only inside its
// calls (no progress thread), and each pause delays every step of the
// algorithm (docs/performance.md has what BenchmarkAllreduce measured
// of each choice).
const (
	spinFor  = 5 * time.Millisecond
	maxPause = 50 * time.Microsecond
)

// maxCount is the most elements one MPI call takes (its counts are C
// ints); longer buffers go in parts.
const maxCount = 1 << 30

func (e *engine) allreduce(c *Comm, what string, p unsafe.Pointer, n, elem int, kind C.int) error {
	for off := 0; off < n; off += maxCount {
		k := min(n-off, maxCount)
		q := unsafe.Add(p, off*elem)
		if err := e.collective(c, what, []unsafe.Pointer{q}, func() C.int { return C.ex_iallreduce(q, C.int(k), kind) }); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) allreduceFloat32(c *Comm, buf []float32) error {
	return e.allreduce(c, fmt.Sprintf("allreduce of %d float32 values", len(buf)), unsafe.Pointer(unsafe.SliceData(buf)), len(buf), 4, C.ex_f32)
}

func (e *engine) allreduceFloat64(c *Comm, buf []float64) error {
	return e.allreduce(c, fmt.Sprintf("allreduce of %d float64 values", len(buf)), unsafe.Pointer(unsafe.SliceData(buf)), len(buf), 8, C.ex_f64)
}

func (e *engine) allreduceFloat16(c *Comm, buf []uint16) error {
	return e.allreduce(c, fmt.Sprintf("allreduce of %d float16 values", len(buf)), unsafe.Pointer(unsafe.SliceData(buf)), len(buf), 2, C.ex_f16)
}

func (e *engine) broadcast(c *Comm, buf []byte, root int) error {
	p := unsafe.Pointer(unsafe.SliceData(buf))
	for off := 0; off < len(buf); off += maxCount {
		k := min(len(buf)-off, maxCount)
		q := unsafe.Add(p, off)
		if err := e.collective(c, fmt.Sprintf("broadcast of %d bytes from rank %d", len(buf), root), []unsafe.Pointer{q}, func() C.int { return C.ex_ibcast(q, C.int(k), C.int(root)) }); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) allgather(c *Comm, send, recv []byte) error {
	if len(send) > maxCount {
		return fmt.Errorf("dist: rank %d of %d: allgather of %d bytes a rank; want at most %d", c.rank, c.size, len(send), maxCount)
	}
	s, r := unsafe.Pointer(unsafe.SliceData(send)), unsafe.Pointer(unsafe.SliceData(recv))
	return e.collective(c, fmt.Sprintf("allgather of %d bytes a rank", len(send)), []unsafe.Pointer{s, r}, func() C.int { return C.ex_iallgather(s, r, C.int(len(send))) })
}

func (e *engine) barrier(c *Comm) error {
	return e.collective(c, "barrier", nil, func() C.int { return C.ex_ibarrier() })
}

func (e *engine) finalize(c *Comm) error {
	return e.run(func() error {
		if rc := C.ex_finalize(); rc != C.MPI_SUCCESS {
			return fmt.Errorf("dist: rank %d of %d: MPI_Finalize: %s", c.rank, c.size, mpiError(rc))
		}
		return nil
	})
}

// abortJob ends the job from MPI's thread, even while it tests a
// collective.
func (e *engine) abortJob(code int) {
	select {
	case e.abort <- code:
	default:
	}
}
