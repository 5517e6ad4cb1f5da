package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/executor/local"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/outputs"
	"github.com/cairn-run/cairn/phasefile"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

// Causes of a phase's context ending early.
var (
	errTimedOut   = errors.New("timed out")
	errOverBudget = errors.New("over budget")
)

// fail records a phase that did not succeed (failed, timed out or over
// budget).
func (r *runner) fail(addr string, began time.Time, perr *PhaseError) bool {
	if perr.Status == "" {
		perr.Status = runrec.StatusFailed
	}
	end := r.e.now()
	r.mu.Lock()
	r.res.Failures[addr] = perr
	r.mu.Unlock()
	r.state.Phase(addr, func(ps *runrec.PhaseState) {
		ps.Status = perr.Status
		ps.Error = perr.Error()
		ps.LogTail = perr.Tail
		t := end.UTC()
		ps.Ended = &t
	})
	r.e.rep.Report(Event{Kind: EventDone, Phase: addr, Status: perr.Status, Err: perr, Duration: end.Sub(began), Time: end})
	return false
}

// attemptResult is how one execution of a phase's command ended.
type attemptResult struct {
	status string // StatusSucceeded, StatusFailed, StatusTimedOut, StatusOverBudget, StatusStopped, StatusBlocked, statusNotStarted
	perr   *PhaseError
	// keepOutputs: the phase's outputs are left as they are, since
	// nothing of this attempt wrote them (it failed before its command
	// started) or a remote job that may outlive the attempt (adopted, or
	// left behind when cairn stopped following it) may still write them.
	keepOutputs bool
}

// statusNotStarted is an attempt whose command was not started because
// the run stopped, halted or spent its budget while the phase waited for
// its upstream phases (never a status in state.json).
const statusNotStarted = "not-started"

// execute runs a phase's command, retrying it as its budget allows, and
// stores its outputs.
func (r *runner) execute(ctx context.Context, p *spec.Phase, d *Decision, up map[string][]cache.OutputFile) bool {
	e := r.e
	addr := p.Addr
	began := e.now()
	cores.RaiseProcs() // commands are waited for and started from here on
	if err := r.runDirs(); err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: err})
	}
	// No command starts before the run's first record is on disk.
	if err := r.state.Ready(); err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: fmt.Errorf("save the run record: %w", err)})
	}
	ckpt := filepath.Join(r.ckpts.Dir, d.key.String())
	if err := r.ckpts.Make(ckpt); err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: fmt.Errorf("create checkpoint directory: %w", err)})
	}
	ph := &phaseRun{
		p:          p,
		d:          d,
		up:         up,
		logBase:    filepath.Join(r.runDir, "logs", workspace.SafeName(addr)),
		reportPath: filepath.Join(r.runDir, "reports", workspace.SafeName(addr)+".jsonl"),
		ckpt:       ckpt,
	}
	// The report file is made by the phase's first write to it (the
	// watcher reads a missing file as an empty one): one file fewer to
	// create per phase.
	attempts := 1 + p.Budget.Retries
	for attempt := 1; ; attempt++ {
		res := r.attempt(ctx, ph, attempt)
		switch res.status {
		case runrec.StatusSucceeded:
			r.freeSlot(addr)
			return r.succeed(ph, began)
		case statusNotStarted:
			// The run stopped or halted while the phase waited for its
			// upstream phases: it stays pending, as a phase never
			// started does, and is skipped when the run ends.
			r.ckpts.Release(ph.ckpt)
			return false
		case runrec.StatusStopped:
			msg := "stopped: the run was interrupted while the phase ran"
			var reasons []string
			if !res.keepOutputs {
				if removed := r.removePartialOutputs(p); len(removed) > 0 {
					reasons = []string{removedNote(removed)}
					msg += "; " + reasons[0]
				}
			}
			end := e.now()
			r.state.Phase(addr, func(ps *runrec.PhaseState) {
				ps.Status = runrec.StatusStopped
				ps.Error = msg
			})
			e.rep.Report(Event{Kind: EventDone, Phase: addr, Status: runrec.StatusStopped, Reasons: reasons, Duration: end.Sub(began), Spend: ph.spent, Time: end})
			return false
		case runrec.StatusFailed, runrec.StatusTimedOut:
			if attempt < attempts && r.waitRetry(ctx, ph, attempt, res) {
				continue
			}
		}
		if res.status != runrec.StatusBlocked && !res.keepOutputs {
			res.perr.Removed = r.removePartialOutputs(p)
		}
		return r.fail(addr, began, res.perr)
	}
}

