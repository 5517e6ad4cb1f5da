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
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
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
	e.removeStaleTemps()
	prevJobs := e.staleJobs()
	e.recoverStaleRun()
	// The session tells cairn cache gc what this run uses, and cairn cache
	// stats how often it hit; it is advisory, so a failure only warns.
	if s, err := upkeep.StartSession(e.cache.Dir, "run "+runID+" "+e.ws.Root); err == nil {
		e.session = s
		defer func() { s.Close(); e.session = nil }()
	} else {
		e.rep.Report(Event{Kind: EventWarning, Message: fmt.Sprintf("cache usage not recorded (gc may evict what this run uses): %v", err), Time: e.now()})
	}

	var spentBefore runrec.Spend
	if opts.ResumeOf != "" {
		prev, err := runrec.ReadState(e.ws.Records().StatePath(opts.ResumeOf))
		if err != nil {
			return nil, fmt.Errorf("resume %s: %w", opts.ResumeOf, err)
		}
		spentBefore = e.ws.Records().RecordedSpend(prev)
		prevJobs = interruptedJobs(prev.Phases)
		sel.unforceFinished(prev.Phases)
	}
	// cairn stop --cancel ends running phases as a second Ctrl-C does.
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()

	r := &runner{
		e:       e,
		opts:    opts,
		runID:   runID,
		sel:     sel,
		trees:   map[string][]cache.OutputFile{},
		results: make(chan phaseResult),
		stopCh:  make(chan struct{}),
		res:     &RunResult{RunID: runID, Counts: map[string]int{}, Failures: map[string]error{}},

		prevJobs:  prevJobs,
		cancelRun: cancelRun,
		ckpts:     &checkpointDirs{dir: filepath.Join(e.ws.StateDir(), "checkpoints")},
	}
	if opts.RetryBackoff > 0 {
		r.backoff = opts.RetryBackoff
	} else {
		r.backoff = time.Second
	}
	// The run's directory is made with its first record (see stateFile)
	// or its first executing phase (runDirs), so a cairn killed before
	// either leaves no empty directory behind.
	r.runDir = filepath.Join(e.ws.RunsDir(), runID)
	// Its logs/, params/ and reports/ are made when the first phase
	// executes (runDirs), and the file naming the run in progress with
	// its first record (see markCurrent): a run that finds everything
	// cached makes none.
	defer func() {
		if r.wroteCurrent.Load() {
			os.Remove(e.ws.currentFile())
		}
	}()
	r.binDir = e.linkSelf()

	host, _ := os.Hostname()
	req := opts.Request
	req.Targets = append([]string{}, req.Targets...)
	st := &runrec.RunState{
		SchemaVersion: runrec.StateSchemaVersion,
		RunID:         runID,
		Spec:          filepath.Base(e.spec.File),
		SpecHash:      e.spec.Hash,
		Request:       req,
		ResumeOf:      opts.ResumeOf,
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
		if sel.has(p.Addr) {
			st.Phases[p.Addr] = &runrec.PhaseState{Status: runrec.StatusPending, Params: e.stateParams(p)}
			selected = append(selected, p.Addr)
		}
	}
	r.state = newStateFile(e.ws.Records().StatePath(runID), e.ws.StateDir(), st, 250*time.Millisecond, r.markCurrent)
	r.ledger = spentBefore
	e.rep.Report(Event{Kind: EventBegin, Message: runID, Phases: selected, Time: start})

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
		e.cache.SetRemoteContext(nil)
	}()

	// Stop requests: the caller's channel and a "stop" file that cairn
	// stop writes into the run's folder. They are watched from here on,
	// so an interrupt while outputs outside --only are restored counts.
	watchDone := make(chan struct{})
	defer close(watchDone)
	go r.watchStop(watchDone)

	// Phases outside an --only selection are satisfied from the workspace
	// or the cache before anything starts.
	if len(sel.outside) > 0 {
		err := r.state.ready() // outputs may be restored
		var trees map[string][]cache.OutputFile
		if err == nil {
			trees, err = e.satisfyOutside(sel, true)
		}
		if err != nil && r.interrupted(err) {
			// Nothing starts; the run ends stopped below.
			err = nil
		} else if err != nil {
			r.state.update(func(st *runrec.RunState) {
				st.Status = runrec.RunFailed
				for _, ps := range st.Phases {
					ps.Status = runrec.StatusSkipped
					ps.Error = "not started: --only needs outputs that are missing"
				}
			})
			_ = r.state.Close()
			return nil, err
		}
		for a, t := range trees {
			r.trees[a] = t
		}
	}

	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = e.spec.Experiment.Concurrency
	}
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	r.storeSem = make(chan struct{}, jobs)
	r.prepareTemporary()
	r.schedule(ctx, jobs)
	if f, ok := e.exec.(interface{ Flush() }); ok {
		f.Flush()
	}
	r.ckpts.cleanup()

	end := e.now()
	reason := r.stopReason()
	var status string
	r.state.update(func(st *runrec.RunState) {
		t := end.UTC()
		st.Ended = &t
		st.Heartbeat = t
		unfinished := false
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
	var errs []error
	if err := r.state.Close(); err != nil {
		errs = append(errs, fmt.Errorf("save the run record: %w; cairn status shows what was saved before, and cairn resume continues the run once this is fixed", err))
	}
	if err := e.mem.Save(); err != nil {
		errs = append(errs, err)
	}
	if err := e.lastKeys.save(); err != nil {
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
	return r.res, errors.Join(errs...)
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
				if b, _ := os.ReadFile(stopFile); bytes.HasPrefix(b, []byte(StopCancelMark)) {
					r.cancelRun()
					return
				}
			}
		}
	}
}

