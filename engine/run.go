package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/phasefile"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace"
)

// RunOptions select and shape a run.
type RunOptions struct {
	// Request holds the targets, gates and settings; it is recorded in
	// state.json as given.
	runrec.Request
	// Stop, when it is closed, begins a graceful stop: no new phase
	// starts, running phases finish and are cached. Cancelling the
	// context passed to Run ends running phases at once.
	Stop <-chan struct{}
	// ResumeOf names the run this one resumes: its spending carries over
	// into this run's ledger.
	ResumeOf string
	// RetryBackoff is the wait before a phase's first retry, doubled for
	// each further one (default 1s, at most a minute).
	RetryBackoff time.Duration
	// PhaseOutput, when set, is called as each attempt of a phase's
	// command starts: what the command writes to its stdout and stderr is
	// copied to the two writers it returns as well as to the log files,
	// after secrets are masked. Both are closed once the command ended.
	// It is called from the goroutines running phases; a write to the
	// writers should not fail (a failed write ends the copy to the logs).
	PhaseOutput func(phase string) (stdout, stderr io.WriteCloser)
}

// RunResult summarises a finished run.
type RunResult struct {
	RunID  string
	Status string // RunSucceeded, RunFailed, RunStopped
	Counts map[string]int
	// Failures holds the error of every phase that did not succeed
	// (failed, timed out, over budget), by address.
	Failures map[string]error
	Duration time.Duration
	// Spent is the run's ledger total, what resumed runs spent included.
	Spent runrec.Spend
	// StopReason says why the run stopped early ("interrupt", "stop
	// request", "budget"), or is empty.
	StopReason string
	// BudgetSkipped counts phases not started because the run budget was
	// spent.
	BudgetSkipped int
	// NotCached holds, by address, the phases that succeeded but whose
	// result was not cached because inputs changed while they ran, and
	// which ("input in.txt changed while the phase ran").
	NotCached map[string]string
	// TempRemoved counts the temporary outputs removed from the
	// workspace, every phase of the run reading them having succeeded.
	TempRemoved int
	// HashedFiles and HashedBytes count the files the run read to hash
	// them (inputs, and outputs checked, that the digest memory could not
	// answer by their stat), and their bytes: on a run after one edited
	// file, that file alone.
	HashedFiles, HashedBytes int64
}

// PhaseError is the error of a failed phase: what failed and where its
// log is.
type PhaseError struct {
	Phase    string
	Status   string // StatusFailed, StatusTimedOut or StatusOverBudget
	ExitCode int
	Log      string   // stderr log, relative to the workspace
	Tail     string   // last lines of stderr
	Err      error    // set when the phase failed for another reason than its exit code
	Note     string   // what may have caused it and what to do (a full disk), or ""
	Removed  []string // the declared outputs the command left, removed since
}

func (e *PhaseError) Error() string {
	var msg string
	switch {
	case e.Err != nil:
		msg = fmt.Sprintf("phase %s failed: %v", e.Phase, e.Err)
	default:
		msg = fmt.Sprintf("phase %s failed: exit status %d", e.Phase, e.ExitCode)
	}
	if e.Log != "" {
		msg += fmt.Sprintf(" (log: %s)", e.Log)
	}
	if e.Note != "" {
		msg += "; " + e.Note
	}
	if len(e.Removed) > 0 {
		msg += "; " + removedNote(e.Removed)
	}
	return msg
}

// removedNote says which partial outputs were removed.
func removedNote(paths []string) string {
	s := "s"
	if len(paths) == 1 {
		s = ""
	}
	return fmt.Sprintf("removed %d partial output%s: %s", len(paths), s, strings.Join(paths, ", "))
}

func (e *PhaseError) Unwrap() error { return e.Err }

// Stop reasons.
const (
	StopInterrupt = "interrupt"
	StopRequest   = "stop request"
	StopBudget    = "budget"
)

