package engine

import (
	"context"
	"github.com/cairn-run/cairn/executor"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairn-run/cairn/runrec"
)

// entryCountingExec runs jobs with fakeExec and records, for each phase,
// how many action entries the cache held when its command started.
type entryCountingExec struct {
	fakeExec
	root string
	mu   sync.Mutex
	seen map[string]int
}

func (x *entryCountingExec) Run(ctx context.Context, job *executor.Job) (int, error) {
	entries, _ := filepath.Glob(filepath.Join(x.root, "ac", "*", "*"))
	x.mu.Lock()
	if x.seen == nil {
		x.seen = map[string]int{}
	}
	x.seen[job.Phase] = len(entries)
	x.mu.Unlock()
	return x.fakeExec.Run(ctx, job)
}

// TestDependentStartsAfterUpstreamIsDurable: a phase's dependents are
// released once its outputs are hashed, but a dependent's command starts
// only when the upstream's result is in the cache (so a cairn killed while
// the dependent runs never reruns the upstream), for every link of a
// chain.
func TestDependentStartsAfterUpstreamIsDurable(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": `
phase "a" {
  command = "write a.txt one"
  outputs = ["a.txt"]
}
phase "b" {
  command = "cp ${phase.a.outputs[0]} b.txt"
  outputs = ["b.txt"]
}
phase "c" {
  command = "cp ${phase.b.outputs[0]} c.txt"
  outputs = ["c.txt"]
}
`})
	x := &entryCountingExec{root: s.cache.Root()}
	sp := s.engine(t).spec
	e := New(sp, tiered(s.cache), Config{Executor: x})
	res, err := e.Run(t.Context(), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runrec.RunSucceeded {
		t.Fatalf("run %s: %v", res.Status, res.Failures)
	}
	want := map[string]int{"a": 0, "b": 1, "c": 2}
	for p, n := range want {
		if x.seen[p] < n {
			t.Errorf("phase %s started with %d entries in the cache, want at least %d (its upstreams' results)", p, x.seen[p], n)
		}
	}
}