// maxReportWarnings is how many bad report lines of a phase are warned
// about one by one: a phase writing binary into $CAIRN_REPORT would
// otherwise bury the run's output under them.
const maxReportWarnings = 10

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// phaseRun is what the attempts of one phase share.
type phaseRun struct {
	p          *spec.Phase
	d          *Decision
	up         map[string][]cache.OutputFile // the upstream trees d was decided with
	logBase    string
	reportPath string
	reportOff  int64
	reportLine int
	ckpt       string
	spent      runrec.Spend // over all attempts
	sawCost    bool
	// badReports counts the bad report lines warned about, over all
	// attempts; past maxReportWarnings they are only counted (badHidden)
	// and summed up in one warning when the attempt ends.
	badReports, badHidden int
	stdout                string
	stderr                string
	duration              time.Duration
	metrics               json.RawMessage // read when the command succeeded
	// The last attempt wrote nothing to stdout, stderr.
	stdoutEmpty, stderrEmpty bool
}

// waitRetry waits out the backoff before another attempt. It returns
// false when the run is stopping and the phase should not run again.
func (r *runner) waitRetry(ctx context.Context, ph *phaseRun, attempt int, res attemptResult) bool {
	wait := r.backoff << (attempt - 1)
	if wait > time.Minute || wait <= 0 {
		wait = time.Minute
	}
	r.e.rep.Report(Event{Kind: EventRetry, Phase: ph.p.Addr, Attempt: attempt + 1, Err: res.perr,
		Message: fmt.Sprintf("%s; retrying in %s (attempt %d of %d)", res.perr.Error(), wait, attempt+1, 1+ph.p.Budget.Retries), Time: r.e.now()})
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false
	case <-r.stopCh:
		return false
	}
	// Keep each earlier attempt's logs beside the last one's.
	for _, ext := range []string{".stdout", ".stderr"} {
		_ = os.Rename(ph.logBase+ext, ph.logBase+".attempt"+strconv.Itoa(attempt)+ext)
	}
	return true
}

// attemptRun is one execution of a phase's command as it is prepared,
// run and accounted for.
type attemptRun struct {
	ph      *phaseRun
	attempt int
	x       executor.Executor
	xname   string
	remote  executor.RemoteExecutor // x, when its jobs run elsewhere
	rj      *executor.RemoteJob
	// adopted: a remote job of an earlier run, still writing the outputs.
	adopted bool
	job     *executor.Job
	// The phase's logs, and the writers in front of them (masks, then
	// tees), closed in that order when the command ended.
	stdoutF, stderrF       *phasefile.Log
	stdoutPath, stderrPath string
	relErr                 string // stderrPath, relative to the workspace
	writers                []io.Closer
	// overMsg says how the phase went over its budget, once it did.
	overMsg string
}

