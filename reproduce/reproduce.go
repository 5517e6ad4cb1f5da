// Package reproduce reruns cached phases in scratch copies of the
// workspace and compares their outputs with the cached ones (cairn verify
// --rerun). It stands apart from engine because, once the planner has
// chosen the phases and their keys, a rerun needs nothing of it: it stages
// files, runs one command through an executor and compares trees, and it
// never writes the workspace or the cache the engine owns.
package reproduce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// A rerun's verdicts (Result.Status).
const (
	Reproducible = "reproducible"
	Differs      = "differs"
	Failed       = "failed"
	NotRun       = "not-run" // the budget would have been exceeded
)

// Phase is one cached phase to rerun, as the planner chose it.
type Phase struct {
	Phase      string  `json:"phase"`
	Key        string  `json:"key"`
	Cost       float64 `json:"recorded_cost,omitempty"`
	DurationMS int64   `json:"recorded_duration_ms"`

	Spec   *spec.Phase        `json:"-"`
	Cached []cache.OutputFile `json:"-"` // the cached entry's outputs
	// Inputs returns the phase's input files with the values its key
	// was made from.
	Inputs func() ([]Input, error) `json:"-"`
	// Restore writes the outputs of the phase's upstream phases, from
	// the cache, under root.
	Restore func(root *os.Root) error `json:"-"`
}

// Input is one input file of a phase, relative to the workspace, and how
// it entered the phase's key.
type Input struct {
	Path, Value string
}

// Vars are the paths and names a phase's CAIRN_* variables carry.
type Vars struct {
	RunID, Job                                   string
	Attempt                                      int
	Workspace, Params, Report, Checkpoint, Cache string
}

// Runner reruns phases with what a run would give them.
type Runner struct {
	Exec      executor.Executor
	Workspace string   // the workspace the inputs are copied from
	Secrets   []string // values masked in the reruns' logs, besides secret_env's
	// Env builds a phase's environment as a run does (binDir first on
	// PATH) and returns the secret values in it.
	Env func(p *spec.Phase, binDir string, v Vars) (env, secrets []string)
	// InputValue is how a file's digest and mode enter a key.
	InputValue func(cache.Digest, fs.FileMode) string
	// OverBudget says how spending exceeds a phase's budget, or "".
	OverBudget func(spec.Budget, runrec.Spend) string
	// Params renders a phase's params as its params.json.
	Params func(map[string]string) []byte
}

