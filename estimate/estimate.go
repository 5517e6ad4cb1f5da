// Package estimate says what the phases of a run are expected to take
// and spend, from the results recorded for them: the workspace's run
// records and the cache's entries under their earlier keys, or, for a
// new for_each instance, its siblings'. It sums them for a run and says
// where they exceed a budget.
//
// It is apart from the engine because it only reads history: it
// decides nothing and runs nothing, and the plan and the run both ask it.
package estimate

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// Estimate sources.
const (
	// History: the phase's own recorded results, from this
	// workspace's run records and from the cache's entries under its
	// earlier keys (which a teammate sharing the cache may have written).
	History = "history"
	// Siblings: the phase has no result of its own; the figures
	// are those of the other instances of its for_each.
	Siblings = "siblings"
	// Unknown: no result to go by.
	Unknown = "unknown"
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
// instances of its for_each). Without any, Source is Unknown and
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

// Total is the estimate of a whole run: the sums of its phases'
// known estimates, and how many phases have none.
type Total struct {
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

// Sources is what estimates are made from.
type Sources struct {
	// Spec holds the phases: their for_each siblings, upstreams and
	// budgets.
	Spec *spec.Spec
	// Runs holds the workspace's run records.
	Runs runrec.Dir
	// Cache is the local cache (nil: none); a remote round trip per
	// phase would make planning as slow as the network.
	Cache *cache.Dir
	// LastKey returns the key a phase last ran or was found with.
	LastKey func(addr string) (cache.ActionID, bool)
}

// Estimator gathers the recorded results the estimates of a set of
// phases need. Its methods may be called concurrently.
type Estimator struct {
	src     Sources
	history map[string][]sample // by address, newest first
}

// New reads the newest run records of src for the results of the phases
// in want and of their for_each siblings.
func New(src Sources, want []string) *Estimator {
	es := &Estimator{src: src, history: map[string][]sample{}}
	wanted := map[string]bool{}
	for _, addr := range want {
		wanted[addr] = true
		if p := src.Spec.Phase(addr); p != nil && p.HasForEach {
			for _, sib := range src.Spec.Blocks()[p.Block] {
				wanted[sib] = true
			}
		}
	}
	read := 0
	_ = src.Runs.RunsNewestFirst(func(st *runrec.RunState) bool {
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
// a forced phase was found with), those not already in the records;
// noEntries leaves the cache's entries out.
func (es *Estimator) own(addr string, extra *cache.Entry, noEntries bool) []sample {
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
	if noEntries {
		return s
	}
	if key, ok := es.src.LastKey(addr); ok && !seen(key.String()) {
		add(es.entry(key))
	}
	return s
}

// entry reads the entry under key from the local cache only.
func (es *Estimator) entry(key cache.ActionID) *cache.Entry {
	if es.src.Cache == nil {
		return nil
	}
	en, err := es.src.Cache.GetEntryLean(key)
	if err != nil {
		return nil
	}
	return en
}

// siblings returns the recorded results of the other instances of addr's
// for_each.
func (es *Estimator) siblings(addr string, noEntries bool) []sample {
	p := es.src.Spec.Phase(addr)
	if p == nil || !p.HasForEach {
		return nil
	}
	var s []sample
	sibs := es.src.Spec.Blocks()[p.Block]
	for _, sib := range sibs {
		if sib != addr {
			s = append(s, es.history[sib]...)
		}
	}
	if len(s) > 0 || noEntries {
		return s
	}
	read := 0
	for _, sib := range sibs {
		if sib == addr || read >= estimateMaxSiblingEntries {
			continue
		}
		if key, ok := es.src.LastKey(sib); ok {
			read++
			if en := es.entry(key); en != nil && en.ExitCode == 0 {
				s = append(s, sample{key: key.String(), ms: en.DurationMS, cost: en.Cost, iters: en.Iterations})
			}
		}
	}
	return s
}

// Of returns addr's estimate; extra is the entry it was found with when
// it runs although cached (forced), or nil.
func (es *Estimator) Of(addr string, extra *cache.Entry) *Estimate {
	return es.estimate(addr, extra, false)
}

// FromRecords returns addr's estimate from the run records alone, the
// cache's entries left out (a sweep's thousands of entries are slow to
// read).
func (es *Estimator) FromRecords(addr string) *Estimate {
	return es.estimate(addr, nil, true)
}

func (es *Estimator) estimate(addr string, extra *cache.Entry, noEntries bool) *Estimate {
	if s := es.own(addr, extra, noEntries); len(s) > 0 {
		return fromSamples(History, s)
	}
	if s := es.siblings(addr, noEntries); len(s) > 0 {
		return fromSamples(Siblings, s)
	}
	return &Estimate{Source: Unknown}
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

// All returns the estimates of addrs, by address; extra holds the
// entries of phases that run although cached.
func All(src Sources, addrs []string, extra map[string]*cache.Entry) map[string]*Estimate {
	es := New(src, addrs)
	out := make(map[string]*Estimate, len(addrs))
	for _, addr := range addrs {
		out[addr] = es.Of(addr, extra[addr])
	}
	return out
}

// Sum totals the estimates of addrs (in topological order) for a run of
// sp with jobs job slots.
func Sum(sp *spec.Spec, addrs []string, ests map[string]*Estimate, jobs int) *Total {
	t := &Total{Jobs: jobs}
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
		for _, up := range sp.Graph.Upstream(addr) {
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

// Warnings says where the estimates exceed a budget of sp: the run's
// max_cost (spent is what the run spent already, when resumed), or a
// phase's max_cost, max_iterations or timeout.
func Warnings(sp *spec.Spec, addrs []string, ests map[string]*Estimate, total *Total, spent float64) []string {
	var warns []string
	if max := sp.Experiment.Budget.MaxCost; max != nil && total.Phases > 0 {
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
		p := sp.Phase(addr)
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