// Run runs the selected phases and what they need. It holds the workspace
// lock for its whole duration. The returned error is for problems that
// stop the run itself (lock held, unknown phase, state not writable);
// failed phases are reported in the result.
func (e *Engine) Run(ctx context.Context, opts RunOptions) (*RunResult, error) {
	sel, err := e.resolve(opts.Targets, opts.Gates)
	if err != nil {
		return nil, err
	}
	start := e.now()
	runID := runrec.NewID(start)
	lock, err := e.ws.TryLock(runID)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	e.ws.RemoveStaleTemps(e.producer)
	prevJobs := e.ws.StaleJobs()
	e.ws.RecoverStaleRun()
	if s := e.startSession(runID); s != nil {
		defer func() { s.Close(); e.session = nil }()
	}
	var spentBefore runrec.Spend
	if opts.ResumeOf != "" {
		if spentBefore, prevJobs, err = e.resumeFrom(opts.ResumeOf, sel); err != nil {
			return nil, err
		}
	}
	// cairn stop --cancel ends running phases as a second Ctrl-C does.
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	r := e.newRunner(opts, runID, sel, prevJobs, cancelRun)
	// Its logs/, params/ and reports/ are made when the first phase
	// executes (runDirs), and the file naming the run in progress with
	// its first record (see markCurrent): a run that finds everything
	// cached makes none.
	defer func() {
		if r.wroteCurrent.Load() {
			os.Remove(e.ws.CurrentFile())
		}
	}()
	r.begin(start, spentBefore)

	// cairn's own long steps (hashing inputs, restoring outputs,
	// downloading from the remote) stop at the first interrupt or stop
	// request: unlike a phase's command, there is nothing of them worth
	// finishing, and a huge input would otherwise hold the run up.
	work, cancelWork := context.WithCancel(ctx)
	defer cancelWork()
	r.cancelWork = cancelWork
	e.work = work
	e.cache.SetRemoteContext(work)
	defer func() {
		e.work = nil
		e.cache.ClearRemoteContext()
	}()

	// Stop requests: the caller's channel and a "stop" file that cairn
	// stop writes into the run's folder. They are watched from here on,
	// so an interrupt while outputs outside --only are restored counts.
	watchDone := make(chan struct{})
	defer close(watchDone)
	go r.watchStop(watchDone)

	if err := r.satisfyOutside(); err != nil {
		return nil, err
	}
	jobs := e.jobs(opts.Jobs)
	r.storeSem = make(chan struct{}, jobs)
	r.prepareTemporary()
	r.schedule(ctx, jobs)
	if f, ok := e.exec.(interface{ Flush() }); ok {
		f.Flush()
	}
	r.ckpts.Cleanup()
	return r.end(ctx, start)
}

// startSession tells cairn cache gc what this run uses, and cairn cache
// stats how often it hit; it is advisory, so a failure only warns (and
// returns nil).
func (e *Engine) startSession(runID string) *upkeep.Session {
	// The session tells cairn cache gc what this run uses, and cairn cache
	// stats how often it hit; it is advisory, so a failure only warns.
	s, err := upkeep.StartSession(e.cache.Dir, "run "+runID+" "+e.ws.Root)
	if err != nil {
		e.rep.Report(Event{Kind: EventWarning, Message: fmt.Sprintf("cache usage not recorded (gc may evict what this run uses): %v", err), Time: e.now()})
		return nil
	}
	e.session = s
	return s
}

// resumeFrom reads the run a resumed run continues: what it spent, which
// of its phases' remote jobs may still be queued or running, and which of
// its forced phases finished (they are not forced again).
func (e *Engine) resumeFrom(runID string, sel *selection) (runrec.Spend, map[string]*runrec.PhaseState, error) {
	prev, err := runrec.ReadState(e.ws.Records().StatePath(runID))
	if err != nil {
		return runrec.Spend{}, nil, fmt.Errorf("resume %s: %w", runID, err)
	}
	sel.unforceFinished(prev.Phases)
	return e.ws.Records().RecordedSpend(prev), workspace.InterruptedJobs(prev.Phases), nil
}

func (e *Engine) newRunner(opts RunOptions, runID string, sel *selection, prevJobs map[string]*runrec.PhaseState, cancelRun context.CancelFunc) *runner {
	f0, b0 := e.mem.Hashed()
	r := &runner{
		e:       e,
		hashed0: [2]int64{f0, b0},
		opts:    opts,
		runID:   runID,
		sel:     sel,
		trees:   map[string][]cache.OutputFile{},
		results: make(chan phaseResult),
		stopCh:  make(chan struct{}),
		res:     &RunResult{RunID: runID, Counts: map[string]int{}, Failures: map[string]error{}},

		prevJobs:  prevJobs,
		cancelRun: cancelRun,
		ckpts:     &workspace.Checkpoints{Dir: filepath.Join(e.ws.StateDir(), "checkpoints")},
		backoff:   time.Second,
	}
	if opts.RetryBackoff > 0 {
		r.backoff = opts.RetryBackoff
	}
	// The run's directory is made with its first record (see workspace.StateWriter)
	// or its first executing phase (runDirs), so a cairn killed before
	// either leaves no empty directory behind.
	r.runDir = filepath.Join(e.ws.RunsDir(), runID)
	r.binDir = e.linkSelf()
	return r
}

