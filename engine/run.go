package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/spec"
)

// RunOptions select and shape a run.
type RunOptions struct {
	Targets []string
	Force   []string
	// Jobs is the number of phases run at once; 0 means the spec's
	// concurrency, else the number of CPUs.
	Jobs int
	// KeepGoing keeps starting independent phases after one failed.
	KeepGoing bool
	// Flags are recorded in state.json as given.
	Flags map[string]any
}

// RunResult summarises a finished run.
type RunResult struct {
	RunID  string
	Status string // RunSucceeded, RunFailed, RunStopped
	Counts map[string]int
	// Failures holds the error of every failed phase, by address.
	Failures map[string]error
	Duration time.Duration
}

// PhaseError is the error of a failed phase: what failed and where its
// log is.
type PhaseError struct {
	Phase    string
	ExitCode int
	Log      string // stderr log, relative to the workspace
	Tail     string // last lines of stderr
	Err      error  // set when the phase failed for another reason than its exit code
}

func (e *PhaseError) Error() string {
	var msg string
	if e.Err != nil {
		msg = fmt.Sprintf("phase %s failed: %v", e.Phase, e.Err)
	} else {
		msg = fmt.Sprintf("phase %s failed: exit status %d", e.Phase, e.ExitCode)
	}
	if e.Log != "" {
		msg += fmt.Sprintf(" (log: %s)", e.Log)
	}
	return msg
}

func (e *PhaseError) Unwrap() error { return e.Err }

// newRunID returns a sortable, unique run id: UTC time plus random bits.
func newRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Run runs the selected phases and what they need. It holds the workspace
// lock for its whole duration. The returned error is for problems that
// stop the run itself (lock held, unknown phase, state not writable);
// failed phases are reported in the result.
func (e *Engine) Run(ctx context.Context, opts RunOptions) (*RunResult, error) {
	sel, err := e.selection(opts.Targets)
	if err != nil {
		return nil, err
	}
	if err := e.checkNames(opts.Force); err != nil {
		return nil, err
	}
	start := e.now()
	runID := newRunID(start)
	lock, err := e.ws.TryLock(runID)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	e.recoverStaleRun()
	if err := writeFileAtomic(e.ws.currentFile(), []byte(runID+"\n"), 0o644, false); err != nil {
		return nil, err
	}

	r := &runner{
		e:       e,
		opts:    opts,
		runID:   runID,
		forced:  setOf(opts.Force),
		trees:   map[string][]cache.OutputFile{},
		results: make(chan phaseResult),
		res:     &RunResult{RunID: runID, Counts: map[string]int{}, Failures: map[string]error{}},
	}
	r.runDir = filepath.Join(e.ws.RunsDir(), runID)
	for _, d := range []string{"logs", "params"} {
		if err := os.MkdirAll(filepath.Join(r.runDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("create run directory: %w", err)
		}
	}
	r.binDir = e.linkSelf()

	host, _ := os.Hostname()
	st := &RunState{
		SchemaVersion: StateSchemaVersion,
		RunID:         runID,
		Spec:          filepath.Base(e.spec.File),
		SpecHash:      e.spec.Hash,
		Targets:       append([]string{}, opts.Targets...),
		Flags:         opts.Flags,
		Host:          host,
		PID:           os.Getpid(),
		Started:       start.UTC(),
		Heartbeat:     start.UTC(),
		Status:        RunRunning,
		Phases:        map[string]*PhaseState{},
	}
	for _, p := range e.spec.Phases {
		if sel == nil || sel[p.Addr] {
			st.Phases[p.Addr] = &PhaseState{Status: StatusPending}
		}
	}
	r.state, err = newStateFile(e.ws.StatePath(runID), st, 250*time.Millisecond)
	if err != nil {
		return nil, err
	}

	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = e.spec.Experiment.Concurrency
	}
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	r.schedule(ctx, sel, jobs)

	status := RunSucceeded
	if len(r.res.Failures) > 0 {
		status = RunFailed
	}
	if ctx.Err() != nil {
		status = RunStopped
	}
	end := e.now()
	r.state.update(func(st *RunState) {
		st.Status = status
		t := end.UTC()
		st.Ended = &t
		st.Heartbeat = t
		for _, ps := range st.Phases {
			if ps.Status == StatusPending {
				ps.Status = StatusSkipped
			}
		}
		for _, ps := range st.Phases {
			r.res.Counts[ps.Status]++
		}
	})
	var errs []error
	if err := r.state.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := e.mem.Save(); err != nil {
		errs = append(errs, err)
	}
	if err := e.lastKeys.save(); err != nil {
		errs = append(errs, err)
	}
	_ = os.Remove(e.ws.currentFile())
	r.res.Status = status
	r.res.Duration = end.Sub(start)
	return r.res, errors.Join(errs...)
}

