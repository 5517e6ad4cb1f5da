package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/runrec"
)

// TestPlanEstimates: a plan asked for estimates gives each phase to run
// the estimate made from the workspace's run records and, through a
// phase's last key, the cache's entries, and totals and checks them
// against the budgets; a plan not asked for them reads nothing.
func TestPlanEstimates(t *testing.T) {
	const sp = `
phase "prep" {
  command = "write prep.txt x"
  outputs = ["prep.txt"]
  budget {
    max_cost = 0.2
  }
}
phase "eval" {
  command = "write eval.txt x"
  outputs = ["eval.txt"]
}
`
	s := newSetup(t, map[string]string{"experiment.hcl": sp})
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	id := runrec.NewID(t0)
	b, err := runrec.Marshal(&runrec.RunState{RunID: id, Status: runrec.RunSucceeded, Started: t0, Heartbeat: t0,
		Phases: map[string]*runrec.PhaseState{"prep": {Status: runrec.StatusSucceeded, Key: "k-prep", DurationMS: 200, Cost: 0.3, Iterations: 40}}})
	if err != nil {
		t.Fatal(err)
	}
	p := runrec.Dir(filepath.Join(s.dir, ".cairn", "runs")).StatePath(id)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	comps := []cache.Component{{Kind: "command", Name: "teammate", Value: "v1"}}
	teamKey := cache.ComputeKey(comps)
	if err := s.cache.PutEntry(&cache.Entry{Format: cache.EntryFormat, Key: teamKey, Components: comps, Phase: "eval", DurationMS: 900, Cost: 0.1, Created: t0}); err != nil {
		t.Fatal(err)
	}
	lk := memories.LoadLastKeys(filepath.Join(s.dir, ".cairn", "keys"))
	lk.Set("eval", teamKey)
	if err := lk.Save(); err != nil {
		t.Fatal(err)
	}

	e := s.engine(t)
	plan, err := e.Plan(PlanOptions{Estimate: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*estimate.Estimate{}
	for _, d := range plan.Decisions {
		got[d.Phase] = d.Estimate
	}
	ri := func(v int64) *estimate.Range[int64] { return &estimate.Range[int64]{Est: v, Min: v, Max: v} }
	rf := func(v float64) *estimate.Range[float64] { return &estimate.Range[float64]{Est: v, Min: v, Max: v} }
	want := map[string]*estimate.Estimate{
		"prep": {Source: estimate.History, Samples: 1, DurationMS: ri(200), Cost: rf(0.3), Iterations: ri(40)},
		"eval": {Source: estimate.History, Samples: 1, DurationMS: ri(900), Cost: rf(0.1), Iterations: ri(0)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("estimates (-want +got):\n%s", diff)
	}
	if plan.Estimate == nil || plan.Estimate.Phases != 2 || plan.Estimate.Jobs != e.jobs(0) {
		t.Errorf("total = %+v, want 2 phases with %d jobs", plan.Estimate, e.jobs(0))
	}
	wantWarn := []string{"phase prep: estimated cost 0.3 exceeds its budget (max_cost 0.2): it would be stopped over budget"}
	if diff := cmp.Diff(wantWarn, plan.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	// Without Estimate, nothing is read and nothing estimated.
	plain, err := s.engine(t).Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Estimate != nil || plain.Decisions[0].Estimate != nil {
		t.Errorf("plan without Estimate has estimates: %+v", plain.Estimate)
	}
}
