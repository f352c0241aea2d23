// Package gputest opens the WebGPU device for tests under the project's
// policy: when CI=true a missing adapter fails the test; elsewhere the
// WebGPU half of a test is skipped, and says so.
package gputest
