package dist

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/extensor/extensor/device"
)

// Comm is the job's processes: the ranks an MPI launcher started, or
// this process alone. Its collectives are made by every rank in the same
// order, with buffers of the same length (so, from goroutines of one
// rank, in an order the program fixes: none while a DataParallel
// reduces, between a Backward's first grad hook and Wait); each returns
// once every rank has made it, and ends the job (as Abort) when the
// others have not joined it within Timeout.
type Comm struct {
	rank, size       int
	local, localSize int
	timeout          atomic.Int64 // nanoseconds
	e                *engine      // nil: one rank
	mu               sync.Mutex
	final            bool
}

// DefaultTimeout is how long a collective waits for the other ranks
// unless Comm.SetTimeout or EXTENSOR_DIST_TIMEOUT says otherwise: as
// long as PyTorch's process groups wait, since a rank may compile
// kernels for minutes before its first collective.
const DefaultTimeout = 10 * time.Minute

// EnvTimeout overrides DefaultTimeout: a duration such as "30s".
const EnvTimeout = "EXTENSOR_DIST_TIMEOUT"

var (
	world     *Comm
	worldErr  error
	worldOnce sync.Once
)

// Init returns the job's Comm, initialising MPI on its first call when
// an MPI launcher (mpirun, mpiexec, srun) started the process; otherwise
// the Comm of one rank. It sets device.EnvLocalRank to the local rank, so that
// device.Open takes this rank's GPU. Later calls return the
// same Comm; after Finalize, an error.
func Init() (*Comm, error) {
	worldOnce.Do(func() {
		c := &Comm{size: 1, localSize: 1}
		timeout := DefaultTimeout
		if s := os.Getenv(EnvTimeout); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				worldErr = fmt.Errorf("dist: %s=%q; want a positive duration such as 30s", EnvTimeout, s)
				return
			}
			timeout = d
		}
		c.timeout.Store(int64(timeout))
		if Launched() {
			e, rank, size, local, localSize, err := startMPI()
			if err != nil {
				worldErr = err
				return
			}
			c.e, c.rank, c.size, c.local, c.localSize = e, rank, size, local, localSize
		}
		if os.Getenv(device.EnvLocalRank) == "" || c.e != nil {
			os.Setenv(device.EnvLocalRank, strconv.Itoa(c.local))
		}
		world = c
	})
	if worldErr != nil {
		return nil, worldErr
	}
	world.mu.Lock()
	defer world.mu.Unlock()
	if world.final {
		return nil, errors.New("dist: Init after Finalize (MPI starts once a process)")
	}
	return world, nil
}

// Launched reports whether an MPI launcher started the process: Open
// MPI's, MPICH's (Hydra) or a PMIx one (Slurm's srun) sets the variables
// it reads.
func Launched() bool {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// Rank is the process's index in the job, from 0.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.size }

// LocalRank is the process's index among the job's ranks on its machine.
func (c *Comm) LocalRank() int { return c.local }

// LocalSize is the number of the job's ranks on the process's machine.
func (c *Comm) LocalSize() int { return c.localSize }

// String describes the rank, e.g. "rank 1 of 4 (local 1 of 2)".
func (c *Comm) String() string {
	return fmt.Sprintf("rank %d of %d (local %d of %d)", c.rank, c.size, c.local, c.localSize)
}

// Timeout is how long a collective waits for the other ranks.
func (c *Comm) Timeout() time.Duration { return time.Duration(c.timeout.Load()) }

// SetTimeout sets Timeout; d must be positive.
func (c *Comm) SetTimeout(d time.Duration) {
	if d <= 0 {
		panic(fmt.Sprintf("dist: Comm.SetTimeout(%v); want a positive duration", d))
	}
	c.timeout.Store(int64(d))
}

// usable returns an error after Finalize.
func (c *Comm) usable(what string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.final {
		return fmt.Errorf("dist: %s after Finalize", what)
	}
	return nil
}

// call runs the collective what with f: nothing alone, an error after
// Finalize.
func (c *Comm) call(what string, f func() error) error {
	if c.e == nil {
		return nil
	}
	if err := c.usable(what); err != nil {
		return err
	}
	return f()
}

// AllreduceFloat32 replaces buf, on every rank, by the sum of every
// rank's buf. Every rank receives the same bits.
func (c *Comm) AllreduceFloat32(buf []float32) error {
	return c.call("AllreduceFloat32", func() error { return c.e.allreduceFloat32(c, buf) })
}

// AllreduceFloat64 is AllreduceFloat32 for float64 values (metrics).
func (c *Comm) AllreduceFloat64(buf []float64) error {
	return c.call("AllreduceFloat64", func() error { return c.e.allreduceFloat64(c, buf) })
}

// AllreduceFloat16 is AllreduceFloat32 for float16 values, given as
// their bits (IEEE binary16): each partial sum is computed in float32 and
// rounded to float16, so that the buffers move at 2 bytes a value.
func (c *Comm) AllreduceFloat16(buf []uint16) error {
	return c.call("AllreduceFloat16", func() error { return c.e.allreduceFloat16(c, buf) })
}

// Broadcast replaces buf, on every rank, by root's.
func (c *Comm) Broadcast(buf []byte, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("dist: Broadcast from rank %d of a job of %d ranks", root, c.size)
	}
	return c.call("Broadcast", func() error { return c.e.broadcast(c, buf, root) })
}

// Allgather returns every rank's send (all of one length), in rank
// order, on every rank.
func (c *Comm) Allgather(send []byte) ([]byte, error) {
	recv := make([]byte, len(send)*c.size)
	if c.e == nil {
		copy(recv, send)
		return recv, nil
	}
	if err := c.usable("Allgather"); err != nil {
		return nil, err
	}
	if len(send) == 0 {
		return recv, c.e.barrier(c)
	}
	return recv, c.e.allgather(c, send, recv)
}

// Barrier returns once every rank has called it.
func (c *Comm) Barrier() error {
	return c.call("Barrier", func() error { return c.e.barrier(c) })
}

// Finalize ends the process's part in the job (MPI_Finalize, which waits
// for the other ranks, without a deadline: a rank that fails calls
// Abort instead): call it once, at the end, on every rank. The Comm is
// unusable after it.
func (c *Comm) Finalize() error {
	c.mu.Lock()
	if c.final {
		c.mu.Unlock()
		return nil
	}
	c.final = true
	c.mu.Unlock()
	if c.e == nil {
		return nil
	}
	return c.e.finalize(c)
}

// Abort prints err, naming the rank, to standard error and ends the
// whole job with exit code 1: with MPI, every rank (MPI_Abort); alone,
// this process. It does not return.
func (c *Comm) Abort(err error) {
	c.say(err.Error())
	c.mu.Lock()
	final := c.final
	c.mu.Unlock()
	if c.e != nil && !final {
		c.e.abortJob(1)
		time.Sleep(10 * time.Second) // MPI_Abort ends the process meanwhile
	}
	os.Exit(1)
}

// say prints msg to standard error, naming the rank.
func (c *Comm) say(msg string) {
	fmt.Fprintf(os.Stderr, "dist: rank %d of %d: %s; ending the job\n", c.rank, c.size, msg)
}
