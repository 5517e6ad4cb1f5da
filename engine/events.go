package engine

import "time"

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
)

// Event is one progress report.
type Event struct {
	Kind     EventKind
	Phase    string
	Status   string // for EventDone
	Reasons  []string
	Duration time.Duration
	Err      error  // for failed phases
	Message  string // for warnings
	Time     time.Time
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