// linkSelf puts a "cairn" symlink to the running binary in .cairn/bin, so
// that phases find cairn on their PATH even when it is not installed.
func (e *Engine) linkSelf() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	dir := filepath.Join(e.ws.StateDir(), "bin")
	link := filepath.Join(dir, "cairn")
	if cur, err := os.Readlink(link); err == nil && cur == exe {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(exe, tmp); err != nil {
		return ""
	}
	if err := os.Rename(tmp, link); err != nil {
		return ""
	}
	return dir
}

// runner is the state of one Run.
type runner struct {
	e      *Engine
	opts   RunOptions
	runID  string
	runDir string
	binDir string
	forced map[string]bool
	state  *stateFile

	mu    sync.Mutex
	trees map[string][]cache.OutputFile // finished phases' outputs

	results chan phaseResult
	res     *RunResult
}

type phaseResult struct {
	addr string
	ok   bool
}

// schedule drives the dag.Plan: it starts ready phases up to jobs at once
// and, after a failure (without KeepGoing) or cancellation, starts no new
// phase but waits for the running ones.
func (r *runner) schedule(ctx context.Context, sel map[string]bool, jobs int) {
	plan := dag.NewPlan(r.e.spec.Graph, sel)
	var queue []string
	running := 0
	stopping := false
	for {
		if !stopping {
			queue = append(queue, plan.Ready()...)
		}
		for !stopping && running < jobs && len(queue) > 0 {
			addr := queue[0]
			queue = queue[1:]
			running++
			go func() { r.results <- phaseResult{addr, r.process(ctx, addr)} }()
		}
		if running == 0 {
			return
		}
		pr := <-r.results
		running--
		for _, s := range plan.Done(pr.addr, pr.ok) {
			r.state.phase(s, func(ps *PhaseState) {
				ps.Status = StatusBlocked
				ps.Error = fmt.Sprintf("upstream phase %s did not succeed", pr.addr)
			})
			r.e.rep.Report(Event{Kind: EventDone, Phase: s, Status: StatusBlocked, Reasons: []string{"upstream " + pr.addr + " failed"}, Time: r.e.now()})
		}
		if (!pr.ok && !r.opts.KeepGoing) || ctx.Err() != nil {
			stopping = true
		}
	}
}

// process decides and then restores or runs one phase. It reports whether
// the phase's outputs are now in place.
func (r *runner) process(ctx context.Context, addr string) bool {
	e := r.e
	p := e.spec.Phase(addr)
	up := map[string][]cache.OutputFile{}
	r.mu.Lock()
	for _, u := range e.spec.Graph.Upstream(addr) {
		up[u] = r.trees[u]
	}
	r.mu.Unlock()

	began := e.now()
	d, err := e.decide(p, up, r.forced[addr])
	if err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: err})
	}
	for _, w := range d.warnings {
		e.rep.Report(Event{Kind: EventWarning, Phase: addr, Message: w, Time: e.now()})
	}
	r.state.phase(addr, func(ps *PhaseState) {
		ps.Key = d.Key
		ps.Reasons = d.Reasons
	})

	if d.Action == ActionRestore {
		err := r.restore(d)
		if err == nil {
			r.finish(addr, d, StatusRestored, d.entry.Outputs, began)
			return true
		}
		// The cache could not give the outputs back (a corrupt blob was
		// moved aside): run the phase instead.
		e.rep.Report(Event{Kind: EventWarning, Phase: addr, Message: fmt.Sprintf("phase %s: restore failed, running it instead: %v", addr, err), Time: e.now()})
		d.Action = ActionRun
		d.Reasons = []string{"cached output could not be restored"}
	}
	if d.Action == ActionCached {
		r.finish(addr, d, StatusCached, d.entry.Outputs, began)
		return true
	}
	return r.execute(ctx, p, d)
}

