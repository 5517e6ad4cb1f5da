package engine

import (
	"fmt"
	"strings"
	"sync"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/runrec"
)

// PlanResult is what a run would do, phase by phase, in topological order.
type PlanResult struct {
	Decisions []*Decision `json:"phases"`
	Run       int         `json:"run"`
	Cached    int         `json:"cached"`
	Restore   int         `json:"restore"`
	// Estimate totals the estimates of the phases to run, and Warnings
	// says where they exceed a budget (with PlanOptions.Estimate).
	Estimate *estimate.Total `json:"estimate,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`
}

// PlanOptions select what to plan, as RunOptions do.
type PlanOptions struct {
	Targets []string
	runrec.Gates
	// Estimate gives each phase to run its estimate (Decision.Estimate),
	// from the recorded history: it reads the newest run records and
	// cache entries, so it is asked for, not the default.
	Estimate bool
}

// Plan decides, without running or restoring anything, what a run with the
// same options would do and why. A phase whose upstream must run cannot
// know its key yet: it is planned to run, with that upstream as reason
// and its own changes since its last result (see ownChanges).
func (e *Engine) Plan(opts PlanOptions) (*PlanResult, error) {
	sel, err := e.resolve(opts.Targets, opts.Gates)
	if err != nil {
		return nil, err
	}
	res, err := e.plan(sel)
	if err != nil || !opts.Estimate {
		return res, err
	}
	e.estimatePlan(res)
	return res, nil
}

