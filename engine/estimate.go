package engine

import (
	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/estimate"
)

// estimateSources is what the estimates of e's phases are made from.
func (e *Engine) estimateSources() estimate.Sources {
	src := estimate.Sources{Spec: e.spec, Runs: e.ws.Records(), LastKey: e.lastKeys.Get}
	if e.cache != nil {
		src.Cache = e.cache.Dir
	}
	return src
}

// estimatePlan gives each phase res will run its estimate, and res the
// totals and the budget warnings.
func (e *Engine) estimatePlan(res *PlanResult) {
	var addrs []string
	extra := map[string]*cache.Entry{}
	for _, d := range res.Decisions {
		if d.Action == ActionRun {
			addrs = append(addrs, d.Phase)
			if d.entry != nil {
				extra[d.Phase] = d.entry
			}
		}
	}
	ests := estimate.All(e.estimateSources(), addrs, extra)
	for _, d := range res.Decisions {
		if d.Action == ActionRun {
			d.Estimate = ests[d.Phase]
		}
	}
	res.Estimate = estimate.Sum(e.spec, addrs, ests, e.jobs(0))
	res.Warnings = estimate.Warnings(e.spec, addrs, ests, res.Estimate, 0)
}

// runEstimates estimates, when the run's first command is about to
// start, the phases of the run not settled yet, assuming they all run,
// and reports them (EventEstimate) with the budget warnings: a run that
// finds everything cached never reads its history. Only the run records
// are read for them (a sweep's thousands of entries would hold the first
// command up); a phase's cache entries are read when it starts
// (startEstimate).
func (r *runner) runEstimates() {
	r.estOnce.Do(func() {
		e := r.e
		order, err := e.spec.Graph.TopoOrder()
		if err != nil {
			return
		}
		var left []string
		r.mu.Lock()
		for _, addr := range order {
			if _, done := r.trees[addr]; r.sel.has(addr) && !done {
				left = append(left, addr)
			}
		}
		spent := r.ledger.Cost
		r.mu.Unlock()
		r.est = estimate.New(e.estimateSources(), left)
		ests := make(map[string]*estimate.Estimate, len(left))
		for _, addr := range left {
			ests[addr] = r.est.FromRecords(addr)
		}
		total := estimate.Sum(e.spec, left, ests, e.jobs(r.opts.Jobs))
		e.rep.Report(Event{Kind: EventEstimate, Estimates: ests, Total: total, Time: e.now()})
		for _, w := range estimate.Warnings(e.spec, left, ests, total, spent) {
			e.rep.Report(Event{Kind: EventWarning, Message: "estimate: " + w, Time: e.now()})
		}
	})
}

// startEstimate is the estimate of a phase whose command starts, its
// cache entries included.
func (r *runner) startEstimate(addr string, d *Decision) *estimate.Estimate {
	r.runEstimates()
	if r.est == nil {
		return nil
	}
	return r.est.Of(addr, d.entry)
}
