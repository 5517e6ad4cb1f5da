package estimate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

const estimateSpec = `
experiment "e" {
  budget {
    max_cost = 1
  }
}
variable "seeds" {
  type    = list(string)
  default = ["a", "b", "c"]
}
phase "prep" {
  command = "cp in.txt prep.txt"
  inputs  = ["in.txt"]
  outputs = ["prep.txt"]
  budget {
    max_cost = 0.2
  }
}
phase "train" {
  for_each = toset(var.seeds)
  command  = "write t-${each.key}.txt ${each.key}"
  outputs  = ["t-${each.key}.txt"]
}
phase "eval" {
  command = "write eval.txt x"
  outputs = ["eval.txt"]
}
phase "fresh" {
  command = "write fresh.txt x"
  outputs = ["fresh.txt"]
}
phase "often" {
  command = "write often.txt x"
  outputs = ["often.txt"]
}
`

// writeRun records a finished run in the workspace at dir, as cairn run
// leaves it: its phases' results by address.
func writeRun(t *testing.T, dir string, at time.Time, phases map[string]*runrec.PhaseState) {
	t.Helper()
	id := runrec.NewID(at)
	st := &runrec.RunState{RunID: id, Status: runrec.RunSucceeded, Started: at, Heartbeat: at, Phases: phases}
	b, err := runrec.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	p := runrec.Dir(filepath.Join(dir, ".cairn", "runs")).StatePath(id)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func succeeded(key string, ms int64, cost float64, iters int64) *runrec.PhaseState {
	return &runrec.PhaseState{Status: runrec.StatusSucceeded, Key: key, DurationMS: ms, Cost: cost, Iterations: iters}
}

// TestEstimatesFromHistory: each phase to run is estimated from the
// results recorded for it: its own run records, the cache's entry under
// its last key (written by someone else: no record of it here), or, for
// a new for_each instance, its siblings' records; with none, unknown.
// The totals sum them and the budgets are checked against them.
func TestEstimatesFromHistory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(estimateSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, diags := spec.NewParser().LoadFile(filepath.Join(dir, "experiment.hcl"), spec.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	writeRun(t, dir, t0, map[string]*runrec.PhaseState{
		"prep":           succeeded("k-prep", 200, 0.3, 40),
		`train["a"]`:     succeeded("k-a", 100, 0.5, 0),
		`train["b"]`:     succeeded("k-b", 300, 0.7, 0),
		"fresh":          {Status: runrec.StatusFailed, DurationMS: 5000}, // failures do not count
		"gone-from-spec": succeeded("k-x", 1, 1, 1),
	})
	// often ran ten times; only the newest eight results count.
	for i := range 10 {
		writeRun(t, dir, t0.Add(time.Duration(i+1)*time.Minute), map[string]*runrec.PhaseState{
			"often": succeeded(fmt.Sprintf("k-often-%d", i), int64(10*(i+1)), 0, 0),
		})
	}
	// A teammate's entry for eval, found through eval's last key.
	comps := []cache.Component{{Kind: "command", Name: "teammate", Value: "v1"}}
	teamKey := cache.ComputeKey(comps)
	if err := c.PutEntry(&cache.Entry{Format: cache.EntryFormat, Key: teamKey, Components: comps, Phase: "eval", DurationMS: 900, Cost: 1.5, Iterations: 7, Created: t0}); err != nil {
		t.Fatal(err)
	}
	lastKeys := map[string]cache.ActionID{"eval": teamKey}
	src := Sources{Spec: sp, Runs: runrec.Dir(filepath.Join(dir, ".cairn", "runs")), Cache: c,
		LastKey: func(addr string) (cache.ActionID, bool) { k, ok := lastKeys[addr]; return k, ok }}
	addrs, err := sp.Graph.TopoOrder()
	if err != nil {
		t.Fatal(err)
	}
	const jobs = 2

	got := All(src, addrs, nil)
	ri := func(est, lo, hi int64) *Range[int64] { return &Range[int64]{est, lo, hi} }
	rf := func(est, lo, hi float64) *Range[float64] { return &Range[float64]{est, lo, hi} }
	want := map[string]*Estimate{
		"prep":       {Source: History, Samples: 1, DurationMS: ri(200, 200, 200), Cost: rf(0.3, 0.3, 0.3), Iterations: ri(40, 40, 40)},
		`train["a"]`: {Source: History, Samples: 1, DurationMS: ri(100, 100, 100), Cost: rf(0.5, 0.5, 0.5), Iterations: ri(0, 0, 0)},
		`train["b"]`: {Source: History, Samples: 1, DurationMS: ri(300, 300, 300), Cost: rf(0.7, 0.7, 0.7), Iterations: ri(0, 0, 0)},
		`train["c"]`: {Source: Siblings, Samples: 2, DurationMS: ri(200, 100, 300), Cost: rf(0.6, 0.5, 0.7), Iterations: ri(0, 0, 0)},
		"eval":       {Source: History, Samples: 1, DurationMS: ri(900, 900, 900), Cost: rf(1.5, 1.5, 1.5), Iterations: ri(7, 7, 7)},
		"fresh":      {Source: Unknown},
		"often":      {Source: History, Samples: 8, DurationMS: ri(65, 30, 100), Cost: rf(0, 0, 0), Iterations: ri(0, 0, 0)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("estimates (-want +got):\n%s", diff)
	}
	total := Sum(sp, addrs, got, jobs)
	wantTotal := &Total{
		Phases: 6, Unknown: 1,
		DurationMS: Range[int64]{1765, 1630, 1900},
		Cost:       Range[float64]{3.6, 3.5, 3.7},
		Iterations: Range[int64]{47, 47, 47},
		// prep, then the longest of what follows it: nothing depends on
		// anything here, so the longest phase or the sum over the slots.
		WallMS: max(900, 1765/jobs),
		Jobs:   jobs,
	}
	if diff := cmp.Diff(wantTotal, total); diff != "" {
		t.Errorf("total (-want +got):\n%s", diff)
	}
	wantWarn := []string{
		"the estimated cost 3.6 (3.5–3.7) exceeds the run budget (max_cost 1): the run will stop starting phases once it is spent; lower the work selected or raise budget { max_cost }",
		"phase prep: estimated cost 0.3 exceeds its budget (max_cost 0.2): it would be stopped over budget",
	}
	if diff := cmp.Diff(wantWarn, Warnings(sp, addrs, got, total, 0)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
