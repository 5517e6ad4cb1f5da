package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/inputs"
	"github.com/cairn-run/cairn/reproduce"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// VerifyOptions select the cached phases to rerun.
type VerifyOptions struct {
	// Phases are the phases to rerun (a for_each phase's name stands for
	// all its instances); none means every phase.
	Phases []string
	// Sample, when above 0, picks that many of the cached phases at
	// random, with Seed.
	Sample int
	Seed   uint64
	// MaxCost stops the reruns once the next one's recorded cost would
	// take the total past it; nil means no limit.
	MaxCost *float64
}

// VerifyPlan is what Verify would rerun, and what it cannot.
type VerifyPlan struct {
	Phases  []*reproduce.Phase `json:"phases"`
	Skipped []VerifySkip       `json:"skipped,omitempty"`
	// Seed is the sample's seed (0 without --sample).
	Seed uint64 `json:"seed,omitempty"`
	// Cost and Duration are the recorded cost and duration of Phases, from
	// their cache entries.
	Cost       float64 `json:"recorded_cost"`
	DurationMS int64   `json:"recorded_duration_ms"`
}

// VerifySkip is a selected phase that cannot be rerun, and why.
type VerifySkip struct {
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
}

// PlanVerify decides which phases Verify reruns: the selected phases whose
// current key is in the cache. It reads the workspace and the cache but
// writes neither, not even the workspace's memories.
func (e *Engine) PlanVerify(opts VerifyOptions) (*VerifyPlan, error) {
	sel, err := e.resolve(opts.Phases, runrec.Gates{})
	if err != nil {
		return nil, err
	}
	want := sel.include
	if len(opts.Phases) > 0 {
		names, err := e.expand(opts.Phases)
		if err != nil {
			return nil, err
		}
		want = setOf(names)
	}
	order, err := e.spec.Graph.TopoOrder()
	if err != nil {
		return nil, err
	}
	todo, waves := e.waves(sel, order)
	decisions, err := e.decideWaves(todo, waves, map[string][]cache.OutputFile{}, nil)
	if err != nil {
		return nil, err
	}
	plan := &VerifyPlan{}
	trees, entries := map[string][]cache.OutputFile{}, map[string]*cache.Entry{}
	for _, d := range decisions {
		if d.entry != nil {
			trees[d.Phase] = d.entry.Outputs
			entries[d.Phase] = d.entry
		}
		if want != nil && !want[d.Phase] {
			continue
		}
		if reason := e.unverifiable(d, trees); reason != "" {
			plan.Skipped = append(plan.Skipped, VerifySkip{Phase: d.Phase, Reason: reason})
			continue
		}
		up := map[string][]cache.OutputFile{}
		for _, u := range e.spec.Graph.Upstream(d.Phase) {
			up[u] = trees[u]
		}
		plan.Phases = append(plan.Phases, e.verifyPhase(d, up, entries))
	}
	if opts.Sample > 0 && opts.Sample < len(plan.Phases) {
		plan.Seed = opts.Seed
		rng := rand.New(rand.NewPCG(opts.Seed, 0))
		picked := rng.Perm(len(plan.Phases))[:opts.Sample]
		slices.Sort(picked) // keep the graph's order
		var keep []*reproduce.Phase
		for _, i := range picked {
			keep = append(keep, plan.Phases[i])
		}
		plan.Phases = keep
	}
	for _, vp := range plan.Phases {
		plan.Cost = runrec.RoundCost(plan.Cost + vp.Cost)
		plan.DurationMS += vp.DurationMS
	}
	return plan, nil
}

// unverifiable says why decision d cannot be rerun and compared, or "".
func (e *Engine) unverifiable(d *Decision, trees map[string][]cache.OutputFile) string {
	p := e.spec.Phase(d.Phase)
	switch {
	case !p.Cache:
		return "cache = false: nothing cached to compare with"
	case d.entry == nil:
		return "not cached: " + strings.Join(d.Reasons, "; ")
	}
	// A temporary upstream output is not in the cache, so the rerun
	// could not be given it.
	up := map[string][]cache.OutputFile{}
	for _, u := range e.spec.Graph.Upstream(d.Phase) {
		up[u] = trees[u]
	}
	var upFiles, reads = map[string]cache.OutputFile{}, map[string]cache.OutputFile{}
	inputs.UpstreamReads(p, up, upFiles, reads)
	for path, f := range reads {
		if f.Temporary {
			return fmt.Sprintf("reads %s, a temporary output of %s, which the cache does not hold", path, e.producer[path])
		}
	}
	return ""
}

// Verify reruns the phases of plan (see reproduce.Runner.Run) through the
// engine's executor, with the environment a run gives them. It never
// writes the workspace or the cache.
func (e *Engine) Verify(ctx context.Context, plan *VerifyPlan, opts VerifyOptions, done func(*reproduce.Result)) []*reproduce.Result {
	r := &reproduce.Runner{Exec: e.exec, Workspace: e.ws.Root, Secrets: e.spec.SensitiveValues,
		Env: func(p *spec.Phase, binDir string, v reproduce.Vars) ([]string, []string) {
			return phaseEnv(p, binDir, cairnVars(v))
		},
		InputValue: fileValue, OverBudget: overBudget, Params: paramsJSON}
	return r.Run(ctx, plan.Phases, opts.MaxCost, done)
}

// verifyPhase is decision d, found cached, as a phase to rerun: its input
// files and its upstream outputs (up, restored from entries) come from
// the planner.
func (e *Engine) verifyPhase(d *Decision, up map[string][]cache.OutputFile, entries map[string]*cache.Entry) *reproduce.Phase {
	p := e.spec.Phase(d.Phase)
	inputs := func() ([]reproduce.Input, error) {
		comps, err := e.fullComponents(p, d, up)
		if err != nil {
			return nil, err
		}
		var ins []reproduce.Input
		for _, c := range comps {
			if c.Kind == kindInput {
				ins = append(ins, reproduce.Input{Path: c.Name, Value: c.Value})
			}
		}
		return ins, nil
	}
	restore := func(root *os.Root) error {
		for u, tree := range up {
			entry := entries[u]
			if entry == nil {
				continue // a phase found cached has every upstream cached
			}
			var stored []cache.OutputFile
			for _, f := range tree {
				if !f.Temporary {
					stored = append(stored, f)
				}
			}
			if err := e.cache.RestoreTree(e.workCtx(), root, stored, entry.Inline); err != nil {
				return fmt.Errorf("restore the outputs of upstream %s: %w", u, err)
			}
		}
		return nil
	}
	return &reproduce.Phase{Phase: d.Phase, Key: d.Key, Cost: d.entry.Cost, DurationMS: d.entry.DurationMS,
		Spec: p, Cached: d.entry.Outputs, Inputs: inputs, Restore: restore}
}
