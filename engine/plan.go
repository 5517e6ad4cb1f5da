package engine

import (
	"fmt"

	"github.com/cairn-run/cairn/cache"
)

// PlanResult is what a run would do, phase by phase, in topological order.
type PlanResult struct {
	Decisions []*Decision `json:"phases"`
	Run       int         `json:"run"`
	Cached    int         `json:"cached"`
	Restore   int         `json:"restore"`
}

// PlanOptions select what to plan, as RunOptions do.
type PlanOptions struct {
	Targets []string
	Gates
}

// Plan decides, without running or restoring anything, what a run with the
// same options would do and why. A phase whose upstream must run cannot
// know its key yet: it is planned to run, with that upstream as reason.
func (e *Engine) Plan(opts PlanOptions) (*PlanResult, error) {
	sel, err := e.resolve(opts.Targets, opts.Gates)
	if err != nil {
		return nil, err
	}
	forced := sel.forced
	order, err := e.spec.Graph.TopoOrder()
	if err != nil {
		return nil, err
	}
	res := &PlanResult{}
	trees := map[string][]cache.OutputFile{}
	if len(sel.outside) > 0 {
		if trees, err = e.satisfyOutside(sel, false); err != nil {
			return nil, err
		}
	}
	willRun := map[string]bool{}
	for _, addr := range order {
		if !sel.has(addr) {
			continue
		}
		p := e.spec.Phase(addr)
		var d *Decision
		var blockers []string
		for _, up := range e.spec.Graph.Upstream(addr) {
			if willRun[up] {
				blockers = append(blockers, up)
			}
		}
		if len(blockers) > 0 {
			d = &Decision{Phase: addr, Action: ActionRun}
			for _, b := range blockers {
				d.Reasons = append(d.Reasons, fmt.Sprintf("upstream %s will run", b))
			}
			if forced[addr] {
				d.Reasons = append([]string{"forced"}, d.Reasons...)
			}
		} else {
			up := map[string][]cache.OutputFile{}
			for _, u := range e.spec.Graph.Upstream(addr) {
				up[u] = trees[u]
			}
			d, err = e.decide(p, up, forced[addr])
			if err != nil {
				return nil, err
			}
		}
		switch d.Action {
		case ActionRun:
			res.Run++
			willRun[addr] = true
		case ActionCached:
			res.Cached++
			trees[addr] = d.entry.Outputs
		case ActionRestore:
			res.Restore++
			trees[addr] = d.entry.Outputs
		}
		res.Decisions = append(res.Decisions, d)
	}
	// Remember the digests hashed while planning, so the run that follows
	// does not read the inputs again. The memory only holds hints checked
	// against each file's stat, so saving it needs no lock.
	if err := e.ws.Init(); err == nil {
		_ = e.mem.Save()
		e.saveEntryMemo()
		e.savePhaseKeys()
	}
	return res, nil
}

func setOf(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}
