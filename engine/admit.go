package engine

import (
	"slices"

	"github.com/cairn-run/cairn/spec"
)

// admission decides which phase may start now and which may hold a job
// slot: the -j bound, the resource pools, the phases deciding ahead of a
// slot and their claims, the slots given back and asked for again, and
// the -j 1 order. It only counts: the scheduler (runner.schedule) feeds
// it what the phases' goroutines report, and starts, answers and applies
// what it says.
//
// A job slot bounds the commands (and restores) that run at once, not the
// deciding: while every slot is taken, up to window more ready phases
// start without one, to decide (stat inputs, compute keys, find cached
// results). One found cached is done without ever holding a slot; one that
// must run or restore asks for a slot before it touches the workspace.
// Slots still go in the order phases became ready: a phase deciding ahead
// gets one only when more are free than phases started before it may
// still claim, and a new phase takes one only when more are free than
// phases deciding ahead may claim; so -j 1 runs commands in the order the
// phases became ready, and a spent budget stops the same phases, while
// with -j N a phase slow to decide keeps one free slot, not all of them.
// A phase whose pools are full is passed over; a pool's units in use never
// exceed its size (a phase asking for more than a pool holds is refused
// by the spec's validation: it could never start).
type admission struct {
	jobs   int
	window int    // phases that may decide ahead of a slot
	phases phases // the phases' pool units
	pools  poolState

	queue    []string        // ready phases not started, in the order they became ready
	running  int             // phases holding a job slot
	freed    map[string]bool // phases that gave their slot back before they were over
	regrants []string        // phases asking for the slot they gave back, first come first served
	deciding map[string]bool // phases started without a slot, not granted one
	ahead    []string        // of them, those that may still ask for one, in start order
	asking   map[string]bool // of those, the ones asking

	// With -j 1, phases were done one at a time, in the order they
	// started; commands still start in that order only if phases done
	// ahead (found cached without a slot) are done in it too: such a
	// phase is held until every phase started before it is done (or
	// released), else its dependents would become ready, and run,
	// before theirs. A failure is not held: it makes nothing ready, and
	// halts the run before another command starts.
	order []string        // with -j 1: phases started, not yet done or released, in start order
	held  map[string]bool // with -j 1: phases done well ahead of one started before them

	answers []answer // answer's result, reused
}

// phases gives a phase by its address (*spec.Spec does).
type phases interface {
	Phase(addr string) *spec.Phase
}

// answer is admission's answer to a phase asking for a job slot.
type answer struct {
	addr    string
	granted bool
}

func newAdmission(jobs, window int, pools map[string]*spec.Pool, ph phases) admission {
	return admission{jobs: jobs, window: window, phases: ph, pools: newPoolState(pools)}
}

// units are a phase's pool units.
func (a *admission) units(addr string) map[string]int { return a.phases.Phase(addr).Resources }

// ready queues phases that became ready.
func (a *admission) ready(addrs []string) { a.queue = append(a.queue, addrs...) }

// answer grants the phases asking for a job slot the ones they may have
// now, and refuses them all when open says no new command may start.
// Phases that gave their slot back come first; then the phases that
// decided ahead, in the order they started: one still deciding that would
// get a slot (its pools have room) keeps one of the free slots from those
// after it. The result is valid until the next call.
func (a *admission) answer(open func() bool) []answer {
	a.answers = a.answers[:0]
	for i := 0; i < len(a.regrants); {
		addr := a.regrants[i]
		res := a.units(addr)
		switch {
		case !open():
			a.answers = append(a.answers, answer{addr, false})
		case a.running < a.jobs && a.pools.fits(res):
			a.take(res)
			delete(a.freed, addr)
			a.answers = append(a.answers, answer{addr, true})
		default:
			i++
			continue
		}
		a.regrants = slices.Delete(a.regrants, i, i+1)
	}
	claims := 0
	for i := 0; i < len(a.ahead); {
		addr := a.ahead[i]
		res := a.units(addr)
		switch {
		case !a.asking[addr]:
			if a.pools.fits(res) {
				claims++
			}
			i++
			continue
		case !open():
			a.answers = append(a.answers, answer{addr, false})
		case a.running+claims < a.jobs && a.pools.fits(res):
			a.take(res)
			delete(a.deciding, addr)
			a.answers = append(a.answers, answer{addr, true})
		default:
			i++
			continue
		}
		a.dropAhead(addr)
	}
	return a.answers
}

