// Package mpitest runs a test binary as the ranks of an MPI job on this
// machine: the test starts mpirun on its own binary with a mode, and the
// binary's TestMain, seeing the mode (Mode), runs that rank's part
// instead of the tests.
package mpitest
