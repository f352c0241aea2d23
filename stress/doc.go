// Package stress holds the tests of extensor's safety promises under load,
// on every backend: devices shared by many goroutines (run under -race by
// make test), tensors whose memory frees itself when they become
// unreachable, and a long training loop that never calls Release (make
// soak). It has no API.
package stress