// Result is how one rerun compared with the cached result.
type Result struct {
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

// Causes of a rerun's context ending early.
var (
	errTimedOut   = errors.New("timed out")
	errOverBudget = errors.New("over budget")
)

// Run reruns phases one at a time, each in a scratch directory of its own
// holding copies of its input files and its upstream outputs restored
// from the cache, and compares the outputs with the cached ones. It stops
// rerunning once the next phase's recorded cost would take the total past
// maxCost (nil: no limit). It never writes the workspace or the cache.
// done, if not nil, is called after each rerun.
func (r *Runner) Run(ctx context.Context, phases []*Phase, maxCost *float64, done func(*Result)) []*Result {
	var results []*Result
	var spent float64
	over := false
	runID := "verify-" + time.Now().UTC().Format("20060102T150405")
	for _, vp := range phases {
		if !over && maxCost != nil && spent+vp.Cost > *maxCost {
			over = true
		}
		var res *Result
		switch {
		case over:
			res = &Result{Phase: vp.Phase, Key: vp.Key, Status: NotRun,
				Error: fmt.Sprintf("not rerun: its recorded cost %s would take the reruns' cost past max_cost %s", runrec.FormatCost(vp.Cost), runrec.FormatCost(*maxCost))}
		case ctx.Err() != nil:
			res = &Result{Phase: vp.Phase, Key: vp.Key, Status: NotRun, Error: "not rerun: interrupted"}
		default:
			res = r.rerun(ctx, vp, runID)
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
func (r *Runner) rerun(ctx context.Context, vp *Phase, runID string) *Result {
	res := &Result{Phase: vp.Phase, Key: vp.Key}
	fail := func(err error) *Result {
		res.Status, res.Error = Failed, err.Error()
		return res
	}
	p := vp.Spec
	scratch, err := os.MkdirTemp("", "cairn-verify-")
	if err != nil {
		return fail(fmt.Errorf("make a scratch directory: %w", err))
	}
	defer os.RemoveAll(scratch)
	sws := workspace.New(filepath.Join(scratch, "ws"))
	if err := r.stage(vp, &sws); err != nil {
		return fail(err)
	}
	started := time.Now()
	code, spent, tail, err := r.command(ctx, p, scratch, &sws, runID)
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
	cached, _ := outputs.SplitTree(vp.Cached, declared)
	made, _ := outputs.SplitTree(tree, declared)
	for _, o := range p.Outputs {
		if files := treeDiff(cached[o.Path], made[o.Path]); len(files) > 0 {
			res.Differ = append(res.Differ, OutputDiff{Output: o.Path, Files: files})
		} else {
			res.Same = append(res.Same, o.Path)
		}
	}
	res.Status = Reproducible
	if len(res.Differ) > 0 {
		res.Status = Differs
	}
	return res
}

// stage fills the scratch workspace sws with vp's input files, copied
// from the workspace and checked against the values its key was made
// from, and the outputs of its upstream phases, restored from the cache;
// it makes the phase's working directory and its outputs' parents.
func (r *Runner) stage(vp *Phase, sws *workspace.Workspace) error {
	if err := os.MkdirAll(sws.Root, 0o755); err != nil {
		return err
	}
	inputs, err := vp.Inputs()
	if err != nil {
		return err
	}
	ws := workspace.New(r.Workspace)
	for _, in := range inputs {
		if err := copyInput(ws.Abs(in.Path), sws.Abs(in.Path)); err != nil {
			return fmt.Errorf("copy input %s: %w", in.Path, err)
		}
		dg, fi, err := memories.LoadMemory("").Digest(in.Path, sws.Abs(in.Path))
		if err != nil {
			return fmt.Errorf("hash input %s: %w", in.Path, err)
		}
		if r.InputValue(dg, fi.Mode()) != in.Value {
			return fmt.Errorf("input %s changed since the phase was decided; run cairn verify again", in.Path)
		}
	}
	root, err := os.OpenRoot(sws.Root)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := vp.Restore(root); err != nil {
		return err
	}
	if err := os.MkdirAll(sws.Abs(vp.Spec.Workdir), 0o755); err != nil {
		return err
	}
	return (&outputs.Keeper{WS: sws}).Prepare(vp.Spec)
}

// command runs p's command in the scratch workspace sws through the
// local executor, with the environment a run gives it, its CAIRN_* paths
// in scratch (an empty cache there, so that cairn memo inside the command
// writes nothing to the real one). It returns the exit code, the spending
// reported and the end of the command's stderr for errors.
func (r *Runner) command(ctx context.Context, p *spec.Phase, scratch string, sws *workspace.Workspace, runID string) (int, runrec.Spend, string, error) {
	for _, dir := range []string{"checkpoint", "cache", "bin"} {
		if err := os.MkdirAll(filepath.Join(scratch, dir), 0o755); err != nil {
			return 0, runrec.Spend{}, "", err
		}
	}
	params := filepath.Join(scratch, "params.json")
	if err := os.WriteFile(params, r.Params(p.Params), 0o600); err != nil {
		return 0, runrec.Spend{}, "", err
	}
	binDir := ""
	if exe, err := os.Executable(); err == nil && os.Symlink(exe, filepath.Join(scratch, "bin", "cairn")) == nil {
		binDir = filepath.Join(scratch, "bin")
	}
	report := filepath.Join(scratch, "report.jsonl")
	marker := runID + "/" + workspace.SafeName(p.Addr) + "/1"
	env, secrets := r.Env(p, binDir, Vars{RunID: runID, Job: marker, Attempt: 1, Workspace: sws.Root, Params: params,
		Report: report, Checkpoint: filepath.Join(scratch, "checkpoint"), Cache: filepath.Join(scratch, "cache")})
	secrets = append(secrets, r.Secrets...)
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
		if r.OverBudget(p.Budget, total) != "" {
			cancel(errOverBudget)
		}
	}, func(int, string, error) {})
	watcher.Start()
	job := &executor.Job{Phase: p.Addr, Argv: p.Command, Dir: sws.Abs(p.Workdir), Env: env, Stdout: ow, Stderr: ew,
		Marker: marker, Pipefail: !p.NoPipefail, Warn: func(string) {}}
	code, runErr := r.Exec.Run(jctx, job)
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
