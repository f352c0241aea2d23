// Package fuzzin turns a fuzzer's bytes into the small choices a fuzz test
// makes: integers in a range, one of a list.
package fuzzin

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
