// Package events is what the web example's page reports to its server
// (POST /report, one JSON Event a request): the server prints the events,
// and the example's test reads them.
package events

import (
	"fmt"
	"strconv"
)

// Event is one report of the page.
type Event struct {
	Event     string   `json:"event"` // device, started, paused, resumed, step, epoch, check, done, error
	Text      string   `json:"text,omitempty"`
	Step      int      `json:"step,omitempty"` // steps done
	Epoch     int      `json:"epoch,omitempty"`
	Loss      float64  `json:"loss,omitempty"`      // the step's, or the epoch's mean
	Accuracy  float64  `json:"accuracy,omitempty"`  // test accuracy after the epoch
	MsPerStep float64  `json:"msPerStep,omitempty"` // training time per step so far
	Problems  []string `json:"problems,omitempty"`  // how the canvas fails to show the frame
}

// String formats e as the server prints it, its text with any control
// characters escaped (a report must not write to the server's terminal).
func (e Event) String() string {
	switch e.Event {
	case "device", "error":
		return fmt.Sprintf("page: %s: %s", e.Event, printable(e.Text))
	case "step":
		return fmt.Sprintf("page: epoch %d, step %d: loss %.4f (%.1f ms/step)", e.Epoch, e.Step, e.Loss, e.MsPerStep)
	case "epoch":
		return fmt.Sprintf("page: epoch %d: train loss %.4f, test accuracy %.2f%%, %.1f ms/step", e.Epoch, e.Loss, 100*e.Accuracy, e.MsPerStep)
	case "check":
		if len(e.Problems) == 0 {
			return "page: the canvas shows the frame drawn"
		}
		return fmt.Sprintf("page: the canvas does not show the frame drawn: %q", e.Problems)
	}
	return fmt.Sprintf("page: %s at step %d", printable(e.Event), e.Step)
}

// printable returns s with control characters and invalid UTF-8 escaped
// as Go would quote them, the rest as it is.
func printable(s string) string {
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}
