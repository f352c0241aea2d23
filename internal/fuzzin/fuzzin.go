// Package fuzzin turns a fuzzer's bytes into the small choices a fuzz test
// makes: integers in a range, one of a list; and FuzzCommandLine, a
// fuzzer of a command's flags.
package fuzzin

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// Bytes hands out the fuzzer's bytes one choice at a time.
type Bytes []byte

// Next returns an integer in [lo, hi] from the next byte, or lo when the
// bytes are used up: the fuzzer's shortest inputs take each first choice.
func (f *Bytes) Next(lo, hi int) int {
	if len(*f) == 0 {
		return lo
	}
	b := (*f)[0]
	*f = (*f)[1:]
	return lo + int(b)%(hi-lo+1)
}

// Pick returns one of vs, by the next byte (the first when the bytes are
// used up).
func Pick[E any](f *Bytes, vs ...E) E { return vs[f.Next(0, len(vs)-1)] }

// hostileValues are the values args gives flags: counts at and past
// their ranges, special and malformed numbers, empty and odd strings.
var hostileValues = []string{
	"0", "1", "2", "-1", "3", "-2", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
	"4294967296", "1099511627776", "NaN", "Inf", "-Inf", "1e400", "-0", "0.5", "1e-300", "0x10", "",
	"abc", "true", "false", " 1", "1_000",
}

// args returns a command line of up to eight flags named from names
// (without the dash), each with a hostile value, as -name=value, -name
// value or -name alone; now and then a stray argument or an unknown flag.
func args(f *Bytes, names ...string) []string {
	var args []string
	for range f.Next(0, 8) {
		name := "-" + Pick(f, names...)
		v := Pick(f, hostileValues...)
		switch f.Next(0, 5) {
		case 0, 1, 2:
			args = append(args, name+"="+v)
		case 3:
			args = append(args, name, v)
		case 4:
			args = append(args, name)
		default:
			args = append(args, Pick(f, "--", "-no-such-flag", "stray", "-h"))
		}
	}
	return args
}

// A Command is what FuzzCommandLine checks of a command whose flags are
// parsed: Check, its configuration check, whose errors name a flag unless
// Unnamed (if set) excuses them; Accepted, what must hold of a
// configuration that Check accepts.
type Command struct {
	Check    func() error
	Unnamed  func(error) bool
	Accepted func() error
}

// commandLineSeeds are seeds of FuzzCommandLine: no flags, one, and
// several of each form.
var commandLineSeeds = [][]byte{
	{}, {1, 0, 5, 0}, {1, 1, 5, 0}, {3, 1, 7, 0, 2, 8, 1, 4, 11, 3}, {3, 2, 7, 0, 3, 8, 1, 4, 11, 3}, {2, 3, 3, 0, 6, 2, 2},
	{2, 12, 20, 0, 6, 2, 2}, {4, 0, 1, 5, 4, 13, 0, 8, 0, 5, 6, 0, 0}, {4, 0, 1, 5, 4, 13, 0, 8, 0, 9, 19, 0, 0},
	{3, 10, 6, 0, 11, 1, 0, 13, 7, 0}, {2, 21, 10, 0, 22, 12, 0},
}

// FuzzCommandLine fuzzes a command's flags: each input is a hostile
// command line (args over the flags that define defines on a fresh flag
// set, messages discarded), parsed in a directory of its own (where
// Check may make and try the paths it is given). A line that parses with
// no stray argument is given to the command's Check; its error must name
// one of the flags, as -name (unless Unnamed excuses it), and a
// configuration it accepts must pass Accepted. Nothing may panic.
func FuzzCommandLine(f *testing.F, name string, defines func(fs *flag.FlagSet) Command) {
	for _, seed := range commandLineSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		t.Chdir(t.TempDir())
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c := defines(fs)
		var names []string
		fs.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
		in := Bytes(data)
		line := args(&in, names...)
		if fs.Parse(line) != nil || fs.NArg() > 0 {
			return
		}
		if err := c.Check(); err != nil {
			named := slices.ContainsFunc(names, func(n string) bool { return strings.Contains(err.Error(), "-"+n) })
			if !named && (c.Unnamed == nil || !c.Unnamed(err)) {
				t.Fatalf("%q: %v names no flag", line, err)
			}
			return
		}
		if err := c.Accepted(); err != nil {
			t.Fatalf("%q: Check accepted it, but %v", line, err)
		}
	})
}
