package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/runrec"
)

// Estimate sources.
const (
	// EstimateHistory: the phase's own recorded results, from this
	// workspace's run records and from the cache's entries under its
	// earlier keys (which a teammate sharing the cache may have written).
	EstimateHistory = "history"
	// EstimateSiblings: the phase has no result of its own; the figures
	// are those of the other instances of its for_each.
	EstimateSiblings = "siblings"
	// EstimateUnknown: no result to go by.
	EstimateUnknown = "unknown"
)

// How much history an estimate reads. Only the newest run records are
// read (a record of a large sweep is megabytes), and only a phase's newest
// results count: what a phase took last week says more than what it took
// last year.
const (
	estimateMaxRuns    = 20
	estimateMaxSamples = 8
	// estimateMaxSiblingEntries bounds the cache entries read for the
	// siblings of a phase, when the run records hold none of theirs.
	estimateMaxSiblingEntries = 32
)

// Range is an estimated figure: Est is the median of the samples, Min
// and Max their extremes. In a total, each is the sum of the phases'.
type Range[T int64 | float64] struct {
	Est T `json:"est"`
	Min T `json:"min"`
	Max T `json:"max"`
}

// Estimate is what a phase that will run is expected to take and spend,
// from the results recorded for it (or, when it has none, for the other
// instances of its for_each). Without any, Source is EstimateUnknown and
// the figures are nil.
type Estimate struct {
	Source     string          `json:"source"`
	Samples    int             `json:"samples,omitempty"`
	DurationMS *Range[int64]   `json:"duration_ms,omitempty"`
	Cost       *Range[float64] `json:"cost,omitempty"`
	Iterations *Range[int64]   `json:"iterations,omitempty"`
}

// Known reports whether the estimate has figures.
func (est *Estimate) Known() bool { return est != nil && est.DurationMS != nil }

// EstimateTotal is the estimate of a whole run: the sums of its phases'
// known estimates, and how many phases have none.
type EstimateTotal struct {
	Phases     int            `json:"phases"`
	Unknown    int            `json:"unknown,omitempty"`
	DurationMS Range[int64]   `json:"duration_ms"`
	Cost       Range[float64] `json:"cost"`
	Iterations Range[int64]   `json:"iterations"`
	// WallMS is how long the phases are expected to take with Jobs
	// running at once: the longer of their longest chain of dependencies
	// and their summed time spread over the job slots (pools and
	// executors' queues are not counted).
	WallMS int64 `json:"wall_ms"`
	Jobs   int   `json:"jobs"`
}

// sample is one recorded result of a phase.
type sample struct {
	key   string
	ms    int64
	cost  float64
	iters int64
}

// estimator gathers the recorded results the estimates of a set of
// phases need.
type estimator struct {
	e       *Engine
	history map[string][]sample // by address, newest first
	// noEntries leaves the cache's entries out (see runEstimates).
	noEntries bool
}

// newEstimator reads the newest run records of the workspace for the
// results of the phases in want and of their for_each siblings.
func (e *Engine) newEstimator(want []string) *estimator {
	es := &estimator{e: e, history: map[string][]sample{}}
	wanted := map[string]bool{}
	for _, addr := range want {
		wanted[addr] = true
		if p := e.spec.Phase(addr); p != nil && p.HasForEach {
			for _, sib := range e.spec.Blocks()[p.Block] {
				wanted[sib] = true
			}
		}
	}
	read := 0
	_ = e.ws.Records().RunsNewestFirst(func(st *runrec.RunState) bool {
		for addr, ps := range st.Phases {
			if !wanted[addr] || ps.Status != runrec.StatusSucceeded || len(es.history[addr]) >= estimateMaxSamples {
				continue
			}
			es.history[addr] = append(es.history[addr], sample{key: ps.Key, ms: ps.DurationMS, cost: ps.Cost, iters: ps.Iterations})
		}
		read++
		return read < estimateMaxRuns
	})
	return es
}

// own returns the recorded results of addr: from the run records, then
// from the cache's entries under its last key and under extra (the entry
// a forced phase was found with), those not already in the records.
func (es *estimator) own(addr string, extra *cache.Entry) []sample {
	s := slices.Clone(es.history[addr])
	seen := func(key string) bool {
		return slices.ContainsFunc(s, func(x sample) bool { return x.key == key })
	}
	add := func(en *cache.Entry) {
		if en != nil && en.ExitCode == 0 && !seen(en.Key.String()) {
			s = append(s, sample{key: en.Key.String(), ms: en.DurationMS, cost: en.Cost, iters: en.Iterations})
		}
	}
	add(extra)
	if es.noEntries {
		return s
	}
	if key, ok := es.e.lastKeys.Get(addr); ok && !seen(key.String()) {
		add(es.entry(key))
	}
	return s
}