// attempt runs the phase's command once.
func (r *runner) attempt(ctx context.Context, ph *phaseRun, attempt int) attemptResult {
	addr := ph.p.Addr
	a := &attemptRun{ph: ph, attempt: attempt}
	defer a.closeLogs()
	if err := r.prepareAttempt(ctx, a); err != nil {
		return attemptResult{status: runrec.StatusFailed, perr: &PhaseError{Phase: addr, Err: err}, keepOutputs: true}
	}
	if len(ph.p.Params) > 0 && r.e.holdsSensitive(string(paramsJSON(ph.p.Params))) {
		// Secrets never outlive the command in the run's records.
		defer os.Remove(filepath.Join(r.runDir, "params", workspace.SafeName(addr)+".json"))
	}
	if err := r.buildJob(a); err != nil {
		return attemptResult{status: runrec.StatusFailed, perr: &PhaseError{Phase: addr, Err: err}, keepOutputs: true}
	}
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watcher := r.watchReports(a, cancel)

	// The command starts once the upstream phases whose outputs it
	// reads are over: what came before overlapped their fsyncs.
	u, granted := r.awaitUpstreams(addr)
	if !granted {
		return attemptResult{status: statusNotStarted}
	}
	if u != "" {
		return attemptResult{status: runrec.StatusBlocked, perr: &PhaseError{Phase: addr, Status: runrec.StatusBlocked,
			Err: fmt.Errorf("upstream phase %s did not succeed: its outputs could not be stored in the cache", u)}, keepOutputs: a.adopted}
	}
	// The timeout counts from here: not the wait for the upstream phases
	// and for a job slot. A remote executor passes it to its backend
	// (which does not count the time the job waits in the queue).
	if t := ph.p.Budget.Timeout; t > 0 && a.remote == nil {
		timer := time.AfterFunc(t, func() { cancel(errTimedOut) })
		defer timer.Stop()
	}
	start := r.attemptStarted(a)
	watcher.Start()
	var code int
	var runErr error
	if a.remote != nil {
		code, runErr = a.remote.RunRemote(jctx, a.job, a.rj)
	} else {
		code, runErr = a.x.Run(jctx, a.job)
	}
	r.attemptEnded(a, watcher, start, code, runErr)
	if runErr != nil && jctx.Err() != nil {
		return a.interrupted(context.Cause(jctx))
	}
	return r.attemptOutcome(a, code, runErr)
}

// prepareAttempt finds the phase's executor, prepares its outputs (unless
// an adopted remote job is still writing them) and opens its logs.
func (r *runner) prepareAttempt(ctx context.Context, a *attemptRun) error {
	e := r.e
	p := a.ph.p
	var err error
	a.x, a.xname, err = r.executorFor(p)
	if err != nil {
		return err
	}
	a.remote, _ = a.x.(executor.RemoteExecutor)
	if a.remote != nil {
		a.rj = r.remoteJob(ctx, a.remote, a.xname, a.ph, a.attempt)
	}
	// An adopted job is still writing the outputs: leave them be.
	a.adopted = a.rj != nil && a.rj.Adopt != nil
	if !a.adopted {
		if err := e.out.Prepare(p); err != nil {
			return err
		}
	}
	a.stdoutPath, a.stderrPath = a.ph.logBase+".stdout", a.ph.logBase+".stderr"
	a.ph.stdout, a.ph.stderr = a.stdoutPath, a.stderrPath
	a.relErr = e.ws.Rel(a.stderrPath)
	empty := r.emptyLog.Get(filepath.Dir(a.stdoutPath))
	if a.stdoutF, err = phasefile.OpenLog(a.stdoutPath, empty); err != nil {
		return err
	}
	a.stderrF, err = phasefile.OpenLog(a.stderrPath, empty)
	return err
}

// closeLogs closes the phase's log files.
func (a *attemptRun) closeLogs() {
	for _, f := range []*phasefile.Log{a.stdoutF, a.stderrF} {
		if f != nil {
			f.Close()
		}
	}
}

