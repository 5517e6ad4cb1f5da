package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Temporary outputs (spec.Phase.Temporary) are hashed but not stored in
// the cache, and removed from the workspace once every phase of the run
// that reads them has succeeded. A phase whose temporary output is gone
// is cached without it, unless a phase reading it must run: then it runs
// again first. Whether a reader will run is known only once it is
// decided, after the producer; so a run with temporary outputs plans
// first (the same decisions cairn plan shows, settled by
// settleTemporary) and runs again the producers the plan says are
// needed. The plan is cautious: a reader it expects to run because an
// upstream phase runs may turn out cached (early cutoff), and the
// producer then ran for nothing.

// tempRun is what a run knows of temporary outputs.
type tempRun struct {
	// need holds, by address, the phases to run again for their
	// temporary outputs, with the reasons.
	need map[string][]string
	// gone holds, by address, the phases done without some temporary
	// outputs, and those outputs.
	gone map[string][]string
	// outputs holds the temporary outputs some phase of the run reads, by
	// producer: each with the readers not yet succeeded.
	outputs map[string][]*tempOutput
	// done holds the producers that succeeded (ran, cached or restored).
	done map[string]bool
	// removed counts the temporary outputs removed.
	removed int
}

type tempOutput struct {
	path    string
	waiting map[string]bool // readers in the run not yet succeeded
}

// prepareTemporary sets up the run's temporary outputs: which the run
// may remove, and which producers must run again because a reader runs.
func (r *runner) prepareTemporary() {
	e := r.e
	t := &tempRun{need: map[string][]string{}, gone: map[string][]string{}, outputs: map[string][]*tempOutput{}, done: map[string]bool{}}
	r.temps = t
	anyTemp := false
	for _, p := range e.spec.Phases {
		if !r.sel.has(p.Addr) || len(p.Temporary) == 0 {
			continue
		}
		anyTemp = true
		for _, path := range p.Temporary {
			to := &tempOutput{path: path, waiting: map[string]bool{}}
			for _, d := range e.spec.Graph.Downstream(p.Addr) {
				if r.sel.has(d) && e.spec.Phase(d).Reads(p.Addr, path) {
					to.waiting[d] = true
				}
			}
			if len(to.waiting) > 0 {
				t.outputs[p.Addr] = append(t.outputs[p.Addr], to)
			}
		}
	}
	if !anyTemp {
		return
	}
	res, err := e.plan(r.sel)
	if err != nil {
		// The phases' own decisions will meet the same error.
		return
	}
	for _, d := range res.Decisions {
		if d.Action == ActionRun && len(d.tempGone) > 0 {
			t.need[d.Phase] = d.Reasons
		}
	}
}

// tempNeeded returns the reasons for the phase addr, found cached without
// some temporary outputs, to run again, or nil.
func (r *runner) tempNeeded(addr string) []string {
	if r.temps == nil {
		return nil
	}
	return r.temps.need[addr]
}

// tempGone records that addr is done without its temporary outputs paths.
func (r *runner) tempGone(addr string, paths []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.temps != nil {
		r.temps.gone[addr] = paths
	}
}

// missingTemporary says which temporary output of an upstream phase the
// phase addr, about to run, reads but the workspace lacks, or returns "".
// The plan run first foresees every such phase that runs; this catches
// what changed since (an input edited while the run ran).
func (r *runner) missingTemporary(addr string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.temps == nil {
		return ""
	}
	p := r.e.spec.Phase(addr)
	for _, u := range r.e.spec.Graph.Upstream(addr) {
		for _, path := range r.temps.gone[u] {
			if p.Reads(u, path) {
				return fmt.Sprintf("it reads %s, a temporary output of %s that is gone (the run expected %s to be cached); run again: %s runs first", path, u, addr, u)
			}
		}
	}
	return ""
}

// tempSucceeded notes that addr succeeded (ran, cached or restored) and
// removes the temporary outputs whose producer and readers in the run
// all have.
func (r *runner) tempSucceeded(addr string) {
	if r.temps == nil {
		return
	}
	var remove []string
	var producers []string
	r.mu.Lock()
	t := r.temps
	if len(t.outputs[addr]) > 0 {
		t.done[addr] = true
	}
	for _, u := range r.e.spec.Graph.Upstream(addr) {
		if len(t.outputs[u]) > 0 {
			producers = append(producers, u)
		}
	}
	if t.done[addr] {
		producers = append(producers, addr)
	}
	for _, u := range producers {
		if !t.done[u] {
			for _, to := range t.outputs[u] {
				delete(to.waiting, addr)
			}
			continue
		}
		kept := t.outputs[u][:0]
		for _, to := range t.outputs[u] {
			delete(to.waiting, addr)
			if len(to.waiting) == 0 {
				remove = append(remove, u+"\x00"+to.path)
			} else {
				kept = append(kept, to)
			}
		}
		t.outputs[u] = kept
	}
	r.mu.Unlock()
	for _, x := range remove {
		u, path, _ := strings.Cut(x, "\x00")
		r.removeTemporary(u, path)
	}
}

// removeTemporary removes the temporary output path of phase u.
func (r *runner) removeTemporary(u, path string) {
	e := r.e
	abs := e.ws.Abs(path)
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err := os.RemoveAll(abs); err != nil {
		e.rep.Report(Event{Kind: EventWarning, Phase: u, Message: fmt.Sprintf("phase %s: could not remove temporary output %s: %v", u, path, err), Time: e.now()})
		return
	}
	r.mu.Lock()
	r.temps.removed++
	r.mu.Unlock()
	e.rep.Report(Event{Kind: EventRemoved, Phase: u, Message: path, Time: e.now()})
}
