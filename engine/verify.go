package engine

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/outputs"
	"github.com/cairn-run/cairn/phasefile"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

// A rerun's verdicts (VerifyResult.Status).
const (
	VerifyReproducible = "reproducible"
	VerifyDiffers      = "differs"
	VerifyFailed       = "failed"
	VerifyNotRun       = "not-run" // the budget would have been exceeded
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
	Phases  []*VerifyPhase `json:"phases"`
	Skipped []VerifySkip   `json:"skipped,omitempty"`
	// Seed is the sample's seed (0 without --sample).
	Seed uint64 `json:"seed,omitempty"`
	// Cost and Duration are the recorded cost and duration of Phases, from
	// their cache entries.
	Cost       float64 `json:"recorded_cost"`
	DurationMS int64   `json:"recorded_duration_ms"`

	up      map[string]map[string][]cache.OutputFile // a phase's upstream trees
	entries map[string]*cache.Entry                  // the cached entry of each phase found cached
}

// VerifyPhase is one cached phase to rerun.
type VerifyPhase struct {
	Phase      string  `json:"phase"`
	Key        string  `json:"key"`
	Cost       float64 `json:"recorded_cost,omitempty"`
	DurationMS int64   `json:"recorded_duration_ms"`

	d *Decision
}

// VerifySkip is a selected phase that cannot be rerun, and why.
type VerifySkip struct {
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
}

// VerifyResult is how one rerun compared with the cached result.
type VerifyResult struct {
	Phase  string `json:"phase"`
	Key    string `json:"key"`
	Status string `json:"status"`
	// Differ and Same list the declared outputs whose rerun differs from
	// the cached one, and those equal to it.
	Differ []OutputDiff `json:"differ,omitempty"`
	Same   []string     `json:"same,omitempty"`
	Error  string       `json:"error,omitempty"`
	// Spent is what the rerun reported spending through $CAIRN_REPORT.
	Spent      runrec.Spend `json:"spent,omitzero"`
	DurationMS int64        `json:"duration_ms"`
}

// OutputDiff is one declared output whose rerun differs, with the files
// that do (at most maxDiffFiles).
type OutputDiff struct {
	Output string   `json:"output"`
	Files  []string `json:"files"`
}