// buildJob builds the job: the phase's command, environment and log
// files, with the caller's copies of its output (teed after masking, so
// they never see a secret) and every secret masked.
func (r *runner) buildJob(a *attemptRun) error {
	e := r.e
	p := a.ph.p
	marker := r.runID + "/" + workspace.SafeName(p.Addr) + "/" + strconv.Itoa(a.attempt)
	env, secrets, err := r.environment(a.ph, a.attempt, marker)
	if err != nil {
		return err
	}
	secrets = append(secrets, e.spec.SensitiveValues...)
	job := &executor.Job{Phase: p.Addr, Argv: p.Command, Dir: e.ws.Abs(p.Workdir), Env: env, Stdout: a.stdoutF, Stderr: a.stderrF,
		Marker: marker, Config: p.ExecutorConfig[a.xname], Pipefail: !p.NoPipefail, Warn: r.warnOnce}
	var tees []io.Closer
	if r.opts.PhaseOutput != nil {
		to, te := r.opts.PhaseOutput(p.Addr)
		tees = append(tees, to, te)
		job.Stdout, job.Stderr = io.MultiWriter(a.stdoutF, to), io.MultiWriter(a.stderrF, te)
	}
	if len(secrets) > 0 {
		mo, me := phasefile.NewMaskWriter(job.Stdout, secrets), phasefile.NewMaskWriter(job.Stderr, secrets)
		a.writers = append(a.writers, mo, me)
		job.Stdout, job.Stderr = mo, me
	}
	a.writers = append(a.writers, tees...)
	a.job = job
	return nil
}

// watchReports returns the watcher of the phase's $CAIRN_REPORT: it adds
// what the phase reports spending to the phase's and the run's spend, and
// ends the attempt (cancel) once the phase is over its budget.
func (r *runner) watchReports(a *attemptRun, cancel context.CancelCauseFunc) *phasefile.ReportWatcher {
	e := r.e
	ph := a.ph
	addr := ph.p.Addr
	var last runrec.Spend
	return phasefile.NewReportWatcher(ph.reportPath, ph.reportOff, ph.reportLine, 100*time.Millisecond,
		func(total runrec.Spend) {
			delta := runrec.Spend{Cost: runrec.RoundCost(total.Cost - last.Cost), Iterations: total.Iterations - last.Iterations}
			last = total
			ph.spent = ph.spent.Add(delta)
			spent := ph.spent
			r.addSpend(delta)
			r.state.Phase(addr, func(ps *runrec.PhaseState) { ps.Cost, ps.Iterations = spent.Cost, spent.Iterations })
			e.rep.Report(Event{Kind: EventSpend, Phase: addr, Spend: spent, Time: e.now()})
			if msg := overBudget(ph.p.Budget, spent); msg != "" && a.overMsg == "" {
				a.overMsg = msg
				cancel(errOverBudget)
			}
		},
		func(n int, line string, err error) {
			if ph.badReports >= maxReportWarnings {
				ph.badHidden++
				return
			}
			ph.badReports++
			e.rep.Report(Event{Kind: EventWarning, Phase: addr, Time: e.now(),
				Message: fmt.Sprintf("phase %s: %s:%d: ignoring report line %q: %v", addr, e.ws.Rel(ph.reportPath), n, line, err)})
		})
}

// attemptStarted records that the command starts now, and returns when.
func (r *runner) attemptStarted(a *attemptRun) time.Time {
	e := r.e
	start := e.now()
	startT := start.UTC()
	r.state.Phase(a.ph.p.Addr, func(ps *runrec.PhaseState) {
		ps.Status = runrec.StatusRunning
		ps.Attempts = a.attempt
		ps.Started = &startT
		ps.Ended = nil
		ps.ExitCode = nil
		ps.Error = ""
		ps.Stdout = e.ws.Rel(a.stdoutPath)
		ps.Stderr = a.relErr
	})
	est := r.startEstimate(a.ph.p.Addr, a.ph.d)
	e.rep.Report(Event{Kind: EventStart, Phase: a.ph.p.Addr, Reasons: a.ph.d.Reasons, Attempt: a.attempt, Estimate: est, Time: startT})
	return start
}