// StopCancelMark starts the content of a stop file that asks for the
// running phases to be ended too (cairn stop --cancel).
const StopCancelMark = "cancel"

// requestStop begins a graceful stop; the first reason sticks.
func (r *runner) requestStop(reason string) {
	r.stopOnce.Do(func() {
		r.mu.Lock()
		r.reason = reason
		r.mu.Unlock()
		close(r.stopCh)
		r.state.update(func(st *runrec.RunState) { st.StopReason = reason })
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
	r.state.update(func(st *runrec.RunState) { st.Spent = st.Spent.Add(delta) })
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
// die, the next run kills what its phases left running (recoverStaleRun)
// and removes the temp files its restores left (removeStaleTemps); cairn
// status and stop find it there. A run that ends within firstRecordDelay
// having changed nothing writes neither.
func (r *runner) markCurrent() error {
	if err := writeFileAtomic(r.e.ws.currentFile(), []byte(r.runID+"\n"), 0o644, false); err != nil {
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
	e      *Engine
	opts   RunOptions
	runID  string
	runDir string
	binDir string

	dirsOnce     sync.Once // runDirs
	dirsErr      error
	wroteCurrent atomic.Bool // .cairn/current names this run
	sel          *selection
	state        *stateFile
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
	// start as (see phaseLog); ckpts makes the checkpoint directories.
	emptyLog emptyLogs
	ckpts    *checkpointDirs

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

	// temps tracks temporary outputs (see temporary.go); under mu.
	temps *tempRun
	// cancelWork ends cairn's own steps (see Run's work context).
	cancelWork context.CancelFunc
}

// phaseResult is what a phase's goroutine tells the scheduler: that its
// command has ended and its job slot is free (slotOnly), that its outputs
// are in place and hashed, so its dependents may start while it stores
// them (released), or that the phase is over (ok: its outputs are in
// place and recorded).
type phaseResult struct {
	addr     string
	ok       bool
	slotOnly bool
	released bool
	// yield: the phase gives its job slot (and pool units) back while it
	// waits for its upstream phases to be over; regrant: it asks for them
	// again and waits for the answer: true, or false when no new command
	// may start (the run is stopping or halted, or its budget is spent).
	yield   bool
	regrant chan bool
	// notStarted: the phase's goroutine ended without starting its
	// command because its regrant was refused; it stays pending.
	notStarted bool
}

// schedule drives the dag.Plan: it starts ready phases up to jobs at once
// and, after a failure (without KeepGoing), a stop request or a spent run
// budget, starts no new phase but waits for the running ones.
//
// A job slot bounds the commands (and restores) that run at once, not the
// deciding: while every slot is taken, up to decideAhead more ready phases
// start without one, to decide (stat inputs, compute keys, find cached
// results). One found cached is done without ever holding a slot; one that
// must run or restore asks for a slot (see takeSlot) before it touches
// the workspace. So a no-op keeps every core busy deciding, and cached
// phases are done while a long command holds the only slot of -j 1.
// Slots still go in the order phases became ready: a phase deciding ahead
// gets one only when more are free than phases started before it may
// still claim, and a new phase takes one only when more are free than
// phases deciding ahead may claim; so -j 1 runs commands in the order
// they would run if no phase decided ahead, and a spent budget stops the
// same phases, while with -j N a phase slow to decide keeps one free
// slot, not all of them. A phase whose pools are full is passed over.
func (r *runner) schedule(ctx context.Context, jobs int) {
	plan := dag.NewPlan(r.e.spec.Graph, r.sel.include)
	pools := newPoolState(r.e.spec.Pools)
	var queue []string
	running := 0                     // phases holding a job slot
	inflight := 0                    // phase goroutines not yet over
	freed := map[string]bool{}       // phases that gave their slot back early
	released := map[string]bool{}    // phases whose dependents could start before they were over
	var regrants []phaseResult       // phases waiting for their slot back, first come first served
	deciding := map[string]bool{}    // phases started without a slot, not granted one
	var ahead []string               // of them, those that may still ask for one, in start order
	asking := map[string]chan bool{} // of those, the ones asking, and where to answer
	window := decideAhead()
	// With -j 1, phases were done one at a time, in the order they
	// started; commands still start in that order only if phases done
	// ahead (found cached without a slot) are done in it too: such a
	// phase is held until every phase started before it is done (or
	// released), else its dependents would become ready, and run,
	// before theirs. A failure is not held: it makes nothing ready, and
	// halts the run before another command starts.
	var order []string               // with -j 1: phases started, not yet done or released, in start order
	held := map[string]phaseResult{} // with -j 1: phases done ahead of one started before them
	halted := false
	stopC := (<-chan struct{})(r.stopCh)
	pool := newWorkers(r.results, 2*min(jobs+window, maxIdleWorkers/2))
	// aheadMayClaim counts the phases deciding ahead, not asking yet,
	// that would get a free slot (their pools have room) if they asked:
	// that many free slots are theirs; the ones asking that fit were
	// granted already.
	aheadMayClaim := func() int {
		n := 0
		for _, a := range ahead {
			if _, ok := asking[a]; !ok && pools.fits(r.e.spec.Phase(a).Resources) {
				n++
			}
		}
		return n
	}
	dropAhead := func(addr string) {
		delete(asking, addr)
		if i := slices.Index(ahead, addr); i >= 0 {
			ahead = slices.Delete(ahead, i, i+1)
		}
	}
	// apply acts on a phase's end: its dependents become ready, or are
	// blocked by its failure, which halts the run without KeepGoing.
	apply := func(pr phaseResult) {
		if pr.notStarted {
			return // pending: skipped when the run ends, as if never started
		}
		if released[pr.addr] {
			// Its dependents were started: only a failure to store its
			// outputs (a full cache) remains to act on.
			delete(released, pr.addr)
			if !pr.ok && !r.opts.KeepGoing {
				halted = true
			}
			return
		}
		skipped := plan.Done(pr.addr, pr.ok)
		if !pr.ok && (r.stopping() || ctx.Err() != nil) {
			// A phase ended by a stop: its dependents were not
			// blocked by a failure, they are simply not started.
			skipped = nil
		}
		for _, s := range skipped {
			r.state.phase(s, func(ps *runrec.PhaseState) {
				ps.Status = runrec.StatusBlocked
				ps.Error = fmt.Sprintf("upstream phase %s did not succeed", pr.addr)
			})
			r.e.rep.Report(Event{Kind: EventDone, Phase: s, Status: runrec.StatusBlocked, Reasons: []string{"upstream " + pr.addr + " did not succeed"}, Time: r.e.now()})
		}
		if !pr.ok && !r.opts.KeepGoing {
			halted = true
		}
	}
	// leave takes a phase done or released out of order, and applies the
	// phases held behind it.
	leave := func(addr string) {
		if i := slices.Index(order, addr); i >= 0 {
			order = slices.Delete(order, i, i+1)
		}
		for len(order) > 0 {
			pr, ok := held[order[0]]
			if !ok {
				return
			}
			delete(held, order[0])
			order = order[1:]
			apply(pr)
		}
	}
	for {
		open := func() bool { return !halted && !r.stopping() && ctx.Err() == nil }
		// A phase that waited for its upstream phases gets its slot back
		// before any new phase starts; when no new command may start, it
		// is told so and does not start its own.
		for i := 0; i < len(regrants); {
			g := regrants[i]
			res := r.e.spec.Phase(g.addr).Resources
			switch {
			case !open() || r.budgetSpent():
				g.regrant <- false
			case running < jobs && pools.fits(res):
				running++
				pools.take(res)
				delete(freed, g.addr)
				g.regrant <- true
			default:
				i++
				continue
			}
			regrants = append(regrants[:i], regrants[i+1:]...)
		}
		// Then the phases that decided ahead and must run, in the order
		// they started; one still deciding that would get a slot (it
		// fits) keeps one of the free slots from those after it.
		claims := 0
		for i := 0; i < len(ahead); {
			addr := ahead[i]
			res := r.e.spec.Phase(addr).Resources
			ch, ok := asking[addr]
			switch {
			case !ok:
				if pools.fits(res) {
					claims++
				}
				i++
				continue
			case !open() || r.budgetSpent():
				ch <- false
			case running+claims < jobs && pools.fits(res):
				running++
				pools.take(res)
				delete(deciding, addr)
				ch <- true
			default:
				i++
				continue
			}
			dropAhead(addr)
		}
		if open() {
			queue = append(queue, plan.Ready()...)
		}
		// Start ready phases in order, with a slot while one is free and
		// the phase's pools have room (a pool's units in use never exceed
		// its size), else to decide ahead while fewer than ahead do.
		for i := 0; open() && i < len(queue); {
			addr := queue[i]
			p := r.e.spec.Phase(addr)
			claims := aheadMayClaim()
			slot := running+claims < jobs && pools.fits(p.Resources)
			if !slot && len(deciding) >= window {
				if running+claims < jobs {
					i++ // a later phase's pools may have room
					continue
				}
				break
			}
			if r.budgetSpent() {
				r.requestStop(StopBudget)
				break
			}
			queue = append(queue[:i], queue[i+1:]...)
			if jobs == 1 {
				order = append(order, addr)
			}
			if slot {
				pools.take(p.Resources)
				running++
			} else {
				deciding[addr] = true
				ahead = append(ahead, addr)
			}
			inflight++
			pool.run(func() phaseResult {
				ok := r.process(ctx, addr, slot)
				r.over(addr)
				r.mu.Lock()
				notStarted := r.notStarted[addr]
				r.mu.Unlock()
				return phaseResult{addr: addr, ok: ok, notStarted: notStarted}
			})
		}
		if inflight == 0 {
			pool.close()
			return
		}
		select {
		case <-stopC:
			stopC = nil
			continue
		case pr := <-r.results:
			if testHookResult != nil {
				testHookResult(pr)
			}
			if pr.yield {
				running--
				pools.release(r.e.spec.Phase(pr.addr).Resources)
				freed[pr.addr] = true
				continue
			}
			if pr.regrant != nil {
				if deciding[pr.addr] {
					asking[pr.addr] = pr.regrant
				} else {
					regrants = append(regrants, pr)
				}
				continue
			}
			if pr.released {
				released[pr.addr] = true
				plan.Done(pr.addr, true)
				leave(pr.addr)
				continue
			}
			wasAhead := deciding[pr.addr]
			switch {
			case wasAhead:
				delete(deciding, pr.addr) // done without a slot
				dropAhead(pr.addr)
			case !freed[pr.addr]:
				running--
				pools.release(r.e.spec.Phase(pr.addr).Resources)
			}
			if pr.slotOnly {
				freed[pr.addr] = true
				continue
			}
			delete(freed, pr.addr)
			inflight--
			if wasAhead && pr.ok && len(order) > 0 && order[0] != pr.addr {
				held[pr.addr] = pr
				continue
			}
			apply(pr)
			leave(pr.addr)
		}
	}
}

// workers runs the phases' goroutines on reused goroutines. A goroutine
// that has decided, restored or run a phase has grown its stack; a fresh
// goroutine for the next phase would start small and grow (copy) its
// stack again, a cost every phase of a no-op run would pay.
type workers struct {
	results chan<- phaseResult
	idle    chan chan func() phaseResult
}

// maxIdleWorkers bounds the idle workers kept: jobs may be any number
// (a huge -j means "no limit"), and the idle queue is allocated whole.
const maxIdleWorkers = 1024

func newWorkers(results chan<- phaseResult, keep int) *workers {
	return &workers{results: results, idle: make(chan chan func() phaseResult, keep)}
}

// run runs f on an idle worker, or a new one, and sends its result to
// the scheduler.
func (w *workers) run(f func() phaseResult) {
	select {
	case ch := <-w.idle:
		ch <- f
	default:
		go w.loop(f)
	}
}

// loop runs f and the functions handed to it after, until it is told to
// stop (a closed channel) or there are enough idle workers. It offers
// itself as idle before sending f's result, so once the scheduler has the
// last result, every worker is either idle (and close ends it) or gone.
func (w *workers) loop(f func() phaseResult) {
	ch := make(chan func() phaseResult, 1)
	for {
		res := f()
		idle := false
		select {
		case w.idle <- ch:
			idle = true
		default:
		}
		w.results <- res
		if !idle {
			return
		}
		var ok bool
		if f, ok = <-ch; !ok {
			return
		}
	}
}

// close ends the idle workers; call it once no phase is in flight.
func (w *workers) close() {
	for {
		select {
		case ch := <-w.idle:
			close(ch)
		default:
			return
		}
	}
}

// decideAhead is how many phases may decide beyond those holding a job
// slot: enough to keep every core busy while the slots' phases wait.
func decideAhead() int { return 2 * cores.N }

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
	d, err := e.decide(p, up, r.sel.forced[addr])
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
	r.state.phase(addr, func(ps *runrec.PhaseState) {
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
			r.state.phase(addr, func(ps *runrec.PhaseState) {
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
	if err := r.state.ready(); err != nil {
		return fmt.Errorf("save the run record: %w", err)
	}
	for _, o := range d.restore {
		if err := r.e.restoreOutput(o, treeOf(d.entry.Outputs, o), d.entry.Inline); err != nil {
			return err
		}
	}
	return nil
}

// freeSlot gives the phase's job slot (and pool units) back while it
// stores its outputs, so the next command starts without waiting for the
// cache's fsyncs. Its dependents still wait for the phase to be over.
func (r *runner) freeSlot(addr string) {
	r.results <- phaseResult{addr: addr, slotOnly: true}
}

// release lets the dependents of a phase whose command succeeded start
// while it stores its result: they need its outputs, which are in place,
// and their digests, which tree holds, not the blobs and the action entry
// in the cache, whose fsyncs would otherwise lie on the run's critical
// path. The phase is still reported done only once its result is durable
// (RELIABILITY.md I4).
//
// A dependent's command still starts only once the phase is over (see
// awaitUpstreams): its decision and the preparations before its command
// overlap the phase's fsyncs, and a cairn killed meanwhile has recorded
// every phase whose dependents' commands ran.
func (r *runner) release(addr string, tree []cache.OutputFile) {
	r.mu.Lock()
	r.trees[addr] = tree
	if r.storing == nil {
		r.storing = map[string]chan struct{}{}
	}
	r.storing[addr] = make(chan struct{})
	r.mu.Unlock()
	r.results <- phaseResult{addr: addr, released: true}
}

// over marks a phase's goroutine as done with it: a released phase's
// result is durable, or the phase failed.
func (r *runner) over(addr string) {
	r.mu.Lock()
	ch := r.storing[addr]
	r.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// awaitUpstreams waits until the released upstream phases of addr are
// over, and returns the first of them that failed (storing its outputs
// in the cache), or "".
//
// The phase holds a job slot; if it must wait, it gives the slot (and its
// pool units) back meanwhile, so another phase's command may run, and
// asks for them again after. The bool (granted) is false when the scheduler refuses
// (the run is stopping or halted, or its budget is spent): the phase must
// not start its command.
func (r *runner) awaitUpstreams(addr string) (string, bool) {
	ups := r.e.spec.Graph.Upstream(addr)
	var pending []chan struct{}
	r.mu.Lock()
	for _, u := range ups {
		if ch := r.storing[u]; ch != nil && !isClosed(ch) {
			pending = append(pending, ch)
		}
	}
	r.mu.Unlock()
	if len(pending) > 0 {
		r.results <- phaseResult{addr: addr, yield: true}
		if testHookYielded != nil {
			testHookYielded(r, addr)
		}
		for _, ch := range pending {
			<-ch
		}
		if !r.takeSlot(addr) {
			return "", false
		}
	}
	for _, u := range ups {
		r.mu.Lock()
		ch := r.storing[u]
		r.mu.Unlock()
		if ch == nil {
			continue
		}
		<-ch
		r.mu.Lock()
		_, failed := r.res.Failures[u]
		r.mu.Unlock()
		if failed {
			return u, true
		}
	}
	return "", true
}

// takeSlot asks the scheduler for a job slot (and the phase's pool units)
// and waits for the answer. A refusal (the run is stopping or halted, or
// its budget is spent) marks the phase not started: it must not restore
// or run, and it stays pending, recorded as a phase never started is,
// without the key and reasons of its decision (cairn logs takes a phase
// with a key for one that ran or was found cached).
func (r *runner) takeSlot(addr string) bool {
	grant := make(chan bool, 1)
	r.results <- phaseResult{addr: addr, regrant: grant}
	if <-grant {
		return true
	}
	r.markNotStarted(addr)
	return false
}

// markNotStarted leaves a phase pending, recorded as a phase never started
// is, without the key and reasons of its decision.
func (r *runner) markNotStarted(addr string) {
	r.state.phase(addr, func(ps *runrec.PhaseState) {
		ps.Key = ""
		ps.Reasons = nil
	})
	r.mu.Lock()
	if r.notStarted == nil {
		r.notStarted = map[string]bool{}
	}
	r.notStarted[addr] = true
	r.mu.Unlock()
}

// testHookYielded, set by tests only, is called when a phase has given
// its slot back to wait for its upstream phases.
var testHookYielded func(r *runner, addr string)

// testHookDecided, set by tests only, is called when a phase has
// decided, before it takes a slot or finishes; testHookResult when the
// scheduler receives a message from a phase.
var (
	testHookDecided func(addr string)
	testHookResult  func(pr phaseResult)
)

// isClosed reports whether ch, which is only ever closed, is.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// finish records a phase that ended well.
func (r *runner) finish(addr string, d *Decision, status string, tree []cache.OutputFile, began time.Time) {
	e := r.e
	r.mu.Lock()
	r.trees[addr] = tree
	r.mu.Unlock()
	if !d.notCached {
		e.lastKeys.set(addr, d.key)
	}
	var metrics json.RawMessage
	if status != runrec.StatusSucceeded && d.entry != nil {
		metrics = e.cachedMetrics(e.spec.Phase(addr), d.entry)
	}
	end := e.now()
	r.state.phase(addr, func(ps *runrec.PhaseState) {
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

// poolState counts the units of each pool held by running phases.
type poolState struct {
	size map[string]int
	used map[string]int
}

func newPoolState(pools map[string]*spec.Pool) *poolState {
	ps := &poolState{size: map[string]int{}, used: map[string]int{}}
	for n, p := range pools {
		ps.size[n] = p.Size
	}
	return ps
}

func (ps *poolState) fits(res map[string]int) bool {
	for n, k := range res {
		if ps.used[n]+k > ps.size[n] {
			return false
		}
	}
	return true
}

func (ps *poolState) take(res map[string]int) {
	for n, k := range res {
		ps.used[n] += k
	}
}

func (ps *poolState) release(res map[string]int) {
	for n, k := range res {
		ps.used[n] -= k
	}
}