// entry reads the entry under key from the local cache only: a remote
// round trip per phase would make planning as slow as the network.
func (es *estimator) entry(key cache.ActionID) *cache.Entry {
	if es.e.cache == nil || es.e.cache.Dir == nil {
		return nil
	}
	en, err := es.e.cache.Dir.GetEntryLean(key)
	if err != nil {
		return nil
	}
	return en
}

// siblings returns the recorded results of the other instances of addr's
// for_each.
func (es *estimator) siblings(addr string) []sample {
	p := es.e.spec.Phase(addr)
	if p == nil || !p.HasForEach {
		return nil
	}
	var s []sample
	sibs := es.e.spec.Blocks()[p.Block]
	for _, sib := range sibs {
		if sib != addr {
			s = append(s, es.history[sib]...)
		}
	}
	if len(s) > 0 || es.noEntries {
		return s
	}
	read := 0
	for _, sib := range sibs {
		if sib == addr || read >= estimateMaxSiblingEntries {
			continue
		}
		if key, ok := es.e.lastKeys.Get(sib); ok {
			read++
			if en := es.entry(key); en != nil && en.ExitCode == 0 {
				s = append(s, sample{key: key.String(), ms: en.DurationMS, cost: en.Cost, iters: en.Iterations})
			}
		}
	}
	return s
}

// estimate returns addr's estimate; extra is the entry it was found with
// when it runs although cached (forced), or nil.
func (es *estimator) estimate(addr string, extra *cache.Entry) *Estimate {
	if s := es.own(addr, extra); len(s) > 0 {
		return fromSamples(EstimateHistory, s)
	}
	if s := es.siblings(addr); len(s) > 0 {
		return fromSamples(EstimateSiblings, s)
	}
	return &Estimate{Source: EstimateUnknown}
}

func fromSamples(source string, s []sample) *Estimate {
	ms := make([]int64, len(s))
	cost := make([]float64, len(s))
	iters := make([]int64, len(s))
	for i, x := range s {
		ms[i], cost[i], iters[i] = x.ms, x.cost, x.iters
	}
	c := rangeOf(cost)
	c.Est = roundCost(c.Est)
	return &Estimate{Source: source, Samples: len(s), DurationMS: rangeOf(ms), Cost: c, Iterations: rangeOf(iters)}
}

// rangeOf returns the median and extremes of v (not empty).
func rangeOf[T int64 | float64](v []T) *Range[T] {
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return &Range[T]{Est: med, Min: v[0], Max: v[n-1]}
}

// roundCost drops the binary noise of sums of decimal costs (0.1+0.2),
// which would otherwise show as 0.30000000000000004.
func roundCost(c float64) float64 { return math.Round(c*1e9) / 1e9 }

// estimateAll returns the estimates of addrs, by address; extra holds the
// entries of phases that run although cached.
func (e *Engine) estimateAll(addrs []string, extra map[string]*cache.Entry) map[string]*Estimate {
	es := e.newEstimator(addrs)
	out := make(map[string]*Estimate, len(addrs))
	for _, addr := range addrs {
		out[addr] = es.estimate(addr, extra[addr])
	}
	return out
}

// estimateTotal sums the estimates of addrs (in topological order) for a
// run with jobs job slots.
func (e *Engine) estimateTotal(addrs []string, ests map[string]*Estimate, jobs int) *EstimateTotal {
	t := &EstimateTotal{Jobs: jobs}
	finish := map[string]int64{} // the end of each phase, every phase starting as early as its upstreams allow
	var path int64
	for _, addr := range addrs {
		est := ests[addr]
		if !est.Known() {
			t.Unknown++
			continue
		}
		t.Phases++
		addRange(&t.DurationMS, est.DurationMS)
		addRange(&t.Cost, est.Cost)
		addRange(&t.Iterations, est.Iterations)
		var start int64
		for _, up := range e.spec.Graph.Upstream(addr) {
			start = max(start, finish[up])
		}
		finish[addr] = start + est.DurationMS.Est
		path = max(path, finish[addr])
	}
	t.Cost = Range[float64]{roundCost(t.Cost.Est), roundCost(t.Cost.Min), roundCost(t.Cost.Max)}
	t.WallMS = path
	if jobs > 0 {
		t.WallMS = max(path, t.DurationMS.Est/int64(jobs))
	}
	return t
}