// attemptEnded closes the job's writers, collects the last of its
// reports and records when it ended and, when it exited, its exit code.
func (r *runner) attemptEnded(a *attemptRun, watcher *phasefile.ReportWatcher, start time.Time, code int, runErr error) {
	e := r.e
	ph := a.ph
	addr := ph.p.Addr
	for _, w := range a.writers {
		_ = w.Close()
	}
	ph.stdoutEmpty, ph.stderrEmpty = a.stdoutF.Empty(), a.stderrF.Empty()
	_, saw := watcher.Finish()
	ph.sawCost = ph.sawCost || saw
	if ph.badHidden > 0 {
		e.rep.Report(Event{Kind: EventWarning, Phase: addr, Time: e.now(),
			Message: fmt.Sprintf("phase %s: %s: and %d more bad report %s, ignored", addr, e.ws.Rel(ph.reportPath), ph.badHidden, pluralWord(ph.badHidden, "line", "lines"))})
		ph.badHidden = 0
	}
	ph.reportOff, ph.reportLine = watcher.Position()
	end := e.now()
	ph.duration = end.Sub(start)
	endT := end.UTC()
	var ended *executor.JobEndedError
	var stage *local.StageFailedError
	exited := runErr == nil || errors.As(runErr, &ended) && ended.ExitCode >= 0 || errors.As(runErr, &stage)
	r.state.Phase(addr, func(ps *runrec.PhaseState) {
		ps.Ended = &endT
		ps.DurationMS = end.Sub(start).Milliseconds()
		if exited {
			c := code
			ps.ExitCode = &c
		}
	})
}

// interrupted is the outcome of an attempt whose context ended for cause.
func (a *attemptRun) interrupted(cause error) attemptResult {
	p := a.ph.p
	// A remote job may outlive cairn's following it.
	busy := a.remote != nil
	switch {
	case errors.Is(cause, errOverBudget):
		return attemptResult{status: runrec.StatusOverBudget, perr: &PhaseError{Phase: p.Addr, Status: runrec.StatusOverBudget, Log: a.relErr,
			Err: fmt.Errorf("stopped over budget: %s", a.overMsg)}, keepOutputs: busy}
	case errors.Is(cause, errTimedOut):
		return attemptResult{status: runrec.StatusTimedOut, perr: &PhaseError{Phase: p.Addr, Status: runrec.StatusTimedOut, Log: a.relErr,
			Err: fmt.Errorf("timed out after %s (budget timeout)", p.Budget.Timeout), Tail: tail(a.stderrPath, 20)}, keepOutputs: busy}
	default:
		return attemptResult{status: runrec.StatusStopped, keepOutputs: busy}
	}
}

// attemptOutcome is the outcome of an attempt whose command ran to its
// end (or could not start).
func (r *runner) attemptOutcome(a *attemptRun, code int, runErr error) attemptResult {
	e := r.e
	addr := a.ph.p.Addr
	var ended *executor.JobEndedError
	var stage *local.StageFailedError
	switch {
	case errors.As(runErr, &ended):
		perr := &PhaseError{Phase: addr, Status: runrec.StatusFailed, ExitCode: ended.ExitCode, Err: ended, Log: a.relErr, Tail: tail(a.stderrPath, 20)}
		if ended.TimedOut {
			perr.Status = runrec.StatusTimedOut
			perr.Err = fmt.Errorf("timed out: %w", ended)
		}
		return attemptResult{status: perr.Status, perr: perr}
	case errors.As(runErr, &stage):
		return attemptResult{status: runrec.StatusFailed, perr: &PhaseError{Phase: addr, ExitCode: code, Err: stage, Log: a.relErr, Tail: tail(a.stderrPath, 20), Note: e.fullDiskNote()}}
	case runErr != nil:
		return attemptResult{status: runrec.StatusFailed, perr: &PhaseError{Phase: addr, Err: runErr, Log: a.relErr, Note: e.fullDiskNote()}}
	case code != 0:
		return attemptResult{status: runrec.StatusFailed, perr: &PhaseError{Phase: addr, ExitCode: code, Log: a.relErr, Tail: tail(a.stderrPath, 20), Note: e.fullDiskNote()}}
	}
	if a.overMsg == "" {
		if msg := overBudget(a.ph.p.Budget, a.ph.spent); msg != "" {
			e.rep.Report(Event{Kind: EventWarning, Phase: addr, Time: e.now(),
				Message: fmt.Sprintf("phase %s finished before cairn could stop it, but reported spending over its budget: %s", addr, msg)})
		}
	}
	return attemptResult{status: runrec.StatusSucceeded}
}

