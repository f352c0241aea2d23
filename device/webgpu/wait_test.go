//go:build cgo || js

package webgpu

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// BenchmarkWaitParts takes bench's Sync (y += x on 64 elements, then a
// wait for the device) apart, reporting µs per round trip for each part:
//
//   - record: the op recorded into the open batch (no GPU work);
//   - params, finish, submit, callback: submit's steps (the kernels'
//     parameters written to the queue, the encoder finished, the command
//     buffer submitted, the work-done callback registered);
//   - done: from the submission's return until a non-blocking poll runs
//     its work-done callback, with polls/op the number of polls;
//   - total: all of them.
//
// Beside it: "empty", the same with nothing recorded (an empty command
// buffer); "block", one blocking poll of the submission instead of the
// spin; "idle-poll", one non-blocking poll of an idle device; "sync",
// the op and Device.Sync as bench's Sync runs them.
func BenchmarkWaitParts(b *testing.B) {
	d := openTB(b)
	defer d.Close()
	x, err := d.Alloc(device.Float32, 64)
	if err != nil {
		b.Fatal(err)
	}
	y, err := d.Alloc(device.Float32, 64)
	if err != nil {
		b.Fatal(err)
	}
	d.Axpy(y, x, 1) // compiles the kernel
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		op, block bool
	}{{"axpy", true, false}, {"empty", false, false}, {"block", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			var parts [7]time.Duration // record, params, finish, submit, callback, done, total
			polls := 0
			for range b.N {
				t0 := time.Now()
				if c.op {
					d.Axpy(y, x, 1)
				}
				t1 := time.Now()
				d.mu.Lock()
				t := waitParts(b, d, c.block, &polls)
				d.mu.Unlock()
				parts[0] += t1.Sub(t0)
				for i, dt := range t {
					parts[i+1] += dt
				}
				parts[6] += time.Since(t0)
			}
			for i, name := range []string{"record", "params", "finish", "submit", "callback", "done", "total"} {
				b.ReportMetric(float64(parts[i].Microseconds())/float64(b.N), name+"-µs/op")
			}
			b.ReportMetric(float64(polls)/float64(b.N), "polls/op")
		})
	}
	b.Run("idle-poll", func(b *testing.B) {
		for range b.N {
			d.dev.Poll(false, nil)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/op")
	})
	b.Run("sync", func(b *testing.B) {
		for range b.N {
			d.Axpy(y, x, 1)
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/op")
	})
}

// waitParts does what submit and wait do for a batch of plain kernels,
// timing each step: the parameters' write, the encoder's finish, the
// submission, the callback's registration, and the wait for the
// callback (a blocking poll of the submission with block, else polls
// without blocking, counted in polls). d.mu is held.
func waitParts(b *testing.B, d *Device, block bool, polls *int) (t [5]time.Duration) {
	start := time.Now()
	lap := func(i int) {
		now := time.Now()
		t[i] = now.Sub(start)
		start = now
	}
	enc := d.openEncoder()
	d.endPass()
	d.encoder = nil
	if len(d.params) > 0 {
		if err := d.queue.TryWriteBuffer(d.paramBuf, uint64(d.paramFrom), d.params); err != nil {
			b.Fatal(err)
		}
	}
	d.paramFrom += uint32(len(d.params))
	d.params, d.dispatches, d.labels = d.params[:0], 0, d.labels[:0]
	lap(0)
	cmd, err := enc.TryFinish(nil)
	if err != nil {
		b.Fatal(err)
	}
	enc.Release()
	lap(1)
	idx := d.queue.Submit(cmd)
	cmd.Release()
	lap(2)
	var done atomic.Bool
	d.queue.OnSubmittedWorkDone(func(wgpu.QueueWorkDoneStatus) { done.Store(true) })
	lap(3)
	if block {
		i := uint64(idx)
		d.dev.Poll(true, &i)
		if !done.Load() {
			d.dev.Poll(false, nil)
		}
	}
	for !done.Load() {
		d.dev.Poll(false, nil)
		*polls++
	}
	lap(4)
	return t
}
