package progress

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/estimate"
)

// jsonView prints one JSON object per event, for machines, and a summary
// object last.
type jsonView struct {
	mu  sync.Mutex
	enc *json.Encoder
}

var _ View = (*jsonView)(nil)

func newJSONView(w io.Writer) *jsonView { return &jsonView{enc: json.NewEncoder(w)} }

type jsonEvent struct {
	Time       time.Time `json:"time"`
	Event      string    `json:"event"`
	Phase      string    `json:"phase,omitempty"`
	Status     string    `json:"status,omitempty"`
	Reasons    []string  `json:"reasons,omitempty"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Attempt    int       `json:"attempt,omitempty"`
	Cost       float64   `json:"cost,omitempty"`
	Iterations int64     `json:"iterations,omitempty"`
	Error      string    `json:"error,omitempty"`
	Message    string    `json:"message,omitempty"`
	// Estimate is a starting phase's; Estimates and Total those of the
	// run's unsettled phases, in the "estimate" event.
	Estimate  *estimate.Estimate            `json:"estimate,omitempty"`
	Estimates map[string]*estimate.Estimate `json:"estimates,omitempty"`
	Total     *estimate.Total               `json:"total,omitempty"`
}

var eventNames = map[engine.EventKind]string{
	engine.EventStart:    "start",
	engine.EventDone:     "done",
	engine.EventWarning:  "warning",
	engine.EventStopping: "stopping",
	engine.EventRetry:    "retry",
	engine.EventSpend:    "spend",
	engine.EventRemoved:  "removed",
	engine.EventEstimate: "estimate",
}

func (v *jsonView) Report(ev engine.Event) {
	name, ok := eventNames[ev.Kind]
	if !ok {
		return
	}
	je := jsonEvent{
		Time: ev.Time.UTC(), Event: name, Phase: ev.Phase, Status: ev.Status, Reasons: ev.Reasons,
		DurationMS: ev.Duration.Milliseconds(), Attempt: ev.Attempt, Cost: ev.Spend.Cost, Iterations: ev.Spend.Iterations,
		Message: ev.Message, Estimate: ev.Estimate, Estimates: ev.Estimates, Total: ev.Total,
	}
	if ev.Err != nil {
		je.Error = ev.Err.Error()
	}
	v.mu.Lock()
	_ = v.enc.Encode(je)
	v.mu.Unlock()
}

// PhaseOutput is not used: --json does not take -v.
func (v *jsonView) PhaseOutput(string) (io.WriteCloser, io.WriteCloser) {
	discard := newPrefixWriter("", func(string) {})
	return discard, discard
}

func (v *jsonView) Above(w io.Writer) io.Writer { return w }

func (v *jsonView) Close(res *engine.RunResult) {
	if res == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	_ = v.enc.Encode(struct {
		Time       time.Time      `json:"time"`
		Event      string         `json:"event"`
		RunID      string         `json:"run_id"`
		Status     string         `json:"status"`
		StopReason string         `json:"stop_reason,omitempty"`
		Counts     map[string]int `json:"counts"`
		Cost       float64        `json:"cost"`
		Iterations int64          `json:"iterations"`
		DurationMS int64          `json:"duration_ms"`
		// Phases that succeeded but were not cached, and why.
		NotCached map[string]string `json:"not_cached,omitempty"`
		// Files read to hash them (inputs and outputs not known by
		// their stat), and their bytes.
		HashedFiles int64 `json:"hashed_files"`
		HashedBytes int64 `json:"hashed_bytes"`
	}{time.Now().UTC(), "summary", res.RunID, res.Status, res.StopReason, res.Counts, res.Spent.Cost, res.Spent.Iterations, res.Duration.Milliseconds(), res.NotCached, res.HashedFiles, res.HashedBytes})
}
