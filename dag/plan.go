package dag

import (
	"fmt"
	"slices"
)

// Plan is the scheduling state for running a graph: which vertices are
// ready, which are running, and which are finished. Like ninja's Plan it is
// pure bookkeeping and knows nothing of goroutines or processes; the caller
// (engine) starts the work that [Plan.Ready] hands out and reports back
// through [Plan.Done].
//
// A Plan is not safe for concurrent use: the caller serialises calls, for
// example from the one goroutine that collects results. The graph must not
// be modified while the Plan is in use.
//
// On a graph with a cycle, the vertices on or downstream of the cycle never
// become ready, so the Plan never finishes; call [Graph.Validate] first.
type Plan struct {
	g       *Graph
	rank    []int       // vertex index -> position in name order
	state   []planState // per vertex index
	waiting []int       // included upstream vertices not yet done ok
	ready   []int       // vertices made ready since the last Ready call
	pending int         // included vertices not yet finished
}

type planState uint8

const (
	stateExcluded  planState = iota // not included: treated as already satisfied
	stateWaiting                    // included, some upstream not yet done ok
	stateQueued                     // ready, to be returned by the next Ready call
	stateRunning                    // returned by Ready, Done not yet called
	stateSucceeded                  // Done(v, true)
	stateFailed                     // Done(v, false)
	stateSkipped                    // an upstream failed, so it can never run
)

// NewPlan returns a Plan for running the vertices of g for which include is
// true, or all of g if include is nil. Vertices that are not included are
// treated as already finished successfully: they never block their
// dependents and are never returned by Ready. Names in include that are not
// vertices of g are ignored.
func NewPlan(g *Graph, include map[string]bool) *Plan {
	n := g.Len()
	_, rank := g.order()
	p := &Plan{
		g:       g,
		rank:    rank,
		state:   make([]planState, n),
		waiting: make([]int, n),
	}
	for i, name := range g.names {
		if include == nil || include[name] {
			p.state[i] = stateWaiting
			p.pending++
		}
	}
	for i := range n {
		if p.state[i] != stateWaiting {
			continue
		}
		for _, u := range g.up[i] {
			if p.state[u] != stateExcluded {
				p.waiting[i]++
			}
		}
		if p.waiting[i] == 0 {
			p.makeReady(i)
		}
	}
	return p
}

func (p *Plan) makeReady(i int) {
	p.state[i] = stateQueued
	p.ready = append(p.ready, i)
}

// Ready returns the included vertices that may start now, sorted: those
// whose included upstream vertices have all finished successfully. Each
// vertex is returned exactly once over the life of the Plan, so the caller
// starts everything it is given; Ready returns nil when nothing new is
// ready. New vertices become ready only through [Plan.Done].
func (p *Plan) Ready() []string {
	if len(p.ready) == 0 {
		return nil
	}
	slices.SortFunc(p.ready, func(a, b int) int { return p.rank[a] - p.rank[b] })
	out := make([]string, len(p.ready))
	for k, i := range p.ready {
		out[k] = p.g.names[i]
		p.state[i] = stateRunning
	}
	p.ready = p.ready[:0]
	return out
}

// Done records that v, previously returned by [Plan.Ready], has finished,
// successfully if ok. Success may make dependents ready for the next Ready
// call. Failure means every included transitive dependent of v that has
// not started can now never run: those are marked finished and returned,
// sorted, so the caller can report them as skipped rather than as further
// errors. Dependents reached only through a vertex that is not included
// are not skipped, because that vertex counts as already satisfied.
//
// Done panics if v is not a vertex of the graph, was not returned by
// Ready, or was already marked done: each is a bug in the caller.
func (p *Plan) Done(v string, ok bool) (skipped []string) {
	i, found := p.g.index[v]
	if !found {
		panic(fmt.Sprintf("dag: Plan.Done(%q): not a vertex of the graph", v))
	}
	switch p.state[i] {
	case stateRunning:
		// The only valid state.
	case stateQueued:
		panic(fmt.Sprintf("dag: Plan.Done(%q): vertex is ready but was not yet returned by Ready", v))
	case stateSucceeded, stateFailed:
		panic(fmt.Sprintf("dag: Plan.Done(%q): vertex already done", v))
	case stateSkipped:
		panic(fmt.Sprintf("dag: Plan.Done(%q): vertex was skipped because an upstream vertex failed", v))
	case stateExcluded:
		panic(fmt.Sprintf("dag: Plan.Done(%q): vertex is not included in the plan", v))
	default:
		panic(fmt.Sprintf("dag: Plan.Done(%q): vertex was never returned by Ready", v))
	}
	p.pending--

	if ok {
		p.state[i] = stateSucceeded
		for _, d := range p.g.down[i] {
			if p.state[d] != stateWaiting {
				continue
			}
			p.waiting[d]--
			if p.waiting[d] == 0 {
				p.makeReady(d)
			}
		}
		return nil
	}

	// A waiting dependent needs v to succeed, so it and everything waiting
	// on it can never run. Vertices are skipped at most once, so all calls
	// to Done together cost O(V+E).
	p.state[i] = stateFailed
	var queue []int
	skip := func(u int) {
		for _, d := range p.g.down[u] {
			if p.state[d] == stateWaiting {
				p.state[d] = stateSkipped
				p.pending--
				queue = append(queue, d)
			}
		}
	}
	skip(i)
	for head := 0; head < len(queue); head++ {
		skip(queue[head])
	}
	if len(queue) == 0 {
		return nil
	}
	slices.SortFunc(queue, func(a, b int) int { return p.rank[a] - p.rank[b] })
	out := make([]string, len(queue))
	for k, d := range queue {
		out[k] = p.g.names[d]
	}
	return out
}

// Pending returns the number of included vertices not yet finished: those
// neither marked done nor skipped, including ones that are ready or running.
func (p *Plan) Pending() int { return p.pending }

// Finished reports whether every included vertex has finished, that is
// whether Pending is zero.
func (p *Plan) Finished() bool { return p.pending == 0 }