// begin makes the run's record, every selected phase pending, and reports
// the run's beginning.
func (r *runner) begin(start time.Time, spentBefore runrec.Spend) {
	e := r.e
	host, _ := os.Hostname()
	req := r.opts.Request
	req.Targets = append([]string{}, req.Targets...)
	st := &runrec.RunState{
		SchemaVersion: runrec.StateSchemaVersion,
		RunID:         r.runID,
		Spec:          filepath.Base(e.spec.File),
		SpecHash:      e.spec.Hash,
		Request:       req,
		ResumeOf:      r.opts.ResumeOf,
		MaxCost:       e.spec.Experiment.Budget.MaxCost,
		SpentBefore:   spentBefore,
		Host:          host,
		PID:           os.Getpid(),
		Started:       start.UTC(),
		Heartbeat:     start.UTC(),
		Status:        runrec.RunRunning,
		Phases:        map[string]*runrec.PhaseState{},
	}
	var selected []string
	for _, p := range e.spec.Phases {
		if r.sel.has(p.Addr) {
			st.Phases[p.Addr] = &runrec.PhaseState{Status: runrec.StatusPending, Params: e.stateParams(p)}
			selected = append(selected, p.Addr)
		}
	}
	r.state = workspace.NewStateWriter(e.ws.Records().StatePath(r.runID), e.ws.StateDir(), st, 250*time.Millisecond, r.markCurrent)
	r.ledger = spentBefore
	e.rep.Report(Event{Kind: EventBegin, Message: r.runID, Phases: selected, Time: start})
}

// satisfyOutside satisfies the phases outside an --only selection from
// the workspace or the cache before anything starts. An error fails the
// run, every phase skipped; an interrupt meanwhile lets it end stopped.
func (r *runner) satisfyOutside() error {
	if len(r.sel.outside) == 0 {
		return nil
	}
	err := r.state.Ready() // outputs may be restored
	var trees map[string][]cache.OutputFile
	if err == nil {
		trees, err = r.e.satisfyOutside(r.sel, true)
	}
	if err != nil && r.interrupted(err) {
		// Nothing starts; the run ends stopped.
		return nil
	} else if err != nil {
		r.state.Update(func(st *runrec.RunState) {
			st.Status = runrec.RunFailed
			for _, ps := range st.Phases {
				ps.Status = runrec.StatusSkipped
				ps.Error = "not started: --only needs outputs that are missing"
			}
		})
		_ = r.state.Close()
		return err
	}
	for a, t := range trees {
		r.trees[a] = t
	}
	return nil
}

// jobs is how many phases may hold a job slot at once: -j, else the
// spec's concurrency, else the number of CPUs.
func (e *Engine) jobs(requested int) int {
	if requested > 0 {
		return requested
	}
	if c := e.spec.Experiment.Concurrency; c > 0 {
		return c
	}
	return runtime.NumCPU()
}

// end records how the run ended, saves the workspace memories and
// returns the run's result.
func (r *runner) end(ctx context.Context, start time.Time) (*RunResult, error) {
	e := r.e
	end := e.now()
	reason := r.stopReason()
	status := r.recordEnd(ctx, end, reason)
	var errs []error
	if err := r.state.Close(); err != nil {
		errs = append(errs, fmt.Errorf("save the run record: %w; cairn status shows what was saved before, and cairn resume continues the run once this is fixed", err))
	}
	if err := e.mem.Save(); err != nil {
		errs = append(errs, err)
	}
	if err := e.lastKeys.Save(); err != nil {
		errs = append(errs, err)
	}
	e.saveEntryMemo()
	e.savePhaseKeys()
	r.res.Status = status
	r.res.StopReason = reason
	if r.temps != nil {
		r.res.TempRemoved = r.temps.removed
	}
	r.res.Duration = end.Sub(start)
	r.res.HashedFiles, r.res.HashedBytes = e.mem.Hashed()
	r.res.HashedFiles -= r.hashed0[0]
	r.res.HashedBytes -= r.hashed0[1]
	return r.res, errors.Join(errs...)
}