func addRange[T int64 | float64](sum *Range[T], r *Range[T]) {
	sum.Est += r.Est
	sum.Min += r.Min
	sum.Max += r.Max
}

// estimateWarnings says where the estimates exceed a budget: the run's
// max_cost (spent is what the run spent already, when resumed), or a
// phase's max_cost, max_iterations or timeout.
func (e *Engine) estimateWarnings(addrs []string, ests map[string]*Estimate, total *EstimateTotal, spent float64) []string {
	var warns []string
	if max := e.spec.Experiment.Budget.MaxCost; max != nil && total.Phases > 0 {
		est, hi := spent+total.Cost.Est, spent+total.Cost.Max
		switch {
		case est > *max:
			warns = append(warns, fmt.Sprintf("the estimated cost %s exceeds the run budget (max_cost %s): the run will stop starting phases once it is spent; lower the work selected or raise budget { max_cost }",
				fmtCostRange(spent, total.Cost), runrec.FormatCost(*max)))
		case hi > *max:
			warns = append(warns, fmt.Sprintf("the estimated cost %s may exceed the run budget (max_cost %s)",
				fmtCostRange(spent, total.Cost), runrec.FormatCost(*max)))
		}
	}
	for _, addr := range addrs {
		est := ests[addr]
		p := e.spec.Phase(addr)
		if !est.Known() || p == nil {
			continue
		}
		b := p.Budget
		if b.MaxCost != nil && est.Cost.Est > *b.MaxCost {
			warns = append(warns, fmt.Sprintf("phase %s: estimated cost %s exceeds its budget (max_cost %s): it would be stopped over budget",
				addr, runrec.FormatCost(est.Cost.Est), runrec.FormatCost(*b.MaxCost)))
		}
		if b.MaxIterations != nil && est.Iterations.Est > *b.MaxIterations {
			warns = append(warns, fmt.Sprintf("phase %s: estimated %d iterations exceed its budget (max_iterations %d): it would be stopped over budget",
				addr, est.Iterations.Est, *b.MaxIterations))
		}
		if b.Timeout > 0 && time.Duration(est.DurationMS.Est)*time.Millisecond > b.Timeout {
			warns = append(warns, fmt.Sprintf("phase %s: estimated duration %s exceeds its budget (timeout %s): it would time out",
				addr, time.Duration(est.DurationMS.Est)*time.Millisecond, b.Timeout))
		}
	}
	return warns
}

// fmtCostRange renders spent plus a cost range: "1.2 (0.9–1.5)".
func fmtCostRange(spent float64, r Range[float64]) string {
	return fmt.Sprintf("%s (%s–%s)", runrec.FormatCost(spent+r.Est), runrec.FormatCost(spent+r.Min), runrec.FormatCost(spent+r.Max))
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
	ests := e.estimateAll(addrs, extra)
	for _, d := range res.Decisions {
		if d.Action == ActionRun {
			d.Estimate = ests[d.Phase]
		}
	}
	res.Estimate = e.estimateTotal(addrs, ests, e.jobs(0))
	res.Warnings = e.estimateWarnings(addrs, ests, res.Estimate, 0)
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
		r.est = e.newEstimator(left)
		r.est.noEntries = true
		ests := make(map[string]*Estimate, len(left))
		for _, addr := range left {
			ests[addr] = r.est.estimate(addr, nil)
		}
		r.est.noEntries = false
		total := e.estimateTotal(left, ests, e.jobs(r.opts.Jobs))
		e.rep.Report(Event{Kind: EventEstimate, Estimates: ests, Total: total, Time: e.now()})
		for _, w := range e.estimateWarnings(left, ests, total, spent) {
			e.rep.Report(Event{Kind: EventWarning, Message: "estimate: " + w, Time: e.now()})
		}
	})
}

// startEstimate is the estimate of a phase whose command starts, its
// cache entries included.
func (r *runner) startEstimate(addr string, d *Decision) *Estimate {
	r.runEstimates()
	if r.est == nil {
		return nil
	}
	return r.est.estimate(addr, d.entry)
}