// fullDiskNote explains a failed phase whose workspace filesystem is
// (nearly) full, where its log is too and may have lost the phase's own
// error message; otherwise it returns "".
func (e *Engine) fullDiskNote() string {
	free := fsx.FreeSpace(e.ws.Root)
	if free < 0 || free >= 1<<20 {
		return ""
	}
	return fmt.Sprintf("the workspace's filesystem is full (%s free on %s), which may be why: free space there, then run cairn resume",
		fsx.FormatBytes(free), e.ws.Root)
}

// overBudget says how spent exceeds b, or returns "".
func overBudget(b spec.Budget, spent runrec.Spend) string {
	if b.MaxCost != nil && spent.Cost > *b.MaxCost {
		return fmt.Sprintf("spent %s of max_cost %s", runrec.FormatCost(spent.Cost), runrec.FormatCost(*b.MaxCost))
	}
	if b.MaxIterations != nil && spent.Iterations > *b.MaxIterations {
		return fmt.Sprintf("ran %d of max_iterations %d", spent.Iterations, *b.MaxIterations)
	}
	return ""
}

// succeed collects and stores the outputs of a phase whose command
// succeeded.
func (r *runner) succeed(ph *phaseRun, began time.Time) bool {
	e := r.e
	p := ph.p
	relErr := e.ws.Rel(ph.stderr)
	failed := func(err error) bool {
		perr := &PhaseError{Phase: p.Addr, Err: err, Log: relErr}
		var ns *fsx.NoSpaceError
		if errors.As(err, &ns) {
			perr.Note = "the cache is full: make room (cairn cache gc --max-size SIZE) or use a cache on a bigger disk (--cache-dir, CAIRN_CACHE_DIR), then run cairn resume"
		}
		return r.fail(p.Addr, began, perr)
	}
	// At most -j phases write to the cache at once (storeSem): the
	// slot is taken before the first temp file, which small outputs,
	// hashed in memory, do not need before the dependents are released.
	held := false
	acquire := func() {
		if !held && r.storeSem != nil {
			r.storeSem <- struct{}{}
			held = true
		}
	}
	defer func() {
		if held {
			<-r.storeSem
		}
	}()
	// Checked before the outputs are hashed: an edit landing after this
	// did not reach the outputs (the command is over).
	caching := p.Cache
	if caching {
		if changed := e.inputsChanged(p, ph.d, ph.up); changed != nil {
			caching = false
			r.notCached(ph, changed)
		}
	}
	out, err := e.out.Collect(p, caching, acquire)
	if err != nil {
		return failed(err)
	}
	tree := out.Tree
	if caching {
		// The outputs are in place and hashed: the dependents need no
		// more to start, and need not wait for the blobs' and the
		// entry's fsyncs. Should storing the blobs fail (a full cache),
		// the phase fails and the run halts; the dependents
		// already running used outputs that are in place and correct.
		r.release(p.Addr, tree)
		acquire()
		if err := outputs.CommitAll(out.Pend); err != nil {
			return failed(err)
		}
	}
	ph.metrics = e.readMetrics(p)
	if p.Budget.MaxCost != nil && !ph.sawCost {
		e.rep.Report(Event{Kind: EventWarning, Phase: p.Addr, Time: e.now(),
			Message: fmt.Sprintf("phase %s has max_cost %s but reported no cost through $CAIRN_REPORT: its budget could not be enforced", p.Addr, runrec.FormatCost(*p.Budget.MaxCost))})
	}
	if caching {
		if err := r.store(ph, out); err != nil {
			// The outputs are fine; only caching failed. Say so and go on.
			e.rep.Report(Event{Kind: EventWarning, Phase: p.Addr, Message: fmt.Sprintf("phase %s: could not cache the result: %v", p.Addr, err), Time: e.now()})
		}
	}
	// The phase is done: its checkpoints are no longer needed.
	r.ckpts.Release(ph.ckpt)
	if ph.metrics != nil {
		r.state.Phase(p.Addr, func(ps *runrec.PhaseState) { ps.Metrics = ph.metrics })
	}
	r.finish(p.Addr, ph.d, runrec.StatusSucceeded, tree, began)
	return true
}

