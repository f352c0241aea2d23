//go:build js

package main

import (
	"net/url"
	"strings"
	"testing"
)

// TestParseConfig: the query's defaults, its values, and an error naming
// the key of each bad one (make wasm runs it under Node.js).
func TestParseConfig(t *testing.T) {
	c, err := parseConfig(url.Values{})
	if err != nil || c != (config{epochs: 5, batch: 128, hidden: 256, lr: 0.1, seed: 2}) {
		t.Errorf("no query: %+v, %v; want the defaults", c, err)
	}
	q, _ := url.ParseQuery("epochs=1&batch=64&hidden=32&limit=640&lr=0.05&seed=7&autostart=1&pauseat=20&check=1")
	c, err = parseConfig(q)
	if want := (config{epochs: 1, batch: 64, hidden: 32, limit: 640, lr: 0.05, seed: 7, autostart: true, check: true, pauseAt: 20}); err != nil || c != want {
		t.Errorf("%v: %+v, %v; want %+v", q, c, err, want)
	}
	for _, bad := range []struct{ query, names string }{
		{"epochs=0", "epochs"},
		{"batch=-1", "batch"},
		{"hidden=x", "hidden"},
		{"limit=1.5", "limit"},
		{"pauseat=-3", "pauseat"},
		{"lr=-0.1", "lr"},
		{"lr=NaN", "lr"},
		{"lr=Inf", "lr"},
		{"seed=-1", "seed"},
	} {
		q, _ := url.ParseQuery(bad.query)
		if _, err := parseConfig(q); err == nil || !strings.Contains(err.Error(), bad.names) {
			t.Errorf("?%s: %v; want an error naming %s", bad.query, err, bad.names)
		}
	}
}
