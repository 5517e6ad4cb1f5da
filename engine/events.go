package engine

import (
	"time"

	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/runrec"
)

// EventKind says what happened to a phase.
type EventKind int

const (
	// EventStart: the phase's command started.
	EventStart EventKind = iota
	// EventDone: the phase reached a final status (cached, restored,
	// succeeded, failed, blocked, skipped, stopped).
	EventDone
	// EventWarning: something the user should know that did not fail the
	// phase (a corrupt cache entry moved aside, ...).
	EventWarning
	// EventStopping: the run will start no new phase (Message holds the
	// reason: interrupt, stop request, budget).
	EventStopping
	// EventRetry: a phase failed or timed out and will run again
	// (Message says when and why).
	EventRetry
	// EventSpend: a running phase reported spending (Spend holds its
	// total so far).
	EventSpend
	// EventBegin: the run started; Message holds its id and Phases the
	// phases it selected, in the spec's order. Each of them gets one
	// EventDone, except those still pending when the run ends early
	// (recorded as skipped).
	EventBegin
	// EventRemoved: a temporary output of the phase (Message, its path)
	// was removed, every phase of the run reading it having succeeded.
	EventRemoved
	// EventEstimate: the run's first command is about to start;
	// Estimates holds the estimate of each phase not settled yet (each
	// assumed to run) and Total their sum.
	EventEstimate
)

// Event is one progress report.
type Event struct {
	Kind     EventKind
	Phase    string
	Status   string // for EventDone
	Reasons  []string
	Duration time.Duration
	Err      error        // for failed phases
	Message  string       // for warnings, stops and retries
	Attempt  int          // for EventStart and EventRetry
	Spend    runrec.Spend // the phase's spending so far (EventSpend, EventDone)
	Phases   []string     // for EventBegin
	// Estimate is the phase's (EventStart); Estimates and Total the
	// run's (EventEstimate).
	Estimate  *estimate.Estimate
	Estimates map[string]*estimate.Estimate
	Total     *estimate.Total
	Time      time.Time
}

// Reporter receives progress. Implementations must be safe for concurrent
// use; the engine calls them from the goroutines running phases.
type Reporter interface {
	Report(Event)
}

// NopReporter discards events.
type NopReporter struct{}

// Report implements Reporter.
func (NopReporter) Report(Event) {}
