package engine

import (
	"context"
	"github.com/cairn-run/cairn/executor"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/runrec"
)

// TestHugeJobs: -j as large as an int goes (a huge -j means "no limit")
// runs the phases; the worker pool's size does not overflow.
func TestHugeJobs(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	res := s.run(t, RunOptions{Request: runrec.Request{Jobs: math.MaxInt}})
	if res.Status != runrec.RunSucceeded || res.Counts[runrec.StatusSucceeded] != 3 {
		t.Fatalf("run: %s, counts %v; want succeeded, 3 ran", res.Status, res.Counts)
	}
}

// orderExec runs commands as fakeExec does and records the order in which
// they start.
type orderExec struct {
	fakeExec
	mu      sync.Mutex
	started []string
}

func (o *orderExec) Run(ctx context.Context, job *executor.Job) (int, error) {
	o.mu.Lock()
	o.started = append(o.started, job.Phase)
	o.mu.Unlock()
	return o.fakeExec.Run(ctx, job)
}

const orderSpec = `
phase "b" {
  command = "write out/b.txt b"
  outputs = ["out/b.txt"]
}
phase "c" {
  command = "write out/c.txt c"
  outputs = ["out/c.txt"]
}
phase "b2" {
  command = "cp ${phase.b.outputs[0]} out/b2.txt"
  outputs = ["out/b2.txt"]
  cache   = false
}
phase "c2" {
  command = "cp ${phase.c.outputs[0]} out/c2.txt"
  outputs = ["out/c2.txt"]
  cache   = false
}
`

