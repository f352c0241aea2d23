//go:build unix

package checkpoint_test

// asksProcesses: Save can tell whether a temporary file's writer runs.
const asksProcesses = true
