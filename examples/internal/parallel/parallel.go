// Package parallel is the examples' part in a data-parallel job (-ddp,
// package dist): the rank's output, its share of each batch, the
// gradients' averages, the broadcast of rank 0's state, the metrics'
// reductions and the end of the job on an error.
package parallel

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/dist"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// Run is a training run's place in a job: one process alone (Comm nil),
// or a rank of the job mpirun started.
type Run struct {
	Comm *dist.Comm
	dp   *dist.DataParallel
	devs []device.Device // to close at the end, after the reductions
}

// Open returns the run's place: with ddp, its rank in the job an MPI
// launcher started (one rank when none did); without, one process.
func Open(ddp bool) (*Run, error) {
	if !ddp {
		return &Run{}, nil
	}
	c, err := dist.Init()
	if err != nil {
		return nil, err
	}
	return &Run{Comm: c}, nil
}

// Rank is the process's rank (0 alone).
func (r *Run) Rank() int {
	if r.Comm == nil {
		return 0
	}
	return r.Comm.Rank()
}

// Size is the number of ranks (1 alone).
func (r *Run) Size() int {
	if r.Comm == nil {
		return 1
	}
	return r.Comm.Size()
}

// Lead reports whether the process is rank 0: the one that prints,
// plots, samples and writes checkpoints.
func (r *Run) Lead() bool { return r.Rank() == 0 }

// Share sets this rank's part of the next step's batch: local of the
// global batch's examples, its weight in the gradients' average. Call it
// before the step's backward.
func (r *Run) Share(local, global int) {
	if r.dp != nil {
		r.dp.SetWeight(float64(local) / float64(global))
	}
}

// Reduce waits for the gradients of this step, averaged across the
// ranks (Share).
func (r *Run) Reduce() error {
	if r.dp == nil {
		return nil
	}
	return r.dp.Wait()
}

// Begin gives every rank rank 0's state (a checkpoint's tensors, the
// optimiser's among them) and the optimiser's step count, and averages
// the optimiser's parameters' gradients across the ranks from then on
// (Reduce). Alone, it does nothing.
func (r *Run) Begin(state map[string]*tensor.Tensor, opt *optim.Optimizer) error {
	if r.Size() == 1 {
		return nil
	}
	if err := r.Comm.BroadcastTensors(state, 0); err != nil {
		return err
	}
	steps, err := r.Comm.BroadcastInt(opt.Steps(), 0)
	if err != nil {
		return err
	}
	opt.SetSteps(steps)
	r.dp, err = dist.NewDataParallel(r.Comm, opt.Params(), 0)
	return err
}

// Sum returns the sums of vs across the ranks (each rank's losses
// weighted by its share, say).
func (r *Run) Sum(vs []float64) ([]float64, error) {
	if r.Size() == 1 {
		return vs, nil
	}
	return vs, r.Comm.AllreduceFloat64(vs)
}

// Own makes dev the run's to close when it ends, after the reductions
// that may still read it.
func (r *Run) Own(dev device.Device) { r.devs = append(r.devs, dev) }

// End ends the run's part in the job; the training defers it with the
// address of its error. An error, or a panic, ends the whole job when
// there are other ranks (so that none waits for this one); otherwise
// the reducing goroutine, MPI and the devices Own was given end, and
// Close's error, if any, is the training's. A panic goes on after.
func (r *Run) End(err *error) {
	if p := recover(); p != nil {
		if r.Size() > 1 {
			r.Comm.Abort(fmt.Errorf("panic: %v", p))
		}
		r.Close()
		panic(p)
	}
	if *err != nil && r.Size() > 1 {
		r.Comm.Abort(*err)
	}
	if e := r.Close(); *err == nil {
		*err = e
	}
}

// Gather returns, on every rank, the parts of n items that the ranks
// hold (dataset/loader.Part's), joined in rank order; part is this
// rank's.
func (r *Run) Gather(part []int32, n int) ([]int32, error) {
	if r.Size() == 1 {
		return part, nil
	}
	lo, hi := loader.Part(n, r.Rank(), r.Size())
	if len(part) != hi-lo {
		return nil, fmt.Errorf("parallel: Gather of %d items by rank %d, whose part of %d is %d", len(part), r.Rank(), n, hi-lo)
	}
	width := (n + r.Size() - 1) / r.Size() // the largest part
	buf := make([]byte, 4*width)
	for i, v := range part {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(v))
	}
	all, err := r.Comm.Allgather(buf)
	if err != nil {
		return nil, err
	}
	out := make([]int32, 0, n)
	for rank := range r.Size() {
		lo, hi := loader.Part(n, rank, r.Size())
		for i := range hi - lo {
			out = append(out, int32(binary.LittleEndian.Uint32(all[4*(rank*width+i):])))
		}
	}
	return out, nil
}

// Report prints what the reductions measured, the first step left out:
// the bytes a step reduced, and the share of the step that the
// allreduce took and how much of it passed while the device still
// computed the backward.
func (r *Run) Report(w io.Writer) {
	if r.dp == nil {
		return
	}
	s := r.dp.Stats()
	if s.Intervals == 0 {
		return
	}
	n := float64(s.Steps)
	step := s.Interval.Seconds() / float64(s.Intervals)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / n }
	fmt.Fprintf(w, "ddp: %d ranks; a step of %.1f ms reduced %.3f MB of gradients in %.0f buckets: readback %.2f ms, allreduce %.2f ms (%.1f%% of the step), upload %.2f ms; %.0f%% of the allreduce and upload while the device computed the backward; Wait waited %.2f ms\n",
		r.Size(), step*1e3, float64(s.Bytes)/n/1e6, float64(s.Buckets)/n, ms(s.Readback), ms(s.Allreduce), 100*s.Allreduce.Seconds()/n/step, ms(s.Upload),
		100*s.Overlap.Seconds()/max((s.Allreduce+s.Upload).Seconds(), 1e-12), ms(s.Waiting))
}

// ResetStats starts the measurement of Report again.
func (r *Run) ResetStats() {
	if r.dp != nil {
		r.dp.ResetStats()
	}
}

// Close ends the run's part: the reducing goroutine, MPI's, then the
// devices Own was given.
func (r *Run) Close() error {
	if r.dp != nil {
		r.dp.Close()
		r.dp = nil
	}
	var err error
	if r.Comm != nil {
		err = r.Comm.Finalize()
	}
	for _, d := range r.devs {
		d.Close()
	}
	r.devs = nil
	return err
}
