package engine

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestHugeJobs: -j as large as an int goes (a huge -j means "no limit")
// runs the phases; the worker pool's size does not overflow.
func TestHugeJobs(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	res := s.run(t, RunOptions{Request: Request{Jobs: math.MaxInt}})
	if res.Status != RunSucceeded || res.Counts[StatusSucceeded] != 3 {
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

func (o *orderExec) Run(ctx context.Context, job *Job) (int, error) {
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
	if res := s.run(t, RunOptions{}); res.Status != RunSucceeded {
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
	res, err := e.Run(t.Context(), RunOptions{Request: Request{Jobs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RunSucceeded || res.Counts[StatusCached] != 2 || res.Counts[StatusSucceeded] != 2 {
		t.Fatalf("second run: %s, counts %v; want succeeded, 2 cached, 2 ran", res.Status, res.Counts)
	}
	if want := []string{"b2", "c2"}; !slices.Equal(o.started, want) {
		t.Errorf("-j 1 started commands %v, want %v (the order of a run one phase at a time)", o.started, want)
	}
}