// admit starts ready phases in order (calls start), with a slot while one
// is free and the phase's pools have room, else to decide ahead while
// fewer than window do; it stops at the first phase open refuses.
func (a *admission) admit(open func() bool, start func(addr string, slot bool)) {
	for i := 0; i < len(a.queue); {
		addr := a.queue[i]
		res := a.units(addr)
		claims := a.aheadMayClaim()
		slot := a.running+claims < a.jobs && a.pools.fits(res)
		if !slot && len(a.deciding) >= a.window {
			if a.running+claims < a.jobs {
				i++ // a later phase's pools may have room
				continue
			}
			break
		}
		if !open() {
			break
		}
		a.queue = slices.Delete(a.queue, i, i+1)
		if a.jobs == 1 {
			a.order = append(a.order, addr)
		}
		if slot {
			a.take(res)
		} else {
			a.deciding = set(a.deciding, addr)
			a.ahead = append(a.ahead, addr)
		}
		start(addr, slot)
	}
}

// aheadMayClaim counts the phases deciding ahead, not asking yet, that
// would get a free slot (their pools have room) if they asked: that many
// free slots are theirs; the ones asking that fit were granted already.
func (a *admission) aheadMayClaim() int {
	n := 0
	for _, addr := range a.ahead {
		if !a.asking[addr] && a.pools.fits(a.units(addr)) {
			n++
		}
	}
	return n
}

// ask: the phase asks for a job slot, having decided ahead without one or
// given its own back (see yield). Its answer comes from answer.
func (a *admission) ask(addr string) {
	if a.deciding[addr] {
		a.asking = set(a.asking, addr)
	} else {
		a.regrants = append(a.regrants, addr)
	}
}

// yield: the phase gives its slot (and pool units) back while it waits
// for its upstream phases, and will ask for it again.
func (a *admission) yield(addr string) {
	a.give(addr)
	a.freed = set(a.freed, addr)
}

// slotFree: the phase's command ended; its slot is free while it stores
// its outputs.
func (a *admission) slotFree(addr string) {
	a.drop(addr)
	a.freed = set(a.freed, addr)
}

// over: the phase is over (ok: it succeeded). It reports whether its end
// is to be acted on now; with -j 1, a phase done well ahead of one
// started before it is held, and comes out of leave once those are done.
func (a *admission) over(addr string, ok bool) bool {
	wasAhead := a.drop(addr)
	delete(a.freed, addr)
	if wasAhead && ok && len(a.order) > 0 && a.order[0] != addr {
		a.held = set(a.held, addr)
		return false
	}
	return true
}

// leave takes a phase done or released out of the -j 1 order and returns
// the phases held behind it, now to be acted on, in order (each
// succeeded). The result is valid until the next call.
func (a *admission) leave(addr string) []string {
	if i := slices.Index(a.order, addr); i >= 0 {
		a.order = slices.Delete(a.order, i, i+1)
	}
	n := 0
	for n < len(a.order) && a.held[a.order[n]] {
		delete(a.held, a.order[n])
		n++
	}
	out := a.order[:n]
	a.order = a.order[n:]
	return out
}

// drop takes what a phase that stops holding anything held: its place
// deciding ahead (it reports true) or its slot, unless it gave it back.
func (a *admission) drop(addr string) (wasAhead bool) {
	if a.deciding[addr] {
		delete(a.deciding, addr)
		a.dropAhead(addr)
		return true
	}
	if !a.freed[addr] {
		a.give(addr)
	}
	return false
}

// set adds addr to m, made on first use: most runs never need some of
// admission's sets, and a no-op run allocates nothing for them.
func set(m map[string]bool, addr string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[addr] = true
	return m
}

func (a *admission) dropAhead(addr string) {
	delete(a.asking, addr)
	if i := slices.Index(a.ahead, addr); i >= 0 {
		a.ahead = slices.Delete(a.ahead, i, i+1)
	}
}

func (a *admission) take(res map[string]int) {
	a.running++
	a.pools.take(res)
}

func (a *admission) give(addr string) {
	a.running--
	a.pools.release(a.units(addr))
}

// poolState counts the units of each pool held by running phases.
type poolState struct {
	size map[string]int
	used map[string]int
}

// newPoolState counts the given pools; without any, it allocates nothing
// (no phase may then ask for units: the spec refuses an undeclared pool).
func newPoolState(pools map[string]*spec.Pool) poolState {
	if len(pools) == 0 {
		return poolState{}
	}
	ps := poolState{size: map[string]int{}, used: map[string]int{}}
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