// recordEnd skips the phases never started, says why, and records and
// returns the run's status.
func (r *runner) recordEnd(ctx context.Context, end time.Time, reason string) string {
	var status string
	r.state.Update(func(st *runrec.RunState) {
		t := end.UTC()
		st.Ended = &t
		st.Heartbeat = t
		unfinished := r.skipUnstarted(st, reason)
		switch {
		case (reason == StopInterrupt || reason == StopRequest || ctx.Err() != nil) && unfinished:
			status = runrec.RunStopped
		case len(r.res.Failures) > 0 || r.res.BudgetSkipped > 0 || unfinished:
			status = runrec.RunFailed
		default:
			status = runrec.RunSucceeded
		}
		st.Status = status
		if status == runrec.RunSucceeded {
			st.StopReason = ""
		}
		for _, ps := range st.Phases {
			r.res.Counts[ps.Status]++
		}
		r.res.Spent = st.Total()
	})
	return status
}

// skipUnstarted marks the phases still pending skipped, saying why they
// did not start, and reports whether any phase did not finish.
func (r *runner) skipUnstarted(st *runrec.RunState, reason string) (unfinished bool) {
	for _, ps := range st.Phases {
		switch ps.Status {
		case runrec.StatusPending:
			unfinished = true
			ps.Status = runrec.StatusSkipped
			switch reason {
			case StopBudget:
				ps.Error = fmt.Sprintf("not started: the run budget (max_cost %s) was spent", runrec.FormatCost(*st.MaxCost))
				r.res.BudgetSkipped++
			case "":
				ps.Error = "not started: the run ended after a failure"
			default:
				ps.Error = "not started: the run was stopped (" + reason + ")"
			}
		case runrec.StatusStopped:
			unfinished = true
		}
	}
	return unfinished
}

// watchStop turns the caller's Stop channel and a stop file in the run's
// folder into a graceful stop, and a cancel file (cairn stop --cancel)
// into a stop that also ends the running phases.
func (r *runner) watchStop(done <-chan struct{}) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	stopFile := filepath.Join(r.runDir, "stop")
	stopC := r.opts.Stop
	for {
		select {
		case <-done:
			return
		case <-stopC:
			r.requestStop(StopInterrupt)
			r.cancelWork()
			stopC = nil
		case <-t.C:
			if _, err := os.Stat(stopFile); err == nil {
				r.requestStop(StopRequest)
				r.cancelWork()
				if b, _ := os.ReadFile(stopFile); bytes.HasPrefix(b, []byte(workspace.StopCancelMark)) {
					r.cancelRun()
					return
				}
			}
		}
	}
}

// requestStop begins a graceful stop; the first reason sticks.
func (r *runner) requestStop(reason string) {
	r.stopOnce.Do(func() {
		r.mu.Lock()
		r.reason = reason
		r.mu.Unlock()
		close(r.stopCh)
		r.state.Update(func(st *runrec.RunState) { st.StopReason = reason })
		r.e.rep.Report(Event{Kind: EventStopping, Message: reason, Time: r.e.now()})
	})
}

// interrupted reports whether err ended one of cairn's own steps because
// the run was interrupted or asked to stop (see Run's work context).
func (r *runner) interrupted(err error) bool {
	return err != nil && r.e.work != nil && r.e.work.Err() != nil && errors.Is(err, r.e.work.Err())
}

func (r *runner) stopReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

func (r *runner) stopping() bool {
	select {
	case <-r.stopCh:
		return true
	default:
		return false
	}
}

// addSpend adds a phase's newly reported spending to the run's ledger and
// begins a graceful stop once the run budget is spent.
func (r *runner) addSpend(delta runrec.Spend) {
	if delta == (runrec.Spend{}) {
		return
	}
	r.mu.Lock()
	r.ledger = r.ledger.Add(delta)
	total := r.ledger
	r.mu.Unlock()
	r.state.Update(func(st *runrec.RunState) { st.Spent = st.Spent.Add(delta) })
	if max := r.e.spec.Experiment.Budget.MaxCost; max != nil && total.Cost >= *max {
		r.requestStop(StopBudget)
	}
}

