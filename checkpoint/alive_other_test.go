//go:build !unix

package checkpoint_test

// asksProcesses: Save cannot tell whether a temporary file's writer runs
// (processes cannot be asked about), so it leaves every one alone.
const asksProcesses = false
