//go:build js

package main

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
)

// config is the run the page's query asks for.
type config struct {
	epochs, batch, hidden, limit int
	lr                           float64
	seed                         uint64
	autostart, check             bool
	pauseAt                      int
}

// parseConfig reads the page's query: examples/mlp's defaults (5 epochs)
// where a key is absent, an error naming the key where its value is bad.
func parseConfig(q url.Values) (config, error) {
	c := config{epochs: 5, batch: 128, hidden: 256, lr: 0.1, seed: 2}
	ints := []struct {
		key string
		v   *int
	}{{"epochs", &c.epochs}, {"batch", &c.batch}, {"hidden", &c.hidden}, {"limit", &c.limit}, {"pauseat", &c.pauseAt}}
	for _, f := range ints {
		if s := q.Get(f.key); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return c, fmt.Errorf("?%s=%s: want a count ≥ 0", f.key, s)
			}
			*f.v = n
		}
	}
	if c.epochs < 1 || c.batch < 1 || c.hidden < 1 {
		return c, fmt.Errorf("?epochs=%d&batch=%d&hidden=%d: want each ≥ 1", c.epochs, c.batch, c.hidden)
	}
	if c.batch > maxBatch || c.hidden > maxHidden || c.epochs > maxEpochs {
		return c, fmt.Errorf("?epochs=%d&batch=%d&hidden=%d: want at most %d epochs, a batch of at most %d (the training set) and %d hidden units", c.epochs, c.batch, c.hidden, maxEpochs, maxBatch, maxHidden)
	}
	if s := q.Get("lr"); s != "" {
		lr, err := strconv.ParseFloat(s, 64)
		if err != nil || !(lr >= 0) || math.IsInf(lr, 0) {
			return c, fmt.Errorf("?lr=%s: want a finite learning rate ≥ 0", s)
		}
		c.lr = lr
	}
	if s := q.Get("seed"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return c, fmt.Errorf("?seed=%s: %v", s, err)
		}
		c.seed = seed
	}
	c.autostart, c.check = q.Get("autostart") == "1", q.Get("check") == "1"
	return c, nil
}

// The largest run the page takes: a batch no larger than Fashion-MNIST's
// training set (a larger one would train no step), and sizes whose
// tensors fit a browser's memory.
const (
	maxBatch  = 60000
	maxHidden = 1 << 16
	maxEpochs = 1000
)
