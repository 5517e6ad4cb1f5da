package runrec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// writeRun writes a run record named id that started at started.
func writeRun(t testing.TB, d Dir, id string, started time.Time) {
	t.Helper()
	writeRecord(t, d, &RunState{SchemaVersion: StateSchemaVersion, RunID: id, Started: started, Status: RunSucceeded,
		Heartbeat: started, Phases: map[string]*PhaseState{"a": {Status: StatusSucceeded}}})
}

// writeRecord writes st as the record of run st.RunID.
func writeRecord(t testing.TB, d Dir, st *RunState) {
	t.Helper()
	b, err := Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(d.StatePath(st.RunID)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.StatePath(st.RunID), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newestFirst(t *testing.T, d Dir, limit int) []string {
	t.Helper()
	var ids []string
	err := d.RunsNewestFirst(func(st *RunState) bool {
		ids = append(ids, st.RunID)
		return len(ids) < limit
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestRunsNewestFirst: the records come newest first, in exactly the
// reverse of Runs' order (start time, then id), within a second and
// across seconds; unreadable records are skipped; a directory whose name
// is no run id is still found; FindRun picks the same records as before
// (the latest, by id, by unique prefix) and names every record present,
// damaged ones too, when it cannot.
func TestRunsNewestFirst(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	d := Dir(t.TempDir())
	// Two runs in one second whose random suffixes sort against their
	// start order, and three earlier seconds.
	writeRun(t, d, "20261127-100005-ffffff", t0.Add(5*time.Second+100*time.Millisecond))
	writeRun(t, d, "20261127-100005-000000", t0.Add(5*time.Second+700*time.Millisecond))
	writeRun(t, d, "20261127-100003-aaaaaa", t0.Add(3*time.Second))
	writeRun(t, d, "20261127-095959-bbbbbb", t0.Add(-time.Second))
	writeRun(t, d, "20261126-235959-cccccc", t0.Add(-10*time.Hour-time.Second))
	// A damaged newer record, and a run directory without a record.
	if err := os.MkdirAll(filepath.Join(string(d), "20261127-100009-dddddd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.StatePath("20261127-100008-eeeeee"), nil, 0o644); err == nil {
		t.Fatal("wrote into a missing directory")
	}
	if err := os.MkdirAll(filepath.Join(string(d), "20261127-100008-eeeeee"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.StatePath("20261127-100008-eeeeee"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}

	want := []string{"20261127-100005-000000", "20261127-100005-ffffff", "20261127-100003-aaaaaa", "20261127-095959-bbbbbb", "20261126-235959-cccccc"}
	runs, damaged, err := d.RunsAndDamaged()
	if err != nil {
		t.Fatal(err)
	}
	if len(damaged) != 1 || !errors.Is(damaged[0], ErrDamagedState) || !strings.Contains(damaged[0].Error(), "20261127-100008-eeeeee") {
		t.Errorf("damaged records: %v; want the one of 20261127-100008-eeeeee", damaged)
	}
	var fromRuns []string
	for i := len(runs) - 1; i >= 0; i-- {
		fromRuns = append(fromRuns, runs[i].RunID)
	}
	if diff := cmp.Diff(want, fromRuns); diff != "" {
		t.Fatalf("Runs reversed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, newestFirst(t, d, 100)); diff != "" {
		t.Errorf("RunsNewestFirst (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:2], newestFirst(t, d, 2)); diff != "" {
		t.Errorf("RunsNewestFirst stopped after two (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		id, want, wantErr string
	}{
		{"20261127-100003-aaaaaa", "20261127-100003-aaaaaa", ""},
		{"20261127-0959", "20261127-095959-bbbbbb", ""},
		{"20261127-100005", "", "ambiguous"},
		{"nope", "", "unknown"},
		{"20261127-100008-eeeeee", "", "damaged"},
	} {
		st, err := d.FindRun(tt.id)
		var got, gotErr string
		if st != nil {
			got = st.RunID
		}
		var unknown *UnknownRunError
		switch {
		case err == nil:
		case errors.Is(err, ErrDamagedState):
			gotErr = "damaged"
		case errors.As(err, &unknown) && len(unknown.Known) == 6:
			gotErr = "unknown"
			if tt.id == "20261127-100005" {
				gotErr = "ambiguous"
			}
		default:
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.wantErr {
			t.Errorf("FindRun(%q) = %q, %q; want %q, %q", tt.id, got, gotErr, tt.want, tt.wantErr)
		}
	}
	// The latest record is damaged: FindRun("") says so, as before;
	// RunsNewestFirst, as Runs, skips it.
	if _, err := d.FindRun(""); !errors.Is(err, ErrDamagedState) {
		t.Errorf("FindRun(\"\") with a damaged latest record: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(string(d), "20261127-100008-eeeeee")); err != nil {
		t.Fatal(err)
	}
	if st, err := d.FindRun(""); err != nil || st.RunID != want[0] {
		t.Errorf("FindRun(\"\") = %v, %v; want %s", st, err, want[0])
	}

	// A directory named otherwise: every record is read, in Runs' order.
	writeRun(t, d, "imported", t0.Add(time.Minute))
	if diff := cmp.Diff(append([]string{"imported"}, want...), newestFirst(t, d, 100)); diff != "" {
		t.Errorf("with a foreign name (-want +got):\n%s", diff)
	}
	if st, err := d.FindRun(""); err != nil || st.RunID != "imported" {
		t.Errorf("FindRun(\"\") = %v, %v; want imported", st, err)
	}
}

// BenchmarkFindLatest: cairn status in a workspace of 200 runs of 1,000
// phases reads one record, not 200.
func BenchmarkFindLatest(b *testing.B) {
	d := Dir(b.TempDir())
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := range 200 {
		started := t0.Add(time.Duration(i) * time.Second)
		id := NewID(started)
		st := &RunState{SchemaVersion: StateSchemaVersion, RunID: id, Started: started, Status: RunSucceeded, Heartbeat: started, Phases: map[string]*PhaseState{}}
		for p := range 1000 {
			st.Phases[filepath.Join("p", string(rune('a'+p%26)), time.Duration(p).String())] = filledPhase(b, p, false)
		}
		writeRecord(b, d, st)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.FindRun(""); err != nil {
			b.Fatal(err)
		}
	}
}