const maxDiffFiles = 10

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
	plan := &VerifyPlan{up: map[string]map[string][]cache.OutputFile{}, entries: map[string]*cache.Entry{}}
	trees := map[string][]cache.OutputFile{}
	for _, d := range decisions {
		if d.entry != nil {
			trees[d.Phase] = d.entry.Outputs
			plan.entries[d.Phase] = d.entry
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
		plan.up[d.Phase] = up
		plan.Phases = append(plan.Phases, &VerifyPhase{Phase: d.Phase, Key: d.Key, Cost: d.entry.Cost, DurationMS: d.entry.DurationMS, d: d})
	}
	if opts.Sample > 0 && opts.Sample < len(plan.Phases) {
		plan.Seed = opts.Seed
		rng := rand.New(rand.NewPCG(opts.Seed, 0))
		picked := rng.Perm(len(plan.Phases))[:opts.Sample]
		slices.Sort(picked) // keep the graph's order
		var keep []*VerifyPhase
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
	upstreamReads(p, up, upFiles, reads)
	for path, f := range reads {
		if f.Temporary {
			return fmt.Sprintf("reads %s, a temporary output of %s, which the cache does not hold", path, e.producer[path])
		}
	}
	return ""
}

// Verify reruns the phases of plan one at a time, each in a scratch
// directory of its own holding copies of its input files and its
// upstream outputs restored from the cache, through the local executor,
// and compares the outputs with the cached entry's. It never writes the
// workspace or the cache. done, if not nil, is called after each rerun.
func (e *Engine) Verify(ctx context.Context, plan *VerifyPlan, opts VerifyOptions, done func(*VerifyResult)) []*VerifyResult {
	var results []*VerifyResult
	var spent float64
	over := false
	runID := "verify-" + time.Now().UTC().Format("20060102T150405")
	for _, vp := range plan.Phases {
		if !over && opts.MaxCost != nil && spent+vp.Cost > *opts.MaxCost {
			over = true
		}
		var res *VerifyResult
		switch {
		case over:
			res = &VerifyResult{Phase: vp.Phase, Key: vp.Key, Status: VerifyNotRun,
				Error: fmt.Sprintf("not rerun: its recorded cost %s would take the reruns' cost past max_cost %s", runrec.FormatCost(vp.Cost), runrec.FormatCost(*opts.MaxCost))}
		case ctx.Err() != nil:
			res = &VerifyResult{Phase: vp.Phase, Key: vp.Key, Status: VerifyNotRun, Error: "not rerun: interrupted"}
		default:
			res = e.rerun(ctx, vp, plan, runID)
			spent = runrec.RoundCost(spent + max(res.Spent.Cost, vp.Cost))
		}
		results = append(results, res)
		if done != nil {
			done(res)
		}
	}
	return results
}

// rerun runs one phase in a scratch directory and compares its outputs.
func (e *Engine) rerun(ctx context.Context, vp *VerifyPhase, plan *VerifyPlan, runID string) *VerifyResult {
	res := &VerifyResult{Phase: vp.Phase, Key: vp.Key}
	fail := func(err error) *VerifyResult {
		res.Status, res.Error = VerifyFailed, err.Error()
		return res
	}
	p := e.spec.Phase(vp.Phase)
	scratch, err := os.MkdirTemp("", "cairn-verify-")
	if err != nil {
		return fail(fmt.Errorf("make a scratch directory: %w", err))
	}
	defer os.RemoveAll(scratch)
	sws := workspace.New(filepath.Join(scratch, "ws"))
	if err := e.stage(p, vp.d, plan, &sws); err != nil {
		return fail(err)
	}
	started := time.Now()
	code, spent, tail, err := e.rerunCommand(ctx, p, scratch, &sws, runID)
	res.DurationMS = time.Since(started).Milliseconds()
	res.Spent = spent
	switch {
	case err != nil:
		return fail(fmt.Errorf("%v%s", err, tail))
	case code != 0:
		return fail(fmt.Errorf("exited %d in the scratch copy (an input it reads may be undeclared)%s", code, tail))
	}
	keep := outputs.Keeper{WS: &sws, Mem: memories.LoadMemory(filepath.Join(scratch, "digests")), Now: time.Now}
	tree, _, err := keep.InWorkspace(p)
	if err != nil {
		return fail(err)
	}
	declared := p.OutputPaths()
	cached, _ := outputs.SplitTree(vp.d.entry.Outputs, declared)
	made, _ := outputs.SplitTree(tree, declared)
	for _, o := range p.Outputs {
		if files := treeDiff(cached[o.Path], made[o.Path]); len(files) > 0 {
			res.Differ = append(res.Differ, OutputDiff{Output: o.Path, Files: files})
		} else {
			res.Same = append(res.Same, o.Path)
		}
	}
	res.Status = VerifyReproducible
	if len(res.Differ) > 0 {
		res.Status = VerifyDiffers
	}
	return res
}

// stage fills the scratch workspace sws with p's input files, copied from
// the workspace and checked against the digests its key was made from,
// and the outputs of its upstream phases, restored from the cache; it
// makes p's working directory and its outputs' parents.
func (e *Engine) stage(p *spec.Phase, d *Decision, plan *VerifyPlan, sws *workspace.Workspace) error {
	up := plan.up[p.Addr]
	if err := os.MkdirAll(sws.Root, 0o755); err != nil {
		return err
	}
	comps, err := e.fullComponents(p, d, up)
	if err != nil {
		return err
	}
	for _, c := range comps {
		if c.Kind != kindInput {
			continue
		}
		if err := copyInput(e.ws.Abs(c.Name), sws.Abs(c.Name)); err != nil {
			return fmt.Errorf("copy input %s: %w", c.Name, err)
		}
		dg, fi, err := memories.LoadMemory("").Digest(c.Name, sws.Abs(c.Name))
		if err != nil {
			return fmt.Errorf("hash input %s: %w", c.Name, err)
		}
		if fileValue(dg, fi.Mode()) != c.Value {
			return fmt.Errorf("input %s changed since the phase was decided; run cairn verify again", c.Name)
		}
	}
	root, err := os.OpenRoot(sws.Root)
	if err != nil {
		return err
	}
	defer root.Close()
	for u, tree := range up {
		entry := plan.entries[u]
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
	if err := os.MkdirAll(sws.Abs(p.Workdir), 0o755); err != nil {
		return err
	}
	return (&outputs.Keeper{WS: sws}).Prepare(p)
}

// rerunCommand runs p's command in the scratch workspace sws through the
// local executor, with the environment a run gives it, its CAIRN_* paths
// in scratch (an empty cache there, so that cairn memo inside the command
// writes nothing to the real one). It returns the exit code, the spending
// reported and the end of the command's stderr for errors.
func (e *Engine) rerunCommand(ctx context.Context, p *spec.Phase, scratch string, sws *workspace.Workspace, runID string) (int, runrec.Spend, string, error) {
	for _, dir := range []string{"checkpoint", "cache", "bin"} {
		if err := os.MkdirAll(filepath.Join(scratch, dir), 0o755); err != nil {
			return 0, runrec.Spend{}, "", err
		}
	}
	params := filepath.Join(scratch, "params.json")
	if err := os.WriteFile(params, paramsJSON(p.Params), 0o600); err != nil {
		return 0, runrec.Spend{}, "", err
	}
	binDir := ""
	if exe, err := os.Executable(); err == nil && os.Symlink(exe, filepath.Join(scratch, "bin", "cairn")) == nil {
		binDir = filepath.Join(scratch, "bin")
	}
	report := filepath.Join(scratch, "report.jsonl")
	marker := runID + "/" + workspace.SafeName(p.Addr) + "/1"
	env, secrets := phaseEnv(p, binDir, cairnVars{RunID: runID, Job: marker, Attempt: 1, Workspace: sws.Root, Params: params,
		Report: report, Checkpoint: filepath.Join(scratch, "checkpoint"), Cache: filepath.Join(scratch, "cache")})
	secrets = append(secrets, e.spec.SensitiveValues...)
	stdout, err := os.Create(filepath.Join(scratch, "stdout"))
	if err != nil {
		return 0, runrec.Spend{}, "", err
	}
	defer stdout.Close()
	stderrPath := filepath.Join(scratch, "stderr")
	stderr, err := os.Create(stderrPath)
	if err != nil {
		return 0, runrec.Spend{}, "", err
	}
	defer stderr.Close()
	var ow, ew io.Writer = stdout, stderr
	if len(secrets) > 0 {
		mo, me := phasefile.NewMaskWriter(stdout, secrets), phasefile.NewMaskWriter(stderr, secrets)
		defer mo.Close()
		defer me.Close()
		ow, ew = mo, me
	}
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if t := p.Budget.Timeout; t > 0 {
		timer := time.AfterFunc(t, func() { cancel(errTimedOut) })
		defer timer.Stop()
	}
	watcher := phasefile.NewReportWatcher(report, 0, 0, 100*time.Millisecond, func(total runrec.Spend) {
		if overBudget(p.Budget, total) != "" {
			cancel(errOverBudget)
		}
	}, func(int, string, error) {})
	watcher.Start()
	job := &executor.Job{Phase: p.Addr, Argv: p.Command, Dir: sws.Abs(p.Workdir), Env: env, Stdout: ow, Stderr: ew,
		Marker: marker, Pipefail: !p.NoPipefail, Warn: func(string) {}}
	code, runErr := e.exec.Run(jctx, job)
	spent, _ := watcher.Finish()
	if runErr != nil && jctx.Err() != nil {
		runErr = context.Cause(jctx)
	}
	return code, spent, stderrTail(stderrPath), runErr
}

// stderrTail returns the last lines of a rerun's stderr, ready to follow
// an error message, or "".
func stderrTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "; its stderr ends:\n    " + strings.Join(lines, "\n    ")
}

// copyInput copies one input file, keeping its mode bits.
func copyInput(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// treeDiff lists the paths where two trees of one output differ: in
// type, content, symlink target or executable bit (not mtimes, which a
// rerun never keeps). A missing output is its own path.
func treeDiff(cached, rerun []cache.OutputFile) []string {
	byPath := map[string]cache.OutputFile{}
	for _, f := range rerun {
		byPath[f.Path] = f
	}
	var diff []string
	for _, c := range cached {
		r, ok := byPath[c.Path]
		delete(byPath, c.Path)
		if !ok || r.Type != c.Type || r.Digest != c.Digest || r.Target != c.Target || (c.Type == "file" && r.Mode&0o111 != c.Mode&0o111) {
			diff = append(diff, c.Path)
		}
	}
	for path := range byPath {
		diff = append(diff, path)
	}
	if len(cached) == 0 && len(rerun) == 0 {
		return nil
	}
	slices.Sort(diff)
	if len(diff) > maxDiffFiles {
		diff = append(diff[:maxDiffFiles:maxDiffFiles], "and "+strconv.Itoa(len(diff)-maxDiffFiles)+" more")
	}
	return diff
}
