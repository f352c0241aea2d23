package main

import (
	"fmt"
	"image"
	"time"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/gpt/model"
	"github.com/extensor/extensor/examples/internal/dashboard"
	"github.com/extensor/extensor/tensor"
)

// Screen is a live window for the dashboard (package window's Window).
type Screen = dashboard.Screen

// The attention map the dashboard shows: this block's head, for the
// first validation window.
const (
	mapLayer = 0
	mapHead  = 0
)

// viewer draws the dashboard for -snapshot and -window, paced so that it
// costs little training time, and accounts for that time.
type viewer struct {
	dashboard.Pacer
	d       *dashboard.Dashboard
	window  *tensor.Tensor // the first validation window, [1, Context]
	onFrame func(*image.RGBA, dashboard.LM)
	sample  string
}

func newViewer(cfg Config, dev device.Device, val []int32) (*viewer, error) {
	v := &viewer{Pacer: dashboard.Pacer{Snapshot: cfg.Snapshot, Every: cfg.SnapshotEvery, Win: cfg.Window}, onFrame: cfg.OnFrame}
	if cfg.Snapshot == "" && cfg.Window == nil {
		return v, nil
	}
	d, err := dashboard.New(dev)
	if err != nil {
		return nil, err
	}
	w, err := tensor.FromInt32(dev, val[:cfg.Model.Context], 1, cfg.Model.Context)
	if err != nil {
		d.Release()
		return nil, err
	}
	v.d, v.window = d, w
	return v, nil
}

// due reports whether a frame should be drawn after step.
func (v *viewer) due(step int) bool { return v.d != nil && v.Due(step) }

// frame draws the run so far, shows it and writes the snapshot (when due
// every few steps, or final).
func (v *viewer) frame(net *model.GPT, res *Result, step int, final bool) error {
	start := time.Now()
	var err error
	tensor.Tidy(func(sc *tensor.Scope) *tensor.Tensor {
		val, at := make([]float64, len(res.Evals)), make([]int, len(res.Evals))
		for i, e := range res.Evals {
			val[i], at[i] = e.Loss, e.Step
		}
		s := dashboard.LM{Title: fmt.Sprintf("extensor GPT on Go source: step %d", step), Losses: res.Losses, Val: val, ValSteps: at,
			AttentionLabel: fmt.Sprintf("block %d, head %d, a validation window", mapLayer, mapHead), Sample: v.sample}
		if n := len(res.Losses); n > 0 {
			s.Title += fmt.Sprintf(", loss %.3f", res.Losses[n-1])
		}
		if step > 0 {
			s.Attention = net.AttentionMap(autograd.Leaf(sc.Use(v.window), false), mapLayer, mapHead)
		}
		if err = v.d.DrawLM(s); err != nil {
			return nil
		}
		if v.onFrame != nil {
			var img *image.RGBA
			if img, err = v.d.Image(); err == nil {
				v.onFrame(img, s)
			}
		}
		return nil
	})
	if err == nil && v.Win != nil {
		v.Win.Show(v.d.Canvas())
	}
	if err == nil && v.Snapshot != "" && (final || v.Every > 0) {
		err = v.d.Snapshot(v.Snapshot)
	}
	v.Drawn(start)
	return err
}

// release stops showing the dashboard and frees it.
func (v *viewer) release() {
	if v.d == nil {
		return
	}
	if v.Win != nil {
		v.Win.Show(nil)
	}
	v.d.Release()
	v.window.Release()
}
