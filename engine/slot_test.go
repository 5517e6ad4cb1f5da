package engine

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

const slotSpec = `
experiment "slots" {
  concurrency = 2
}
phase "a" {
  command = "write out/a.txt a"
  outputs = { o = "out/a.txt" }
}
phase "b" {
  command = "cp ${phase.a.outputs.o} out/b.txt"
  outputs = ["out/b.txt"]
  budget {
    timeout = "1s"
  }
}
`

// TestAwaitUpstreamsGivesSlotBack: a phase whose upstream is still storing
// its result gives its job slot back while it waits (so another phase's
// command can run in it) and asks for one again before its command
// starts; a refusal means it must not start; a phase whose upstream is
// already over keeps its slot and waits for nothing.
func TestAwaitUpstreamsGivesSlotBack(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": slotSpec})
	st := &runrec.RunState{Phases: map[string]*runrec.PhaseState{}}
	state := workspace.NewStateWriter(filepath.Join(t.TempDir(), "state.json"), t.TempDir(), st, time.Hour, nil)
	defer state.Close()
	r := &runner{
		e:       s.engine(t),
		results: make(chan phaseResult),
		storing: map[string]chan struct{}{"a": make(chan struct{})},
		res:     &RunResult{Failures: map[string]error{}},
		state:   state,
	}
	type ret struct {
		u       string
		granted bool
	}
	done := make(chan ret)
	await := func() {
		u, granted := r.awaitUpstreams("b")
		done <- ret{u, granted}
	}
	next := func(what string) phaseResult {
		t.Helper()
		select {
		case pr := <-r.results:
			return pr
		case got := <-done:
			t.Fatalf("awaitUpstreams returned %+v before %s", got, what)
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s after 10s", what)
		}
		return phaseResult{}
	}
	quiet := func(while string) {
		t.Helper()
		select {
		case pr := <-r.results:
			t.Fatalf("message %+v %s", pr, while)
		case got := <-done:
			t.Fatalf("awaitUpstreams returned %+v %s", got, while)
		case <-time.After(50 * time.Millisecond):
		}
	}
	result := func() ret {
		t.Helper()
		select {
		case got := <-done:
			return got
		case <-time.After(10 * time.Second):
			t.Fatal("awaitUpstreams did not return")
		}
		return ret{}
	}

	go await()
	if pr := next("yield"); !pr.yield || pr.addr != "b" {
		t.Fatalf("first message %+v, want b yielding its slot", pr)
	}
	quiet("while the upstream is still storing")
	r.over("a")
	pr := next("regrant")
	if pr.regrant == nil || pr.addr != "b" {
		t.Fatalf("second message %+v, want b asking for a slot", pr)
	}
	quiet("before the slot was granted")
	pr.regrant <- true
	if got := result(); got != (ret{"", true}) {
		t.Fatalf("awaitUpstreams = %+v, want granted, no failed upstream", got)
	}

	// Refused: the phase is recorded as not started, without the key and
	// reasons of its decision.
	r.state.Phase("b", func(ps *runrec.PhaseState) { ps.Key, ps.Reasons = "k", []string{"new"} })
	r.storing["a"] = make(chan struct{})
	go await()
	next("yield")
	r.over("a")
	next("regrant").regrant <- false
	if got := result(); got.granted {
		t.Fatalf("awaitUpstreams = %+v after a refusal, want not granted", got)
	}
	if !r.notStarted["b"] {
		t.Error("a refused phase is not recorded as not started")
	}
	if ps := st.Phases["b"]; ps.Key != "" || ps.Reasons != nil {
		t.Errorf("a refused phase is recorded as %+v, want no key or reasons", ps)
	}

	// The upstream is over already: no message, no wait.
	go await()
	select {
	case got := <-done:
		if got != (ret{"", true}) {
			t.Fatalf("awaitUpstreams = %+v, want granted", got)
		}
	case pr := <-r.results:
		t.Fatalf("message %+v although the upstream is over", pr)
	case <-time.After(10 * time.Second):
		t.Fatal("awaitUpstreams waited although the upstream is over")
	}
}

// ctxExec is fakeExec that honours a context ended before the command
// starts, as a real executor does.
type ctxExec struct{ *fakeExec }

func (x ctxExec) Run(ctx context.Context, job *executor.Job) (int, error) {
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	return x.fakeExec.Run(ctx, job)
}

// slowStores makes every action entry's fsync take d, so a phase's
// dependents wait for it (on NFS that happens without help).
func slowStores(t *testing.T, d time.Duration) {
	t.Helper()
	restore, err := failpoint.Set("ac.fsync=sleep(" + strconv.FormatInt(d.Milliseconds(), 10) + ")")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
}

// TestNoCommandStartsAfterStopWhileWaiting: a phase that gave its slot
// back to wait for its upstream's store does not start its command once
// the run is stopping (Ctrl-C, cairn stop, a failure without
// --keep-going, a spent budget): it is skipped, as a phase never started.
func TestNoCommandStartsAfterStopWhileWaiting(t *testing.T) {
	slowStores(t, 500*time.Millisecond)
	var yielded atomic.Int32
	testHookYielded = func(r *runner, addr string) {
		yielded.Add(1)
		r.requestStop(StopInterrupt) // as Ctrl-C while b waits
	}
	t.Cleanup(func() { testHookYielded = nil })
	s := newSetup(t, map[string]string{"experiment.hcl": slotSpec})
	res := s.run(t, RunOptions{})
	if yielded.Load() == 0 {
		t.Fatal("b never waited for a's store: the test did not reach the case")
	}
	if n := s.exec.count("b"); n != 0 {
		t.Errorf("b's command ran %d times after the run was stopped", n)
	}
	if res.Counts[runrec.StatusSucceeded] != 1 || res.Counts[runrec.StatusSkipped] != 1 {
		t.Errorf("counts %v, want a succeeded and b skipped", res.Counts)
	}
}

// TestTimeoutExcludesWaitForUpstream: a phase's budget timeout counts its
// command's time, not the time it waited for its upstream's result to be
// stored and for a job slot.
func TestTimeoutExcludesWaitForUpstream(t *testing.T) {
	slowStores(t, 1500*time.Millisecond) // longer than b's 1s timeout
	var yielded atomic.Int32
	testHookYielded = func(*runner, string) { yielded.Add(1) }
	t.Cleanup(func() { testHookYielded = nil })
	s := newSetup(t, map[string]string{"experiment.hcl": slotSpec})
	sp, diags := spec.NewParser().LoadFile(filepath.Join(s.dir, "experiment.hcl"), spec.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	res, err := New(sp, tiered(s.cache), Config{Executor: ctxExec{s.exec}}).Run(t.Context(), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if yielded.Load() == 0 {
		t.Fatal("b never waited for a's store: the test did not reach the case")
	}
	if res.Counts[runrec.StatusSucceeded] != 2 {
		t.Errorf("counts %v, failures %v; want a and b succeeded", res.Counts, res.Failures)
	}
}
