package report

import (
	"strings"

	"github.com/cairn-run/cairn/runrec"
)

// notInRun is the pseudo-status of a phase of the spec that the run did
// not include.
const notInRun = "not in run"

// style is how a status is drawn: a box's fill, border and text colours,
// and a dashed border for phases that did nothing.
type style struct {
	Fill, Stroke, Text string
	Dashed             bool
}

// styles maps each phase status to its colours. Reds and oranges are the
// statuses that need a look; blues and greens are results.
var styles = map[string]style{
	runrec.StatusSucceeded:  {"#dcf2dc", "#2f7d32", "#1b4d1e", false},
	runrec.StatusCached:     {"#dbe8f8", "#2b63a6", "#173a63", false},
	runrec.StatusRestored:   {"#d9f1ef", "#1f7a72", "#134a45", false},
	runrec.StatusRunning:    {"#fff4c2", "#a77b00", "#5c4400", false},
	runrec.StatusPending:    {"#ffffff", "#8a8f98", "#4a4f57", true},
	runrec.StatusFailed:     {"#fbd9d6", "#b3261e", "#7a1712", false},
	runrec.StatusTimedOut:   {"#fde3c8", "#b45309", "#713305", false},
	runrec.StatusOverBudget: {"#eadcf8", "#6b3fa0", "#44256a", false},
	runrec.StatusBlocked:    {"#f3eee0", "#8d7b4a", "#564a2a", false},
	runrec.StatusSkipped:    {"#f2f2f2", "#9a9a9a", "#555555", true},
	runrec.StatusStopped:    {"#fff0d6", "#a66300", "#663d00", false},
	notInRun:                {"#ffffff", "#c4c7cc", "#8a8f98", true},
}

// statusOrder is the order of the legend and of the count line.
var statusOrder = []string{
	runrec.StatusSucceeded, runrec.StatusCached, runrec.StatusRestored,
	runrec.StatusRunning, runrec.StatusPending,
	runrec.StatusFailed, runrec.StatusTimedOut, runrec.StatusOverBudget,
	runrec.StatusBlocked, runrec.StatusSkipped, runrec.StatusStopped,
	notInRun,
}

// unknownStyle draws a status this version does not know (a record
// written by a newer cairn).
var unknownStyle = style{"#eeeeee", "#666666", "#333333", false}

func styleOf(status string) style {
	if s, ok := styles[status]; ok {
		return s
	}
	return unknownStyle
}

// statusLabel is a status as shown to people: "timed_out" -> "timed out".
func statusLabel(status string) string {
	if status == "" {
		return "unknown"
	}
	return strings.ReplaceAll(status, "_", " ")
}

// bad reports whether a status is one whose logs the reader will want
// open: the phase did not finish well.
func bad(status string) bool {
	switch status {
	case runrec.StatusFailed, runrec.StatusTimedOut, runrec.StatusOverBudget, runrec.StatusStopped:
		return true
	}
	return false
}