func (r *runner) restore(d *Decision) error {
	for _, o := range d.restore {
		if err := r.e.restoreOutput(o, treeOf(d.entry.Outputs, o)); err != nil {
			return err
		}
	}
	return nil
}

// finish records a phase that ended well.
func (r *runner) finish(addr string, d *Decision, status string, tree []cache.OutputFile, began time.Time) {
	e := r.e
	r.mu.Lock()
	r.trees[addr] = tree
	r.mu.Unlock()
	e.lastKeys.set(addr, d.key)
	end := e.now()
	r.state.phase(addr, func(ps *PhaseState) {
		ps.Status = status
		if status != StatusSucceeded {
			ps.DurationMS = end.Sub(began).Milliseconds()
		}
	})
	e.rep.Report(Event{Kind: EventDone, Phase: addr, Status: status, Reasons: d.Reasons, Duration: end.Sub(began), Time: end})
}

// fail records a failed phase.
func (r *runner) fail(addr string, began time.Time, perr *PhaseError) bool {
	end := r.e.now()
	r.mu.Lock()
	r.res.Failures[addr] = perr
	r.mu.Unlock()
	r.state.phase(addr, func(ps *PhaseState) {
		ps.Status = StatusFailed
		ps.Error = perr.Error()
		ps.LogTail = perr.Tail
		t := end.UTC()
		ps.Ended = &t
	})
	r.e.rep.Report(Event{Kind: EventDone, Phase: addr, Status: StatusFailed, Err: perr, Duration: end.Sub(began), Time: end})
	return false
}

// execute runs a phase's command and stores its outputs.
func (r *runner) execute(ctx context.Context, p *spec.Phase, d *Decision) bool {
	e := r.e
	addr := p.Addr
	began := e.now()
	if err := e.prepareOutputs(p); err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: err})
	}
	logBase := filepath.Join(r.runDir, "logs", safeName(addr))
	stdoutPath, stderrPath := logBase+".stdout", logBase+".stderr"
	relErr := e.ws.Rel(stderrPath)
	stdoutF, err := os.OpenFile(stdoutPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: err})
	}
	defer stdoutF.Close()
	stderrF, err := os.OpenFile(stderrPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: err})
	}
	defer stderrF.Close()

	env, secrets, err := r.environment(p)
	if err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: err})
	}
	job := &Job{Phase: addr, Argv: p.Command, Dir: e.ws.Abs(p.Workdir), Env: env, Stdout: stdoutF, Stderr: stderrF}
	var masks []*maskWriter
	if len(secrets) > 0 {
		mo, me := newMaskWriter(stdoutF, secrets), newMaskWriter(stderrF, secrets)
		masks = append(masks, mo, me)
		job.Stdout, job.Stderr = mo, me
	}

	startT := e.now().UTC()
	r.state.phase(addr, func(ps *PhaseState) {
		ps.Status = StatusRunning
		ps.Attempts++
		ps.Started = &startT
		ps.Stdout = e.ws.Rel(stdoutPath)
		ps.Stderr = relErr
	})
	e.rep.Report(Event{Kind: EventStart, Phase: addr, Reasons: d.Reasons, Time: startT})
	code, runErr := e.exec.Run(ctx, job)
	for _, m := range masks {
		_ = m.Close()
	}
	end := e.now()
	endT := end.UTC()
	r.state.phase(addr, func(ps *PhaseState) {
		ps.Ended = &endT
		ps.DurationMS = end.Sub(startT).Milliseconds()
		if runErr == nil {
			c := code
			ps.ExitCode = &c
		}
	})
	if runErr != nil && ctx.Err() != nil {
		r.state.phase(addr, func(ps *PhaseState) {
			ps.Status = StatusStopped
			ps.Error = "stopped: " + ctx.Err().Error()
		})
		e.rep.Report(Event{Kind: EventDone, Phase: addr, Status: StatusStopped, Duration: end.Sub(startT), Time: end})
		return false
	}
	if runErr != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: runErr, Log: relErr})
	}
	if code != 0 {
		return r.fail(addr, began, &PhaseError{Phase: addr, ExitCode: code, Log: relErr, Tail: tail(stderrPath, 20)})
	}

	tree, err := e.collectOutputs(p)
	if err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: err, Log: relErr})
	}
	if p.Cache {
		if err := r.store(p, d, tree, stdoutPath, stderrPath, end.Sub(startT)); err != nil {
			// The outputs are fine; only caching failed. Say so and go on.
			e.rep.Report(Event{Kind: EventWarning, Phase: addr, Message: fmt.Sprintf("phase %s: could not cache the result: %v", addr, err), Time: e.now()})
		}
	}
	r.finish(addr, d, StatusSucceeded, tree, began)
	return true
}

