package engine

import (
	"context"
	"fmt"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/runrec"
)

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
// Which ready phase starts, with a job slot or to decide ahead of one, and
// which phase asking for a slot (see takeSlot) gets one, admission
// decides: so a no-op keeps every core busy deciding, and cached phases
// are done while a long command holds the only slot of -j 1.
func (r *runner) schedule(ctx context.Context, jobs int) {
	window := decideAhead()
	sp := r.e.spec
	s := scheduler{
		r:       r,
		ctx:     ctx,
		plan:    dag.NewPlan(sp.Graph, r.sel.include),
		adm:     newAdmission(jobs, window, sp.Pools, sp),
		workers: newWorkers(r.results, 2*min(jobs+window, maxIdleWorkers/2)),
	}
	stopC := (<-chan struct{})(r.stopCh)
	for {
		s.answer()
		if s.open() {
			s.adm.ready(s.plan.Ready())
		}
		s.start()
		if s.inflight == 0 {
			s.workers.close()
			return
		}
		select {
		case <-stopC:
			stopC = nil // a stop wakes the loop once, to start nothing more
		case pr := <-r.results:
			s.receive(pr)
		}
	}
}

// scheduler is the state of schedule's loop.
type scheduler struct {
	r        *runner
	ctx      context.Context
	plan     *dag.Plan
	adm      admission
	workers  *workers
	inflight int                  // phase goroutines not yet over
	replies  map[string]chan bool // phases asking for a job slot: where to answer
	released map[string]bool      // phases whose dependents could start before they were over
	halted   bool                 // a phase failed without KeepGoing
}

// open reports whether new phases may start: no failure halted the run,
// it is not stopping and not cancelled.
func (s *scheduler) open() bool { return !s.halted && !s.r.stopping() && s.ctx.Err() == nil }

// mayGrant reports whether a phase asking for a job slot may have one.
func (s *scheduler) mayGrant() bool { return s.open() && !s.r.budgetSpent() }

// mayStart reports whether a new phase may start; one finding the run
// budget spent begins a graceful stop.
func (s *scheduler) mayStart() bool {
	if !s.open() {
		return false
	}
	if s.r.budgetSpent() {
		s.r.requestStop(StopBudget)
		return false
	}
	return true
}

// answer tells the phases asking for a job slot whether they have one. A
// phase that waited for its upstream phases gets its slot back before any
// new phase starts; when no new command may start, it is told so and does
// not start its own.
func (s *scheduler) answer() {
	for _, a := range s.adm.answer(s.mayGrant) {
		s.replies[a.addr] <- a.granted
		delete(s.replies, a.addr)
	}
}

// start starts the ready phases admission admits.
func (s *scheduler) start() { s.adm.admit(s.mayStart, s.launch) }

// launch runs a phase on a worker; slot says whether it holds a job slot.
func (s *scheduler) launch(addr string, slot bool) {
	r, ctx := s.r, s.ctx
	s.inflight++
	s.workers.run(func() phaseResult {
		ok := r.process(ctx, addr, slot)
		r.over(addr)
		r.mu.Lock()
		notStarted := r.notStarted[addr]
		r.mu.Unlock()
		return phaseResult{addr: addr, ok: ok, notStarted: notStarted}
	})
}

// receive acts on a message from a phase's goroutine.
func (s *scheduler) receive(pr phaseResult) {
	if testHookResult != nil {
		testHookResult(pr)
	}
	switch {
	case pr.yield:
		s.adm.yield(pr.addr)
	case pr.regrant != nil:
		s.adm.ask(pr.addr)
		if s.replies == nil {
			s.replies = map[string]chan bool{}
		}
		s.replies[pr.addr] = pr.regrant
	case pr.released:
		s.released = set(s.released, pr.addr)
		s.plan.Done(pr.addr, true)
		s.leave(pr.addr)
	case pr.slotOnly:
		s.adm.slotFree(pr.addr)
	default:
		s.inflight--
		if s.adm.over(pr.addr, pr.ok) {
			s.apply(pr)
			s.leave(pr.addr)
		}
	}
}

// leave takes a phase done or released out of the -j 1 order, and applies
// the phases held behind it.
func (s *scheduler) leave(addr string) {
	for _, h := range s.adm.leave(addr) {
		s.apply(phaseResult{addr: h, ok: true})
	}
}

// apply acts on a phase's end: its dependents become ready, or are
// blocked by its failure, which halts the run without KeepGoing.
func (s *scheduler) apply(pr phaseResult) {
	r := s.r
	if pr.notStarted {
		return // pending: skipped when the run ends, as if never started
	}
	if s.released[pr.addr] {
		// Its dependents were started: only a failure to store its
		// outputs (a full cache) remains to act on.
		delete(s.released, pr.addr)
		if !pr.ok && !r.opts.KeepGoing {
			s.halted = true
		}
		return
	}
	skipped := s.plan.Done(pr.addr, pr.ok)
	if !pr.ok && (r.stopping() || s.ctx.Err() != nil) {
		// A phase ended by a stop: its dependents were not
		// blocked by a failure, they are simply not started.
		skipped = nil
	}
	for _, b := range skipped {
		r.state.Phase(b, func(ps *runrec.PhaseState) {
			ps.Status = runrec.StatusBlocked
			ps.Error = fmt.Sprintf("upstream phase %s did not succeed", pr.addr)
		})
		r.e.rep.Report(Event{Kind: EventDone, Phase: b, Status: runrec.StatusBlocked, Reasons: []string{"upstream " + pr.addr + " did not succeed"}, Time: r.e.now()})
	}
	if !pr.ok && !r.opts.KeepGoing {
		s.halted = true
	}
}

// workers runs the phases' goroutines on reused goroutines. A goroutine
// that has decided, restored or run a phase has grown its stack; a fresh
// goroutine for the next phase would start small and grow (copy) its
// stack again, which cost a no-op run of 1,000 phases 4% of its CPU.
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
	r.state.Phase(addr, func(ps *runrec.PhaseState) {
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
