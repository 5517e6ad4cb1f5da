package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// selection is a resolved set of targets and gates.
type selection struct {
	// include holds the phases to consider; nil means every phase.
	include map[string]bool
	forced  map[string]bool
	// outside holds the phases outside include whose outputs included
	// phases read (only with Only): they must be satisfied without running.
	outside []string
}

func (s *selection) has(addr string) bool { return s.include == nil || s.include[addr] }

// resolve checks every name and turns targets and gates into a selection.
func (e *Engine) resolve(targets []string, g runrec.Gates) (*selection, error) {
	hadTargets, hadUntil, hadOnly := len(targets) > 0, len(g.Until) > 0, len(g.Only) > 0
	lists := []*[]string{&targets, &g.Force, &g.From, &g.Until, &g.Only}
	for _, l := range lists {
		addrs, err := e.expand(*l)
		if err != nil {
			return nil, err
		}
		*l = addrs
	}
	graph := e.spec.Graph
	sel := &selection{forced: setOf(g.Force)}
	closure := func(names []string) map[string]bool {
		m := graph.Ancestors(names...)
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	if hadTargets {
		sel.include = closure(targets)
	}
	if hadUntil {
		until := closure(g.Until)
		if sel.include == nil {
			sel.include = until
		} else {
			for a := range sel.include {
				if !until[a] {
					delete(sel.include, a)
				}
			}
		}
	}
	if hadOnly {
		sel.include = setOf(g.Only)
		need := map[string]bool{}
		for _, a := range g.Only {
			for _, u := range graph.Upstream(a) {
				if !sel.include[u] {
					need[u] = true
				}
			}
		}
		// Phases outside the selection are satisfied in dependency order,
		// each from its own upstream phases when its outputs are not in the
		// workspace, so take every ancestor of the needed ones too.
		for u := range graph.Ancestors(keys(need)...) {
			if !sel.include[u] {
				need[u] = true
			}
		}
		order, err := graph.TopoOrder()
		if err != nil {
			return nil, err
		}
		for _, a := range order {
			if need[a] {
				sel.outside = append(sel.outside, a)
			}
		}
	}
	if len(g.From) > 0 {
		for a := range graph.Descendants(g.From...) {
			sel.forced[a] = true
		}
		for _, a := range g.From {
			sel.forced[a] = true
		}
	}
	return sel, nil
}

// unforceFinished drops from the forced phases those a resumed run
// finished (ran, or found cached or restored): resuming continues that
// run, so what its --force and --from had it redo is done, and is taken
// from the cache like any phase. Their state in the resumed run is what
// counts, so a resume of a resume (which records the same gates) still
// does not force them: there they were found cached. A phase whose
// inputs changed since still runs, its key being another.
func (s *selection) unforceFinished(prev map[string]*runrec.PhaseState) {
	for addr, ps := range prev {
		switch ps.Status {
		case runrec.StatusSucceeded, runrec.StatusCached, runrec.StatusRestored:
			delete(s.forced, addr)
		}
	}
}

// UnsatisfiedError says which phases --only needs that are neither in the
// workspace nor in the cache.
type UnsatisfiedError struct {
	Missing map[string][]string // phase -> its missing outputs
}

func (e *UnsatisfiedError) Error() string {
	names := keys(e.Missing)
	var b strings.Builder
	b.WriteString("--only: the selected phases need outputs that are neither in the workspace nor cached:")
	for _, n := range names {
		fmt.Fprintf(&b, "\n  %s: %s", n, strings.Join(e.Missing[n], ", "))
	}
	fmt.Fprintf(&b, "\nrun them first (cairn run %s), or drop --only", strings.Join(names, " "))
	return b.String()
}

// satisfyOutside finds the output trees of the phases outside the
// selection that --only phases read: from the workspace when the outputs
// are there, else from the cache (restoring them when restore is set).
// It never runs anything.
func (e *Engine) satisfyOutside(sel *selection, restore bool) (map[string][]cache.OutputFile, error) {
	trees := map[string][]cache.OutputFile{}
	missing := map[string][]string{}
	for _, addr := range sel.outside {
		p := e.spec.Phase(addr)
		tree, absent, err := e.out.InWorkspace(p)
		if err != nil {
			return nil, err
		}
		if len(absent) == 0 {
			trees[addr] = tree
			continue
		}
		up := map[string][]cache.OutputFile{}
		ok := true
		for _, u := range e.spec.Graph.Upstream(addr) {
			t, have := trees[u]
			if !have {
				ok = false
				break
			}
			up[u] = t
		}
		if ok {
			d, err := e.decide(p, up, false)
			if err != nil {
				return nil, err
			}
			var gone []string // temporary outputs gone that a selected phase reads
			for _, t := range d.tempGone {
				for _, dn := range e.spec.Graph.Downstream(addr) {
					if sel.include[dn] && e.spec.Phase(dn).Reads(addr, t) {
						gone = append(gone, t)
						break
					}
				}
			}
			if len(gone) > 0 {
				// The cache does not hold them: only running the
				// phase makes them.
				missing[addr] = gone
				continue
			}
			if d.entry != nil {
				if restore {
					for _, o := range d.restore {
						if err := e.out.Restore(o, d.parts[o], d.entry.Inline); err != nil {
							return nil, err
						}
					}
				}
				trees[addr] = d.entry.Outputs
				continue
			}
		}
		missing[addr] = absent
	}
	// Only the phases an --only phase reads directly must be satisfied;
	// a missing ancestor of a satisfied phase does not matter.
	for addr := range missing {
		needed := false
		for _, d := range e.spec.Graph.Downstream(addr) {
			if sel.include[d] {
				needed = true
			}
		}
		if !needed {
			delete(missing, addr)
		}
	}
	if len(missing) > 0 {
		return nil, &UnsatisfiedError{Missing: missing}
	}
	return trees, nil
}

// expand turns names given by the user into phase addresses: the name of
// a phase with for_each stands for all its instances, a declared output
// path for the instance declaring it.
func (e *Engine) expand(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		addrs := e.spec.Resolve(n)
		if addrs == nil {
			return nil, spec.UnknownTarget(e.spec, n)
		}
		out = append(out, addrs...)
	}
	return out, nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
