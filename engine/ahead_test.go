package engine

import (
	"context"
	"fmt"
	"github.com/cairn-run/cairn/executor"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/runrec"
)

// gateExec runs commands as fakeExec does, except that a phase named in
// gated blocks until release is closed (or its context ends).
type gateExec struct {
	fakeExec
	gated   map[string]bool
	release chan struct{}
}

func (g *gateExec) Run(ctx context.Context, job *executor.Job) (int, error) {
	if g.gated[job.Phase] {
		select {
		case <-g.release:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
	return g.fakeExec.Run(ctx, job)
}

// doneWatch is a Reporter that closes all once every phase in want has
// reported done with status.
type doneWatch struct {
	mu     sync.Mutex
	status string
	want   map[string]bool
	all    chan struct{}
}

func newDoneWatch(status string, phases ...string) *doneWatch {
	w := &doneWatch{status: status, want: map[string]bool{}, all: make(chan struct{})}
	for _, p := range phases {
		w.want[p] = true
	}
	return w
}

func (w *doneWatch) Report(ev Event) {
	if ev.Kind != EventDone || ev.Status != w.status {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.want[ev.Phase] {
		delete(w.want, ev.Phase)
		if len(w.want) == 0 {
			close(w.all)
		}
	}
}

// runGated runs the spec with jobs slots; the gated phases' commands wait
// until every phase of want reported done with status, then the test
// releases them. It fails if that does not happen while they hold their
// slots.
func runGated(t *testing.T, s *setup, jobs int, gated []string, status string, want []string) *RunResult {
	t.Helper()
	g := &gateExec{gated: map[string]bool{}, release: make(chan struct{})}
	for _, p := range gated {
		g.gated[p] = true
	}
	w := newDoneWatch(status, want...)
	e := s.engine(t)
	e.exec = g
	e.rep = w
	go func() {
		select {
		case <-w.all:
		case <-time.After(20 * time.Second):
			t.Errorf("after 20s, %v still not %s while %v held the slots", w.pending(), status, gated)
		}
		close(g.release)
	}()
	res, err := e.Run(t.Context(), RunOptions{Request: runrec.Request{Jobs: jobs}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (w *doneWatch) pending() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var p []string
	for k := range w.want {
		p = append(p, k)
	}
	return p
}

// TestDecideAheadWhileSlotIsBusy: with -j 1 and the slot held by a long
// command, the phases behind it are decided meanwhile, and those found
// cached are done before the command ends.
func TestDecideAheadWhileSlotIsBusy(t *testing.T) {
	var b strings.Builder
	b.WriteString("phase \"a_slow\" {\n  command = \"write out/slow.txt s\"\n  outputs = [\"out/slow.txt\"]\n  cache = false\n}\n")
	var cached []string
	for i := range 10 {
		fmt.Fprintf(&b, "phase \"c%d\" {\n  command = \"write out/c%d.txt %d\"\n  outputs = [\"out/c%d.txt\"]\n}\n", i, i, i, i)
		cached = append(cached, fmt.Sprintf("c%d", i))
	}
	s := newSetup(t, map[string]string{"experiment.hcl": b.String(), "out/.keep": ""})
	if res := s.run(t, RunOptions{}); res.Status != runrec.RunSucceeded {
		t.Fatalf("first run: %s", res.Status)
	}
	res := runGated(t, s, 1, []string{"a_slow"}, runrec.StatusCached, cached)
	if res.Status != runrec.RunSucceeded || res.Counts[runrec.StatusCached] != 10 || res.Counts[runrec.StatusSucceeded] != 1 {
		t.Fatalf("second run: %s, counts %v; want succeeded, 10 cached, 1 ran", res.Status, res.Counts)
	}
}

// TestDecideAheadPassesFullPool: phases deciding ahead that wait for a
// full pool do not hold back a later phase that needs no pool units: it
// takes a free slot and runs while the pool's phase runs.
func TestDecideAheadPassesFullPool(t *testing.T) {
	var b strings.Builder
	b.WriteString("pool \"gpu\" {\n  size = 1\n}\n")
	var gpu []string
	for i := range 8 {
		fmt.Fprintf(&b, "phase \"g%d\" {\n  command = \"write out/g%d.txt %d\"\n  outputs = [\"out/g%d.txt\"]\n  resources = { gpu = 1 }\n  cache = false\n}\n", i, i, i, i)
		gpu = append(gpu, fmt.Sprintf("g%d", i))
	}
	var cpu []string
	for i := range 3 {
		fmt.Fprintf(&b, "phase \"z%d\" {\n  command = \"write out/z%d.txt %d\"\n  outputs = [\"out/z%d.txt\"]\n  cache = false\n}\n", i, i, i, i)
		cpu = append(cpu, fmt.Sprintf("z%d", i))
	}
	s := newSetup(t, map[string]string{"experiment.hcl": b.String(), "out/.keep": ""})
	// Every gpu phase waits until the cpu phases have run: one holds the
	// pool, the others wait for it (some deciding ahead).
	res := runGated(t, s, 4, gpu, runrec.StatusSucceeded, cpu)
	if res.Status != runrec.RunSucceeded || res.Counts[runrec.StatusSucceeded] != 11 {
		t.Fatalf("run: %s, counts %v; want succeeded, 11 ran", res.Status, res.Counts)
	}
}