// store writes the phase's logs and action entry to the cache; the
// outputs' blobs are already there (collectOutputs stored them), so the
// entry never references a missing blob.
func (r *runner) store(p *spec.Phase, d *Decision, tree []cache.OutputFile, stdoutPath, stderrPath string, dur time.Duration) error {
	c := r.e.cache
	outD, _, err := c.PutFile(stdoutPath)
	if err != nil {
		return err
	}
	errD, _, err := c.PutFile(stderrPath)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	who := ""
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	entry := &cache.Entry{
		Format:     1,
		Key:        d.key,
		Phase:      p.Addr,
		Components: d.components,
		Outputs:    tree,
		ExitCode:   0,
		Stdout:     outD,
		Stderr:     errD,
		DurationMS: dur.Milliseconds(),
		Created:    r.e.now().UTC(),
		Host:       host,
		User:       who,
	}
	return c.PutEntry(entry)
}

// environment builds a phase's clean environment: a minimal passthrough,
// declared env, pass_env and secret_env from the caller, and CAIRN_*
// variables. It returns the secret values for masking.
func (r *runner) environment(p *spec.Phase) ([]string, []string, error) {
	e := r.e
	var env []string
	path := os.Getenv("PATH")
	if r.binDir != "" {
		path = r.binDir + string(os.PathListSeparator) + path
	}
	env = append(env, "PATH="+path)
	for _, k := range []string{"HOME", "USER", "LOGNAME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range p.PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	var secrets []string
	for _, k := range p.SecretEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
			secrets = append(secrets, v)
		}
	}
	for k, v := range p.Env {
		env = append(env, k+"="+v)
	}
	paramsPath := filepath.Join(r.runDir, "params", safeName(p.Addr)+".json")
	if err := os.WriteFile(paramsPath, paramsJSON(p.Params), 0o644); err != nil {
		return nil, nil, fmt.Errorf("write params: %w", err)
	}
	env = append(env,
		"CAIRN_PHASE="+p.Addr,
		"CAIRN_RUN_ID="+r.runID,
		"CAIRN_WORKSPACE="+e.ws.Root,
		"CAIRN_PARAMS="+paramsPath,
	)
	for k, v := range p.Params {
		env = append(env, "CAIRN_PARAM_"+envName(k)+"="+paramText(v))
	}
	return env, secrets, nil
}

// paramsJSON renders params (canonical JSON values) as one JSON object
// with sorted keys.
func paramsJSON(params map[string]string) []byte {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%s", k, params[k])
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// paramText is a param as an environment value: strings bare, anything
// else as JSON.
func paramText(js string) string {
	if len(js) >= 2 && js[0] == '"' {
		var s string
		if err := json.Unmarshal([]byte(js), &s); err == nil {
			return s
		}
	}
	return js
}

func envName(k string) string {
	var b strings.Builder
	for _, c := range strings.ToUpper(k) {
		if (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 64*1024 {
		b = b[len(b)-64*1024:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