// plan is Plan for a resolved selection.
func (e *Engine) plan(sel *selection) (*PlanResult, error) {
	order, err := e.spec.Graph.TopoOrder()
	if err != nil {
		return nil, err
	}
	trees := map[string][]cache.OutputFile{}
	if len(sel.outside) > 0 {
		if trees, err = e.satisfyOutside(sel, false); err != nil {
			return nil, err
		}
	}
	todo, waves := e.waves(sel, order)
	decisions, err := e.decideWaves(todo, waves, trees, sel.forced)
	if err != nil {
		return nil, err
	}
	e.settleTemporary(decisions)
	res := &PlanResult{}
	for _, d := range decisions {
		switch d.Action {
		case ActionRun:
			res.Run++
		case ActionCached:
			res.Cached++
		case ActionRestore:
			res.Restore++
		}
	}
	if len(decisions) > 0 {
		res.Decisions = decisions
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

// waves returns the selected phases in topological order (todo) and their
// waves, each holding the indices in todo of the phases whose upstream
// phases are all in earlier waves, ascending.
//
// A wave's phases are decided side by side: deciding stats and hashes
// inputs and looks the key up in the cache (for a sweep of 100,000
// instances, a second on one core). The decisions keep the topological
// order.
func (e *Engine) waves(sel *selection, order []string) (todo []string, waves [][]int) {
	todo = make([]string, 0, len(order))
	for _, addr := range order {
		if sel.has(addr) {
			todo = append(todo, addr)
		}
	}
	waveOf := make(map[string]int, len(todo))
	for i, addr := range todo {
		w := 0
		for _, up := range e.spec.Graph.Upstream(addr) {
			if uw, ok := waveOf[up]; ok && uw >= w {
				w = uw + 1
			}
		}
		waveOf[addr] = w
		if w == len(waves) {
			waves = append(waves, nil)
		}
		waves[w] = append(waves[w], i)
	}
	return todo, waves
}

// decideWaves decides the phases of todo wave by wave (see waves). trees
// holds the outputs of the phases decided cached or restored, and grows
// with each wave.
func (e *Engine) decideWaves(todo []string, waves [][]int, trees map[string][]cache.OutputFile, forced map[string]bool) ([]*Decision, error) {
	decisions := make([]*Decision, len(todo))
	errs := make([]error, len(todo))
	willRun := map[string]bool{}
	lastTrees := &lastTrees{trees: map[string][]cache.OutputFile{}}
	// Deciding one at a time, the plan fails with the error of the first
	// phase in the order that cannot be decided, and decides nothing
	// after it. stop is the index of the first such phase found so far: a
	// later wave may still hold a phase before it (b after a comes before
	// c, which is in a's wave), so only the phases before stop are
	// decided from then on, and the plan fails with stop's error.
	stop := len(todo)
	for _, wave := range waves {
		if stop < len(todo) {
			n := 0
			for n < len(wave) && wave[n] < stop { // a wave's indices ascend
				n++
			}
			wave = wave[:n]
		}
		_ = cores.Parallel(len(wave), cores.N, func(k int) error {
			i := wave[k]
			decisions[i], errs[i] = e.planPhase(todo[i], willRun, trees, lastTrees, forced[todo[i]])
			return nil
		})
		for _, i := range wave {
			if errs[i] != nil {
				stop = min(stop, i)
			}
		}
		for _, i := range wave {
			if errs[i] != nil {
				continue
			}
			switch d := decisions[i]; d.Action {
			case ActionRun:
				willRun[d.Phase] = true
			case ActionCached, ActionRestore:
				// Also without its temporary outputs: their digests
				// are in the entry, and a phase that runs again for
				// them (settleTemporary) makes the same bytes.
				trees[d.Phase] = d.entry.Outputs
			}
		}
	}
	if stop < len(todo) {
		return nil, errs[stop]
	}
	return decisions, nil
}

// planPhase decides addr for Plan: to run when an upstream phase will
// run (its key cannot be known yet), else by its key. It only reads
// willRun and trees, which hold the earlier waves' decisions.
func (e *Engine) planPhase(addr string, willRun map[string]bool, trees map[string][]cache.OutputFile, last *lastTrees, forced bool) (*Decision, error) {
	var blockers []string
	for _, up := range e.spec.Graph.Upstream(addr) {
		if willRun[up] {
			blockers = append(blockers, up)
		}
	}
	if len(blockers) > 0 {
		d := &Decision{Phase: addr, Action: ActionRun}
		for _, b := range blockers {
			d.Reasons = append(d.Reasons, fmt.Sprintf("upstream %s will run", b))
		}
		if forced {
			d.Reasons = append([]string{"forced"}, d.Reasons...)
		}
		d.Reasons = append(d.Reasons, e.ownChanges(d, blockers, trees, last)...)
		return d, nil
	}
	up := map[string][]cache.OutputFile{}
	for _, u := range e.spec.Graph.Upstream(addr) {
		up[u] = trees[u]
	}
	return e.decide(e.spec.Phase(addr), up, forced)
}

// ownChanges sets d.own, the components of d, which runs because its
// upstream phases blockers will, without the upstream outputs those will
// make, and returns how they differ from its last result's in this
// workspace: a user who edits data and a setting together sees both. The
// blockers stand in with the outputs of their own last results, so their
// workspace copies are never hashed. It says nothing when there is no last
// result to compare with, or when the comparison cannot be made.
func (e *Engine) ownChanges(d *Decision, blockers []string, trees map[string][]cache.OutputFile, last *lastTrees) []string {
	p := e.spec.Phase(d.Phase)
	up := map[string][]cache.OutputFile{}
	for _, u := range e.spec.Graph.Upstream(d.Phase) {
		up[u] = trees[u]
	}
	for _, b := range blockers {
		up[b], _ = last.get(e, b)
	}
	comps, err := e.components(p, up)
	if err != nil {
		return nil
	}
	pending := setOf(blockers)
	drop := func(cs []cache.Component) []cache.Component {
		out := make([]cache.Component, 0, len(cs))
		for _, c := range cs {
			if c.Kind == kindUpstream && pending[e.producerOf(c.Name)] {
				continue
			}
			out = append(out, c)
		}
		return out
	}
	d.own = drop(comps)
	d.ownKey = cache.ComputeKey(d.own)
	if !p.Cache {
		return nil // it always runs; there is nothing to compare with
	}
	prevKey, ok := e.lastKeys.Get(d.Phase)
	if !ok {
		return nil
	}
	prev, err := e.cache.GetEntry(prevKey)
	if err != nil {
		return nil
	}
	return e.maskSensitive(diffComponents(drop(prev.Components), d.own, e.producer))
}

// producerOf returns the phase declaring the output at path, or the
// output directory holding it, or "".
func (e *Engine) producerOf(path string) string {
	for dir := path; ; {
		if who := e.producer[dir]; who != "" {
			return who
		}
		i := strings.LastIndex(dir, "/")
		if i < 0 {
			return ""
		}
		dir = dir[:i]
	}
}

// lastTrees holds, by phase, the outputs of its last result in this
// workspace, read once per plan.
type lastTrees struct {
	mu    sync.Mutex
	trees map[string][]cache.OutputFile // nil: none known
}

func (l *lastTrees) get(e *Engine, addr string) ([]cache.OutputFile, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.trees[addr]; ok {
		return t, t != nil
	}
	var tree []cache.OutputFile
	if key, ok := e.lastKeys.Get(addr); ok {
		if ent, err := e.cache.GetEntryLean(key); err == nil {
			tree = ent.Outputs
			if tree == nil {
				tree = []cache.OutputFile{}
			}
		}
	}
	l.trees[addr] = tree
	return tree, tree != nil
}

func setOf(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}
