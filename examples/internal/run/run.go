// Package run holds what the training examples share: opening the device
// and the Fashion-MNIST data.
package run

import (
	"fmt"
	"io"

	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // registers "webgpu"
	"github.com/extensor/extensor/examples/internal/report"
)

// Open opens the named device ("auto", "webgpu" or "cpu"), prints it to
// w, and loads Fashion-MNIST from dir, with a progress bar on bar when it
// is a terminal (bar may be nil). The caller closes dev.
func Open(name, dir string, w, bar io.Writer) (dev device.Device, train, test *fashionmnist.Set, err error) {
	dev, err = device.Open(name)
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(w, "device: %s\n", dev)
	train, test, err = Load(dir, bar)
	if err != nil {
		dev.Close()
		return nil, nil, nil, err
	}
	return dev, train, test, nil
}

// Load loads Fashion-MNIST from dir, with a progress bar on bar when it is
// a terminal.
func Load(dir string, bar io.Writer) (train, test *fashionmnist.Set, err error) {
	return fashionmnist.LoadWith(dir, report.Loading(bar, "loading Fashion-MNIST"))
}