func (r *runner) budgetSpent() bool {
	max := r.e.spec.Experiment.Budget.MaxCost
	if max == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ledger.Cost >= *max
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

// markCurrent names the run in .cairn/current, just before its first
// record is written: at the latest when the run first changes the
// workspace (restores an output, starts a command). Should this cairn
// die, the next run kills what its phases left running (workspace.RecoverStaleRun)
// and removes the temp files its restores left (workspace.RemoveStaleTemps); cairn
// status and stop find it there. A run that ends within firstRecordDelay
// having changed nothing writes neither.
func (r *runner) markCurrent() error {
	if err := workspace.WriteFileAtomic(r.e.ws.CurrentFile(), []byte(r.runID+"\n"), 0o644, false); err != nil {
		return err
	}
	r.wroteCurrent.Store(true)
	return nil
}

// runDirs makes the run directory's logs/, params/ and reports/, once,
// before the first phase executes.
func (r *runner) runDirs() error {
	r.dirsOnce.Do(func() {
		if err := os.MkdirAll(r.runDir, 0o755); err != nil {
			r.dirsErr = fmt.Errorf("create run directory: %w", err)
			return
		}
		for _, d := range []string{"logs", "params", "reports"} {
			if err := os.Mkdir(filepath.Join(r.runDir, d), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				r.dirsErr = fmt.Errorf("create run directory: %w", err)
				return
			}
		}
	})
	return r.dirsErr
}

// runner is the state of one Run.
type runner struct {
	e *Engine
	// hashed0 is what the digest memory had hashed when the run began
	// (files, bytes): a memory may serve several engines.
	hashed0 [2]int64
	opts    RunOptions
	runID   string
	runDir  string
	binDir  string

	dirsOnce     sync.Once // runDirs
	dirsErr      error
	wroteCurrent atomic.Bool // .cairn/current names this run
	sel          *selection
	state        *workspace.StateWriter
	backoff      time.Duration

	mu      sync.Mutex
	trees   map[string][]cache.OutputFile // finished (or released) phases' outputs
	storing map[string]chan struct{}      // released phases: closed once over
	// notStarted holds the phases whose command was not started because
	// the scheduler refused them their slot back (see awaitUpstreams).
	notStarted map[string]bool
	ledger     runrec.Spend
	reason     string

	stopOnce sync.Once
	stopCh   chan struct{}

	warned sync.Map // warnings given once per run, by text

	// storeSem bounds the phases storing their outputs at once to the
	// number of jobs: a phase gives its job slot back when its command
	// ends, so without it a slow cache would let stores pile up.
	storeSem chan struct{}

	// emptyLog is the run's empty log file, which the logs of phases
	// start as (see phasefile.Log); ckpts makes the checkpoint directories.
	emptyLog phasefile.EmptyLogs
	ckpts    *workspace.Checkpoints

	whoOnce      sync.Once
	host, user   string
	noParamsOnce sync.Once
	noParamsErr  error

	results chan phaseResult
	res     *RunResult

	// prevJobs holds the phases of the resumed run whose remote job may
	// still be queued or running, by address.
	prevJobs  map[string]*runrec.PhaseState
	cancelRun context.CancelFunc

	// estOnce and est: the history the estimates of the run's phases
	// come from, read when its first command starts (runEstimates).
	estOnce sync.Once
	est     *estimate.Estimator

	// temps tracks temporary outputs (see temporary.go); under mu.
	temps *tempRun
	// cancelWork ends cairn's own steps (see Run's work context).
	cancelWork context.CancelFunc
}

// process decides and then restores or runs one phase. It reports whether
// the phase's outputs are now in place. slot says whether the phase holds a
// job slot; without one, it takes one before it restores or runs.
func (r *runner) process(ctx context.Context, addr string, slot bool) bool {
	e := r.e
	p := e.spec.Phase(addr)
	up := map[string][]cache.OutputFile{}
	r.mu.Lock()
	for _, u := range e.spec.Graph.Upstream(addr) {
		up[u] = r.trees[u]
	}
	r.mu.Unlock()

	began := e.now()
	// A phase that may run on this kernel walks its inputs under a watch,
	// so that its recheck need not walk them again (see inputsChanged).
	x, _, xerr := r.executorFor(p)
	d, err := e.decideWith(p, up, r.sel.forced[addr], true, xerr == nil && executor.RunsHere(x))
	if err == nil {
		defer d.watched.Close() // the phase is done with here, whatever it did
	}
	if testHookDecided != nil {
		testHookDecided(addr)
	}
	if err != nil && r.interrupted(err) {
		// Stopped while hashing its inputs or reading the cache: it
		// stays pending, as a phase never started does.
		r.markNotStarted(addr)
		return false
	}
	if err != nil {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: err})
	}
	for _, w := range d.warnings {
		e.rep.Report(Event{Kind: EventWarning, Phase: addr, Message: w, Time: e.now()})
	}
	if len(d.tempGone) > 0 && d.Action != ActionRun {
		if reasons := r.tempNeeded(addr); reasons != nil {
			// A phase reading a temporary output that is gone runs: make
			// it again. The result is stored with every component.
			comps, cerr := e.fullComponents(p, d, up)
			if cerr != nil {
				return r.fail(addr, began, &PhaseError{Phase: addr, Err: cerr})
			}
			d.Action, d.Reasons, d.components, d.tempGone = ActionRun, reasons, comps, nil
		} else {
			for _, t := range d.tempGone {
				d.Reasons = append(d.Reasons, fmt.Sprintf("temporary output %s is gone; no phase that runs needs it", t))
			}
			r.tempGone(addr, d.tempGone)
		}
	}
	r.state.Phase(addr, func(ps *runrec.PhaseState) {
		ps.Key = d.Key
		ps.Reasons = d.Reasons
	})
	if d.Action != ActionCached && slot && (r.stopping() || ctx.Err() != nil) {
		// The run was stopped while the phase decided: like a phase
		// refused its slot, it does not start.
		r.markNotStarted(addr)
		return false
	}
	if d.Action != ActionCached && !slot && !r.takeSlot(addr) {
		return false // pending: no new command may start
	}

	if d.Action == ActionRestore {
		err := r.restore(d)
		if err == nil {
			r.finish(addr, d, runrec.StatusRestored, d.entry.Outputs, began)
			return true
		}
		if r.interrupted(err) {
			end := e.now()
			r.state.Phase(addr, func(ps *runrec.PhaseState) {
				ps.Status = runrec.StatusStopped
				ps.Error = "stopped: the run was interrupted while its outputs were restored from the cache; cairn resume restores them"
			})
			e.rep.Report(Event{Kind: EventDone, Phase: addr, Status: runrec.StatusStopped, Duration: end.Sub(began), Time: end})
			return false
		}
		// The cache could not give the outputs back (a corrupt blob was
		// moved aside): run the phase instead.
		e.rep.Report(Event{Kind: EventWarning, Phase: addr, Message: fmt.Sprintf("phase %s: restore failed, running it instead: %v", addr, err), Time: e.now()})
		d.Action = ActionRun
		d.Reasons = []string{"cached output could not be restored"}
		// Its result is stored with every component of its key.
		comps, cerr := e.fullComponents(p, d, up)
		if cerr != nil {
			return r.fail(addr, began, &PhaseError{Phase: addr, Err: cerr})
		}
		d.components = comps
	}
	if d.Action == ActionCached {
		r.finish(addr, d, runrec.StatusCached, d.entry.Outputs, began)
		return true
	}
	if msg := r.missingTemporary(addr); msg != "" {
		return r.fail(addr, began, &PhaseError{Phase: addr, Err: errors.New(msg)})
	}
	return r.execute(ctx, p, d, up)
}

func (r *runner) restore(d *Decision) error {
	if err := r.state.Ready(); err != nil {
		return fmt.Errorf("save the run record: %w", err)
	}
	for _, o := range d.restore {
		if err := r.e.out.Restore(o, d.parts[o], d.entry.Inline); err != nil {
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
	if !d.notCached {
		e.lastKeys.Set(addr, d.key)
	}
	var metrics json.RawMessage
	if status != runrec.StatusSucceeded && d.entry != nil {
		metrics = e.cachedMetrics(e.spec.Phase(addr), d.entry)
	}
	end := e.now()
	r.state.Phase(addr, func(ps *runrec.PhaseState) {
		ps.Status = status
		if metrics != nil {
			ps.Metrics = metrics
		}
		if status != runrec.StatusSucceeded {
			ps.DurationMS = end.Sub(began).Milliseconds()
		}
	})
	e.rep.Report(Event{Kind: EventDone, Phase: addr, Status: status, Reasons: d.Reasons, Duration: end.Sub(began), Time: end})
	r.tempSucceeded(addr)
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