// TestDecideAheadKeepsJ1Order: with -j 1, commands start in the order a
// run one phase at a time starts them, however long each phase takes to
// decide. Here b and c are cached and their dependents b2 and c2 must
// run; b holds the slot, c decides ahead and is found cached first. One
// at a time, b is done before c starts, so b2 is ready (and runs) before
// c2: c being found cached first must not let c2 overtake b2.
func TestDecideAheadKeepsJ1Order(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": orderSpec, "out/.keep": ""})
	if res := s.run(t, RunOptions{}); res.Status != runrec.RunSucceeded {
		t.Fatalf("first run: %s", res.Status)
	}
	cDone := make(chan struct{})
	var once sync.Once
	testHookResult = func(pr phaseResult) {
		if pr.addr == "c" {
			once.Do(func() { close(cDone) })
		}
	}
	testHookDecided = func(addr string) {
		if addr != "b" {
			return
		}
		select {
		case <-cDone:
		case <-time.After(20 * time.Second):
			t.Error("after 20s, c (deciding ahead) had not finished while b decided")
		}
	}
	t.Cleanup(func() { testHookResult, testHookDecided = nil, nil })
	o := &orderExec{}
	e := s.engine(t)
	e.exec = o
	res, err := e.Run(t.Context(), RunOptions{Request: runrec.Request{Jobs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runrec.RunSucceeded || res.Counts[runrec.StatusCached] != 2 || res.Counts[runrec.StatusSucceeded] != 2 {
		t.Fatalf("second run: %s, counts %v; want succeeded, 2 cached, 2 ran", res.Status, res.Counts)
	}
	if want := []string{"b2", "c2"}; !slices.Equal(o.started, want) {
		t.Errorf("-j 1 started commands %v, want %v (the order of a run one phase at a time)", o.started, want)
	}
}

// askGate runs commands as fakeExec does, except that the command of
// phase gated starts only once every phase in askers has asked the
// scheduler for a job slot (deciding ahead, it found it must run or
// restore), and then calls before, if set. ended is closed when the
// gated command has returned.
type askGate struct {
	fakeExec
	gated  string
	cost   bool // the gated phase reports a cost of 1
	asked  chan struct{}
	before func()
	ended  chan struct{}
	t      *testing.T
}

func newAskGate(t *testing.T, gated string, askers ...string) *askGate {
	g := &askGate{gated: gated, asked: make(chan struct{}), ended: make(chan struct{}), t: t}
	var mu sync.Mutex
	want := map[string]bool{}
	for _, a := range askers {
		want[a] = true
	}
	testHookResult = func(pr phaseResult) {
		if pr.regrant == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if want[pr.addr] {
			delete(want, pr.addr)
			if len(want) == 0 {
				close(g.asked)
			}
		}
	}
	t.Cleanup(func() { testHookResult = nil })
	return g
}

func (g *askGate) Run(ctx context.Context, job *executor.Job) (int, error) {
	if job.Phase != g.gated {
		return g.fakeExec.Run(ctx, job)
	}
	defer close(g.ended)
	select {
	case <-g.asked:
	case <-time.After(20 * time.Second):
		g.t.Errorf("after 20s, the phases deciding ahead had not all asked for the slot %s held", g.gated)
	}
	if g.before != nil {
		g.before()
	}
	if g.cost {
		for _, kv := range job.Env {
			if path, ok := strings.CutPrefix(kv, "CAIRN_REPORT="); ok {
				if err := os.WriteFile(path, []byte(`{"cost": 1}`+"\n"), 0o644); err != nil {
					g.t.Error(err)
				}
			}
		}
	}
	return g.fakeExec.Run(ctx, job)
}

// eventWatch is a Reporter that closes stopping when the run reports it
// is stopping.
type eventWatch struct {
	once     sync.Once
	stopping chan struct{}
}

func (w *eventWatch) Report(ev Event) {
	if ev.Kind == EventStopping {
		w.once.Do(func() { close(w.stopping) })
	}
}

// aheadSpec: a holds the only slot of -j 1 while b and c, which must
// run, decide ahead and ask for it.
const aheadSpec = `
experiment "x" {
  budget {
    max_cost = 1
  }
}
phase "a" {
  command = "write out/a.txt a"
  outputs = ["out/a.txt"]
  cache   = false
}
phase "b" {
  command = "write out/b.txt b"
  outputs = ["out/b.txt"]
  cache   = false
}
phase "c" {
  command = "write out/c.txt c"
  outputs = ["out/c.txt"]
  cache   = false
}
`

// runAhead runs aheadSpec with -j 1 and g as the executor.
func runAhead(t *testing.T, g *askGate, opts RunOptions, rep Reporter) (*setup, *RunResult) {
	t.Helper()
	s := newSetup(t, map[string]string{"experiment.hcl": aheadSpec, "out/.keep": ""})
	e := s.engine(t)
	e.exec = g
	if rep != nil {
		e.rep = rep
	}
	opts.Jobs = 1
	res, err := e.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, res
}

// checkNotStarted checks that phases were recorded as never started:
// skipped with reason, no key, and their commands never ran.
func checkNotStarted(t *testing.T, s *setup, g *askGate, res *RunResult, reason string, phases ...string) {
	t.Helper()
	st, err := runrec.ReadState(filepath.Join(s.dir, ".cairn", "runs", res.RunID, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range phases {
		ps := st.Phases[p]
		if ps.Status != runrec.StatusSkipped || ps.Error != reason || ps.Key != "" || ps.Reasons != nil || g.count(p) != 0 {
			t.Errorf("phase %s: %+v, ran %d times; want skipped (%s), no key, never run", p, ps, g.count(p), reason)
		}
	}
}

// TestDecideAheadStopRefusesAskers: a stop requested while phases that
// decided ahead wait for the slot starts none of their commands: they
// are skipped as phases never started, and the run is stopped.
func TestDecideAheadStopRefusesAskers(t *testing.T) {
	g := newAskGate(t, "a", "b", "c")
	stop := make(chan struct{})
	w := &eventWatch{stopping: make(chan struct{})}
	g.before = func() {
		close(stop)
		<-w.stopping
	}
	s, res := runAhead(t, g, RunOptions{Stop: stop}, w)
	if res.Status != runrec.RunStopped || res.Counts[runrec.StatusSucceeded] != 1 || res.Counts[runrec.StatusSkipped] != 2 {
		t.Fatalf("run: %s, counts %v; want stopped, a ran, 2 skipped", res.Status, res.Counts)
	}
	checkNotStarted(t, s, g, res, "not started: the run was stopped (interrupt)", "b", "c")
}

// TestDecideAheadBudgetRefusesAskers: the run budget spent by the
// command holding the slot, the phases that decided ahead and wait for it
// do not run; they count as not started for the budget.
func TestDecideAheadBudgetRefusesAskers(t *testing.T) {
	g := newAskGate(t, "a", "b", "c")
	g.cost = true
	s, res := runAhead(t, g, RunOptions{}, nil)
	if res.Status != runrec.RunFailed || res.BudgetSkipped != 2 || res.Counts[runrec.StatusSucceeded] != 1 {
		t.Fatalf("run: %s, counts %v, %d skipped for the budget; want failed, a ran, 2 skipped for the budget", res.Status, res.Counts, res.BudgetSkipped)
	}
	checkNotStarted(t, s, g, res, "not started: the run budget (max_cost 1) was spent", "b", "c")
}

// TestDecideAheadFailureRefusesAskers: the command holding the slot
// fails: without --keep-going the phases that decided ahead and wait for
// the slot do not run; with it, they do.
func TestDecideAheadFailureRefusesAskers(t *testing.T) {
	g := newAskGate(t, "a", "b", "c")
	g.fail = map[string]bool{"a": true}
	s, res := runAhead(t, g, RunOptions{}, nil)
	if res.Status != runrec.RunFailed || res.Counts[runrec.StatusFailed] != 1 || res.Counts[runrec.StatusSkipped] != 2 {
		t.Fatalf("run: %s, counts %v; want failed, a failed, 2 skipped", res.Status, res.Counts)
	}
	checkNotStarted(t, s, g, res, "not started: the run ended after a failure", "b", "c")

	g = newAskGate(t, "a", "b", "c")
	g.fail = map[string]bool{"a": true}
	_, res = runAhead(t, g, RunOptions{Request: runrec.Request{KeepGoing: true}}, nil)
	if res.Status != runrec.RunFailed || res.Counts[runrec.StatusFailed] != 1 || res.Counts[runrec.StatusSucceeded] != 2 || g.count("b") != 1 || g.count("c") != 1 {
		t.Fatalf("--keep-going run: %s, counts %v; want failed, a failed, b and c ran", res.Status, res.Counts)
	}
}

// TestDecideAheadRestoreWaitsForSlot: with -j 1, a phase that decided
// ahead and must restore its outputs restores them only once the command
// holding the slot has ended.
func TestDecideAheadRestoreWaitsForSlot(t *testing.T) {
	spec := `
phase "a" {
  command = "write out/a.txt a"
  outputs = ["out/a.txt"]
  cache   = false
}
phase "b" {
  command = "write out/b.txt b"
  outputs = ["out/b.txt"]
}
`
	s := newSetup(t, map[string]string{"experiment.hcl": spec, "out/.keep": ""})
	if res := s.run(t, RunOptions{}); res.Status != runrec.RunSucceeded {
		t.Fatalf("first run: %s", res.Status)
	}
	if err := os.Remove(filepath.Join(s.dir, "out", "b.txt")); err != nil {
		t.Fatal(err)
	}
	g := newAskGate(t, "a", "b")
	restoring := 0
	e := s.engine(t)
	e.out.BeforeRestore = func(o string) {
		restoring++
		select {
		case <-g.ended:
		default:
			t.Errorf("b restores %s while a's command holds the only slot", o)
		}
	}
	e.exec = g
	res, err := e.Run(t.Context(), RunOptions{Request: runrec.Request{Jobs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runrec.RunSucceeded || res.Counts[runrec.StatusRestored] != 1 || res.Counts[runrec.StatusSucceeded] != 1 || restoring != 1 {
		t.Fatalf("run: %s, counts %v, %d restores; want succeeded, a ran, b restored once", res.Status, res.Counts, restoring)
	}
}

// TestDecideAheadSlowDeciderLeavesFreeSlots: with -j 2, a phase still
// deciding ahead (hashing a large input, say) may claim one free slot,
// not both: a phase that started deciding after it and must run takes
// the other one meanwhile, as it would have before phases decided ahead.
func TestDecideAheadSlowDeciderLeavesFreeSlots(t *testing.T) {
	spec := `
phase "a1" {
  command = "write out/a1.txt a"
  outputs = ["out/a1.txt"]
  cache   = false
}
phase "a2" {
  command = "write out/a2.txt a"
  outputs = ["out/a2.txt"]
  cache   = false
}
phase "p_slow" {
  command = "write out/p.txt p"
  outputs = ["out/p.txt"]
  cache   = false
}
phase "q" {
  command = "write out/q.txt q"
  outputs = ["out/q.txt"]
  cache   = false
}
`
	s := newSetup(t, map[string]string{"experiment.hcl": spec, "out/.keep": ""})
	// a1 and a2 hold both slots until p_slow and q decide ahead; q asks
	// for a slot, p_slow decides until q's command has started.
	g := newAskGate(t, "a1", "q")
	g2 := &askGate{fakeExec: fakeExec{}, gated: "a2", asked: g.asked, ended: make(chan struct{}), t: t}
	qStarted := make(chan struct{})
	testHookDecided = func(addr string) {
		if addr != "p_slow" {
			return
		}
		select {
		case <-qStarted:
		case <-time.After(20 * time.Second):
			t.Error("after 20s deciding p_slow, q had not started with both slots free")
		}
	}
	t.Cleanup(func() { testHookDecided = nil })
	e := s.engine(t)
	e.exec = execFunc(func(ctx context.Context, job *executor.Job) (int, error) {
		switch job.Phase {
		case "a1":
			return g.Run(ctx, job)
		case "a2":
			return g2.Run(ctx, job)
		case "q":
			close(qStarted)
		}
		return g.fakeExec.Run(ctx, job)
	})
	res, err := e.Run(t.Context(), RunOptions{Request: runrec.Request{Jobs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runrec.RunSucceeded || res.Counts[runrec.StatusSucceeded] != 4 {
		t.Fatalf("run: %s, counts %v; want succeeded, 4 ran", res.Status, res.Counts)
	}
}

// execFunc is an Executor from a function.
type execFunc func(ctx context.Context, job *executor.Job) (int, error)

func (f execFunc) Run(ctx context.Context, job *executor.Job) (int, error) { return f(ctx, job) }

// TestDecideAheadDecisionFails: with -j 1, a phase deciding ahead whose
// decision fails (a declared input is missing) fails; the command
// holding the slot finishes, and a phase waiting for the slot does not
// run (without --keep-going), as when phases decided one at a time.
func TestDecideAheadDecisionFails(t *testing.T) {
	spec := `
phase "a" {
  command = "write out/a.txt a"
  outputs = ["out/a.txt"]
  cache   = false
}
phase "b" {
  command = "cp missing.txt out/b.txt"
  inputs  = ["missing.txt"]
  outputs = ["out/b.txt"]
}
phase "c" {
  command = "write out/c.txt c"
  outputs = ["out/c.txt"]
  cache   = false
}
`
	s := newSetup(t, map[string]string{"experiment.hcl": spec, "out/.keep": ""})
	g := newAskGate(t, "a", "c")
	e := s.engine(t)
	e.exec = g
	res, err := e.Run(t.Context(), RunOptions{Request: runrec.Request{Jobs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runrec.RunFailed || res.Counts[runrec.StatusSucceeded] != 1 || res.Counts[runrec.StatusFailed] != 1 || res.Counts[runrec.StatusSkipped] != 1 || res.Failures["b"] == nil {
		t.Fatalf("run: %s, counts %v, failures %v; want failed: a ran, b failed, c skipped", res.Status, res.Counts, res.Failures)
	}
	checkNotStarted(t, s, g, res, "not started: the run ended after a failure", "c")
}
