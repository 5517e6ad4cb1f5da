package progress

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/runrec"
)

func known(ms int64) *estimate.Estimate {
	return &estimate.Estimate{Source: estimate.History, Samples: 1,
		DurationMS: &estimate.Range[int64]{Est: ms, Min: ms, Max: ms},
		Cost:       &estimate.Range[float64]{}, Iterations: &estimate.Range[int64]{}}
}

// TestTermETA: the bar's ETA comes from the run's estimates: what the
// running phases have left, plus the waiting ones, over the job slots;
// a phase without an estimate makes it a lower bound; none before the
// run reports its estimates.
func TestTermETA(t *testing.T) {
	v, _, clock := testView(false, 120, 24)
	v.Report(engine.Event{Kind: engine.EventBegin, Phases: []string{"prep", "a", "b", "c"}, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventDone, Phase: "prep", Status: runrec.StatusCached, Time: clock.t})
	if got := v.eta(); got != "" {
		t.Fatalf("eta before the estimates = %q, want none", got)
	}
	v.Report(engine.Event{Kind: engine.EventEstimate, Time: clock.t,
		Estimates: map[string]*estimate.Estimate{"a": known(10000), "b": known(20000), "c": {Source: estimate.Unknown}},
		Total:     &estimate.Total{Jobs: 2}})
	v.Report(engine.Event{Kind: engine.EventStart, Phase: "a", Attempt: 1, Estimate: known(12000), Time: clock.t})
	clock.advance(4 * time.Second)
	// a: 12s - 4s = 8s left; b: 20s; c unknown. (8+20)/2 = 14s.
	if got, want := v.eta(), "eta ≥14.0s"; got != want {
		t.Errorf("eta = %q, want %q", got, want)
	}
	if bar := v.bar(120); !strings.Contains(bar, "eta ≥14.0s") {
		t.Errorf("bar %q lacks the eta", bar)
	}
	v.Report(engine.Event{Kind: engine.EventDone, Phase: "c", Status: runrec.StatusSucceeded, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventDone, Phase: "b", Status: runrec.StatusCached, Time: clock.t})
	// Only a is left, running: its 8s.
	if got, want := v.eta(), "eta ~8.0s"; got != want {
		t.Errorf("eta = %q, want %q", got, want)
	}
}

// TestJSONEstimateEvents: --json carries the run's estimates and each
// starting phase's.
func TestJSONEstimateEvents(t *testing.T) {
	var buf strings.Builder
	v := newJSONView(&buf)
	v.Report(engine.Event{Kind: engine.EventEstimate, Time: t0,
		Estimates: map[string]*estimate.Estimate{"a": known(200)}, Total: &estimate.Total{Phases: 1, Jobs: 2, WallMS: 200}})
	v.Report(engine.Event{Kind: engine.EventStart, Phase: "a", Attempt: 1, Estimate: known(200), Time: t0})
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	est := map[string]any{"source": "history", "samples": 1.0,
		"duration_ms": map[string]any{"est": 200.0, "min": 200.0, "max": 200.0},
		"cost":        map[string]any{"est": 0.0, "min": 0.0, "max": 0.0},
		"iterations":  map[string]any{"est": 0.0, "min": 0.0, "max": 0.0}}
	zero := map[string]any{"est": 0.0, "min": 0.0, "max": 0.0}
	want := []map[string]any{
		{"time": "2026-01-02T03:04:05Z", "event": "estimate", "estimates": map[string]any{"a": est},
			"total": map[string]any{"phases": 1.0, "duration_ms": zero, "cost": zero, "iterations": zero, "wall_ms": 200.0, "jobs": 2.0}},
		{"time": "2026-01-02T03:04:05Z", "event": "start", "phase": "a", "attempt": 1.0, "estimate": est},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