// notCached records that a phase's result is not cached because its
// inputs changed while it ran (see inputsChanged): a warning, the phase's
// record and the run's result say which, and neither the phase-key memory
// nor the workspace's last keys keep the key its outputs do not match.
func (r *runner) notCached(ph *phaseRun, changed []string) {
	e := r.e
	addr := ph.p.Addr
	what := strings.Join(changed, ", ") + " while the phase ran"
	ph.d.notCached = true
	e.phaseKeys.Forget(addr)
	r.mu.Lock()
	if r.res.NotCached == nil {
		r.res.NotCached = map[string]string{}
	}
	r.res.NotCached[addr] = what
	r.mu.Unlock()
	r.state.Phase(addr, func(ps *runrec.PhaseState) { ps.Warning = "not cached: " + what })
	e.rep.Report(Event{Kind: EventWarning, Phase: addr, Time: e.now(),
		Message: fmt.Sprintf("phase %s: %s; its outputs stay in the workspace but are not cached, and the next run runs it again", addr, what)})
}

// store writes the phase's logs and action entry to the cache (see
// outputs.Keeper.Store).
func (r *runner) store(ph *phaseRun, out *outputs.Collected) error {
	host, who := r.hostUser()
	entry := &cache.Entry{
		Key:        ph.d.key,
		Phase:      ph.p.Addr,
		Components: ph.d.components,
		Keyed:      ph.d.keyed, // used only if of these very components
		ExitCode:   0,
		Cost:       ph.spent.Cost,
		Iterations: ph.spent.Iterations,
		Metrics:    ph.metrics,
		DurationMS: ph.duration.Milliseconds(),
		Created:    r.e.now().UTC(),
		Host:       host,
		User:       who,
	}
	logs := outputs.Logs{Stdout: ph.stdout, Stderr: ph.stderr, StdoutEmpty: ph.stdoutEmpty, StderrEmpty: ph.stderrEmpty}
	// A forced run's result becomes the key's: a later plain run must not
	// restore the result it was forced to replace.
	return r.e.out.Store(entry, out, logs, ph.d.forced)
}

// hostUser returns this machine's name and the user's, for cache
// entries; looked up once per run.
func (r *runner) hostUser() (string, string) {
	r.whoOnce.Do(func() {
		r.host, _ = os.Hostname()
		if u, err := user.Current(); err == nil {
			r.user = u.Username
		}
	})
	return r.host, r.user
}

// paramsFile writes the phase's params as JSON for $CAIRN_PARAMS and
// returns its path. Phases without params share one "{}" file.
func (r *runner) paramsFile(p *spec.Phase) (string, error) {
	name := workspace.SafeName(p.Addr) + ".json"
	if len(p.Params) == 0 {
		r.noParamsOnce.Do(func() {
			r.noParamsErr = os.WriteFile(filepath.Join(r.runDir, "params", "none.json"), paramsJSON(nil), 0o644)
		})
		if r.noParamsErr != nil {
			return "", fmt.Errorf("write params: %w", r.noParamsErr)
		}
		name = "none.json"
	} else {
		// A file holding a sensitive variable's value is private to the
		// user, and attempt removes it when the command ends.
		js := paramsJSON(p.Params)
		mode := os.FileMode(0o644)
		if r.e.holdsSensitive(string(js)) {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(r.runDir, "params", name), js, mode); err != nil {
			return "", fmt.Errorf("write params: %w", err)
		}
	}
	return filepath.Join(r.runDir, "params", name), nil
}

