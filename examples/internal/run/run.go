// Package run holds what the training examples share: opening the device
// and the Fashion-MNIST data, checking where a run writes, and catching
// a run's programmer errors.
package run

import (
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"path/filepath"

	"github.com/extensor/extensor/checkpoint"

	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // registers "webgpu"
	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
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

// Writable makes the directory of each path given (by its flag's name)
// and checks that a file can be written there, before a run starts: a
// path that cannot be written is an error naming its flag. Empty paths
// are skipped.
func Writable(paths map[string]string) error {
	for flag, path := range paths {
		if path == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("%s %s: %w", flag, path, err)
		}
		if err := checkpoint.Writable(path); err != nil {
			return fmt.Errorf("%s %s: %w", flag, path, err)
		}
	}
	return nil
}

// NoArgs returns an error naming the arguments that fs parsed no flag
// from: the commands take flags only.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: the command takes flags only (-h lists them)", fs.Args())
	}
	return nil
}

// Caught runs f and returns its error, or the programmer error (a
// *tensor.Error) it panicked with: one line, and on a window's training
// goroutine no end of the process.
func Caught(f func() error) (err error) {
	if perr := tensor.Maybe(func() { err = f() }); perr != nil {
		return perr
	}
	return err
}

// Main is a command's main: it parses the command line's flags (defined
// on flag.CommandLine before), refuses arguments that are not flags, and
// runs body (Caught); an error ends the process, named as the command.
func Main(name string, body func() error) {
	flag.Parse()
	log.SetFlags(0)
	err := NoArgs(flag.CommandLine)
	if err == nil {
		err = Caught(body)
	}
	if err != nil {
		log.Fatalf("%s: %v", name, err)
	}
}

// Model is what a checkpoint of a model holds of it: its parameters by
// name (nn.Sequential's, examples/gpt's model).
type Model interface {
	StateDict() map[string]*tensor.Tensor
	ParamNames() []string
}

// State is what the examples' checkpoints hold: the model's parameters,
// and the optimiser's state of each as "optim.<name>.<m|v|momentum>".
func State(net Model, opt *optim.Optimizer) (map[string]*tensor.Tensor, error) {
	names := net.ParamNames()
	for i := range names {
		names[i] = "optim." + names[i]
	}
	all := net.StateDict()
	st, err := opt.StateDict(names)
	if err != nil {
		return nil, err
	}
	maps.Copy(all, st)
	return all, nil
}
