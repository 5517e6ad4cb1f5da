package dag

import (
	"slices"
	"strings"
)

// CycleError reports that a graph has dependency cycles, so it has no
// topological order. It is returned by [Graph.Validate] and
// [Graph.TopoOrder]; callers that need the cycles use [errors.As].
type CycleError struct {
	// Cycles holds the cycles as reported by [Graph.Cycles]: each one
	// starts at its smallest vertex, the list is sorted, and a self-edge
	// is a one-element cycle.
	Cycles [][]string
}

// Error renders each cycle as "dependency cycle: a -> b -> c -> a", closing
// the path back at its first vertex (a self-edge is "dependency cycle:
// a -> a"), and joins several cycles with "; ".
func (e *CycleError) Error() string {
	var b strings.Builder
	for k, c := range e.Cycles {
		if k > 0 {
			b.WriteString("; ")
		}
		b.WriteString("dependency cycle: ")
		for _, v := range c {
			b.WriteString(v)
			b.WriteString(" -> ")
		}
		if len(c) > 0 {
			b.WriteString(c[0])
		}
	}
	return b.String()
}

// Validate returns nil if g has no cycles, and otherwise a *[CycleError]
// holding [Graph.Cycles].
func (g *Graph) Validate() error {
	if cs := g.Cycles(); len(cs) > 0 {
		return &CycleError{Cycles: cs}
	}
	return nil
}

// Cycles returns a representative set of the cycles of g, the same on every
// run:
//
//   - For every strongly connected component of more than one vertex (found
//     with Tarjan's algorithm), one cycle through its vertices: the shortest
//     path from the component's smallest vertex back to itself, ties broken
//     by visiting neighbours in name order. A component may hold more
//     elementary cycles than the one reported; breaking the reported one is
//     not guaranteed to make the component acyclic.
//   - Every self-edge v -> v, as the one-element cycle [v], even when v also
//     lies in a larger component.
//
// Each cycle is listed in edge order starting at its smallest vertex, and
// the list is sorted (as by [slices.Compare]). It returns nil if g is
// acyclic. It runs in O((V+E) log V) time.
func (g *Graph) Cycles() [][]string {
	var cycles [][]string
	for i, ds := range g.down {
		if slices.Contains(ds, i) {
			cycles = append(cycles, []string{g.names[i]})
		}
	}

	comp, ncomp := g.components()
	size := make([]int, ncomp)
	for _, c := range comp {
		size[c]++
	}
	_, rank := g.order()
	// start[c] is the smallest vertex of component c, or -1.
	start := make([]int, ncomp)
	for c := range start {
		start[c] = -1
	}
	for i, c := range comp {
		if size[c] > 1 && (start[c] < 0 || rank[i] < rank[start[c]]) {
			start[c] = i
		}
	}

	parent := make([]int, len(g.names))
	for i := range parent {
		parent[i] = -1
	}
	for _, s := range start {
		if s >= 0 {
			cycles = append(cycles, g.shortestCycle(s, comp, rank, parent))
		}
	}
	slices.SortFunc(cycles, slices.Compare)
	return cycles
}

// shortestCycle runs a breadth-first search from s inside s's component and
// returns the first path found back to s, starting at s. Neighbours are
// visited in rank order so the result is deterministic. parent is scratch
// space shared between calls; components are disjoint, so each vertex is
// written by one search only and no reset is needed.
func (g *Graph) shortestCycle(s int, comp, rank, parent []int) []string {
	parent[s] = s
	queue := []int{s}
	var next []int
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		next = append(next[:0], g.down[u]...)
		slices.SortFunc(next, func(a, b int) int { return rank[a] - rank[b] })
		for _, w := range next {
			switch {
			case w == u || comp[w] != comp[s]:
				// Self-edges are reported on their own; other components
				// cannot lead back to s.
			case w == s:
				var path []string
				for v := u; v != s; v = parent[v] {
					path = append(path, g.names[v])
				}
				path = append(path, g.names[s])
				slices.Reverse(path)
				return path
			case parent[w] < 0:
				parent[w] = u
				queue = append(queue, w)
			}
		}
	}
	panic("dag: internal error: no cycle in a strongly connected component")
}

// components labels every vertex with its strongly connected component
// using Tarjan's algorithm, with an explicit stack instead of recursion so
// that long chains cannot exhaust the goroutine stack. Components are
// numbered 0 to ncomp-1.
func (g *Graph) components() (comp []int, ncomp int) {
	n := len(g.names)
	const unvisited = -1
	index := make([]int, n)
	low := make([]int, n)
	comp = make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unvisited
	}
	var (
		stack []int // Tarjan's vertex stack
		calls []struct{ v, next int }
		count int
	)
	visit := func(v int) {
		index[v], low[v] = count, count
		count++
		stack = append(stack, v)
		onStack[v] = true
		calls = append(calls, struct{ v, next int }{v, 0})
	}
	for root := range n {
		if index[root] != unvisited {
			continue
		}
		visit(root)
		for len(calls) > 0 {
			top := &calls[len(calls)-1]
			v := top.v
			if top.next < len(g.down[v]) {
				w := g.down[v][top.next]
				top.next++
				if index[w] == unvisited {
					visit(w) // may move calls; top is not used again
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = ncomp
					if w == v {
						break
					}
				}
				ncomp++
			}
		}
	}
	return comp, ncomp
}