// environment builds a phase's clean environment for a run (see
// phaseEnv).
func (r *runner) environment(ph *phaseRun, attempt int, marker string) ([]string, []string, error) {
	paramsPath, err := r.paramsFile(ph.p)
	if err != nil {
		return nil, nil, err
	}
	env, secrets := phaseEnv(ph.p, r.binDir, cairnVars{
		RunID: r.runID, Job: marker, Attempt: attempt, Workspace: r.e.ws.Root, Params: paramsPath,
		Report: ph.reportPath, Checkpoint: ph.ckpt, Cache: r.e.cache.Root(),
	})
	return env, secrets, nil
}

// cairnVars are the paths and names a phase's CAIRN_* variables carry.
type cairnVars struct {
	RunID, Job                                   string
	Attempt                                      int
	Workspace, Params, Report, Checkpoint, Cache string
}

// phaseEnv builds a phase's clean environment: a minimal passthrough (with
// binDir, where cairn itself is, first on PATH), declared env, pass_env
// and secret_env from the caller, and CAIRN_* variables. It returns the
// secret values for masking.
func phaseEnv(p *spec.Phase, binDir string, v cairnVars) ([]string, []string) {
	var env []string
	path := os.Getenv("PATH")
	if binDir != "" {
		path = binDir + string(os.PathListSeparator) + path
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
	env = append(env,
		"CAIRN_PHASE="+p.Addr,
		"CAIRN_RUN_ID="+v.RunID,
		"CAIRN_JOB="+v.Job,
		"CAIRN_ATTEMPT="+strconv.Itoa(v.Attempt),
		"CAIRN_WORKSPACE="+v.Workspace,
		"CAIRN_PARAMS="+v.Params,
		"CAIRN_REPORT="+v.Report,
		"CAIRN_CHECKPOINT_DIR="+v.Checkpoint,
		"CAIRN_CACHE_DIR="+v.Cache,
	)
	if len(p.SecretEnv) > 0 {
		// Names only, so that cairn memo can refuse to hash a secret.
		env = append(env, "CAIRN_SECRET_NAMES="+strings.Join(p.SecretEnv, ","))
	}
	if b := p.Budget.MaxCost; b != nil {
		env = append(env, "CAIRN_MAX_COST="+runrec.FormatCost(*b))
	}
	if b := p.Budget.MaxIterations; b != nil {
		env = append(env, "CAIRN_MAX_ITERATIONS="+strconv.FormatInt(*b, 10))
	}
	for k, v := range p.Params {
		env = append(env, "CAIRN_PARAM_"+envName(k)+"="+paramText(v))
	}
	// The units of each pool the phase holds while it runs (bwa mem -t
	// $CAIRN_RESOURCE_CPU): the environment never enters a key.
	for k, n := range p.Resources {
		env = append(env, "CAIRN_RESOURCE_"+envName(k)+"="+strconv.Itoa(n))
	}
	return env, secrets
}

// warnOnce reports a warning about how a job ran, once per run.
func (r *runner) warnOnce(msg string) {
	if _, dup := r.warned.LoadOrStore(msg, true); !dup {
		r.e.rep.Report(Event{Kind: EventWarning, Message: msg, Time: r.e.now()})
	}
}

// removePartialOutputs removes the declared outputs that a phase whose
// command failed, timed out, went over budget or was stopped left behind
// (a half-written file is worse than none: a tool run by hand would take
// it), and returns those it removed; its logs and checkpoint directory
// stay. An output it cannot remove is a warning.
func (r *runner) removePartialOutputs(p *spec.Phase) []string {
	removed, err := r.e.out.Remove(p)
	if err != nil {
		r.e.rep.Report(Event{Kind: EventWarning, Phase: p.Addr, Time: r.e.now(),
			Message: fmt.Sprintf("phase %s: %v; remove it by hand before using it", p.Addr, err)})
	}
	return removed
}
