package dag

import (
	"slices"
	"strings"
)

// Graph is a directed graph of string vertices. An edge from -> to means
// that to depends on from: from is upstream of to, to is downstream of from.
//
// The zero value is an empty graph ready to use. Vertices and edges are
// never removed; use [Graph.Induced] to take a subgraph.
//
// A Graph is not safe for concurrent modification. Methods that do not
// modify it (everything except Add, Connect and Grow) only read it, so
// they may be called from several goroutines at once while nobody
// modifies it.
type Graph struct {
	index map[string]int      // vertex name -> dense index
	names []string            // dense index -> vertex name
	down  [][]int             // down[i]: direct dependents of i, in insertion order
	up    [][]int             // up[i]: direct dependencies of i, in insertion order
	edges map[uint64]struct{} // from<<32 | to, so duplicate edges are ignored
}

func (g *Graph) init() {
	if g.index == nil {
		g.index = make(map[string]int)
		g.edges = make(map[uint64]struct{})
	}
}

// Grow makes room for about vertices more vertices and edges more edges,
// so a graph built in one go (a spec's thousands of phases) does not grow
// its tables step by step.
func (g *Graph) Grow(vertices, edges int) {
	if g.index == nil {
		g.index = make(map[string]int, vertices)
		g.edges = make(map[uint64]struct{}, edges)
	}
	g.names = slices.Grow(g.names, vertices)
	g.down = slices.Grow(g.down, vertices)
	g.up = slices.Grow(g.up, vertices)
}

// add returns v's index, adding v if it is new.
func (g *Graph) add(v string) int {
	g.init()
	if i, ok := g.index[v]; ok {
		return i
	}
	i := len(g.names)
	g.index[v] = i
	g.names = append(g.names, v)
	g.down = append(g.down, nil)
	g.up = append(g.up, nil)
	return i
}

// Add adds the vertex v. Adding a vertex that already exists does nothing.
func (g *Graph) Add(v string) { g.add(v) }

// Connect adds the edge from -> to, meaning to depends on from. Missing
// vertices are added; a duplicate edge is ignored. A self-edge (from == to)
// is stored and later reported as a cycle by [Graph.Cycles].
func (g *Graph) Connect(from, to string) {
	f, t := g.add(from), g.add(to)
	key := uint64(f)<<32 | uint64(t)
	if _, dup := g.edges[key]; dup {
		return
	}
	g.edges[key] = struct{}{}
	g.down[f] = append(g.down[f], t)
	g.up[t] = append(g.up[t], f)
}

// Has reports whether v is a vertex of g.
func (g *Graph) Has(v string) bool {
	_, ok := g.index[v]
	return ok
}

// Len returns the number of vertices.
func (g *Graph) Len() int { return len(g.names) }

// Vertices returns every vertex, sorted.
func (g *Graph) Vertices() []string {
	vs := slices.Clone(g.names)
	slices.Sort(vs)
	return vs
}

// Edges returns every edge as {from, to}, sorted by from and then to.
func (g *Graph) Edges() [][2]string {
	es := make([][2]string, 0, len(g.edges))
	for f, ts := range g.down {
		for _, t := range ts {
			es = append(es, [2]string{g.names[f], g.names[t]})
		}
	}
	slices.SortFunc(es, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	return es
}

// Upstream returns the direct dependencies of v (the sources of edges into
// v), sorted. It returns nil if v has none or is not in g.
func (g *Graph) Upstream(v string) []string {
	i, ok := g.index[v]
	if !ok {
		return nil
	}
	return g.sortedNames(g.up[i])
}

// Downstream returns the direct dependents of v (the targets of edges out
// of v), sorted. It returns nil if v has none or is not in g.
func (g *Graph) Downstream(v string) []string {
	i, ok := g.index[v]
	if !ok {
		return nil
	}
	return g.sortedNames(g.down[i])
}

// Ancestors returns every vertex from which some vertex in vs can be
// reached by following one or more edges: the transitive dependencies of
// vs. A vertex of vs is included only if it is itself reached that way (it
// lies on a cycle, or it is upstream of another vertex of vs). Vertices of
// vs that are not in g are ignored. The result is never nil.
func (g *Graph) Ancestors(vs ...string) map[string]bool {
	return g.reach(g.up, vs)
}

// Descendants returns every vertex that can be reached from some vertex in
// vs by following one or more edges: the transitive dependents of vs. The
// rules for vs itself are those of [Graph.Ancestors]. The result is never
// nil.
func (g *Graph) Descendants(vs ...string) map[string]bool {
	return g.reach(g.down, vs)
}

// reach walks adj breadth-first from the neighbours of vs and returns the
// names of every vertex visited.
func (g *Graph) reach(adj [][]int, vs []string) map[string]bool {
	seen := make([]bool, len(g.names))
	var queue []int
	for _, v := range vs {
		if i, ok := g.index[v]; ok {
			for _, w := range adj[i] {
				if !seen[w] {
					seen[w] = true
					queue = append(queue, w)
				}
			}
		}
	}
	for head := 0; head < len(queue); head++ {
		for _, w := range adj[queue[head]] {
			if !seen[w] {
				seen[w] = true
				queue = append(queue, w)
			}
		}
	}
	out := make(map[string]bool, len(queue))
	for _, i := range queue {
		out[g.names[i]] = true
	}
	return out
}

// Induced returns a new graph holding the vertices of g for which keep is
// true and every edge of g between two of them. Names in keep that are not
// vertices of g are ignored. g is not modified.
func (g *Graph) Induced(keep map[string]bool) *Graph {
	sub := new(Graph)
	sub.init()
	byName, _ := g.order()
	for _, i := range byName {
		if keep[g.names[i]] {
			sub.add(g.names[i])
		}
	}
	for _, f := range byName {
		if !keep[g.names[f]] {
			continue
		}
		for _, t := range g.down[f] {
			if keep[g.names[t]] {
				sub.Connect(g.names[f], g.names[t])
			}
		}
	}
	return sub
}

// String renders g for tests and debugging: each vertex on its own line in
// sorted order, followed by its direct dependents, sorted and indented by
// two spaces. An empty graph renders as "".
func (g *Graph) String() string {
	var b strings.Builder
	byName, _ := g.order()
	for _, i := range byName {
		b.WriteString(g.names[i])
		b.WriteByte('\n')
		for _, d := range g.sortedNames(g.down[i]) {
			b.WriteString("  ")
			b.WriteString(d)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// sortedNames returns the names of the vertices idx, sorted, or nil if
// idx is empty.
func (g *Graph) sortedNames(idx []int) []string {
	if len(idx) == 0 {
		return nil
	}
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = g.names[i]
	}
	slices.Sort(out)
	return out
}

// order returns the vertex indices sorted by name (byName) and, for each
// index, its position in that order (rank). Comparing ranks is comparing
// names, which lets the algorithms work on integers yet stay independent of
// insertion order.
func (g *Graph) order() (byName, rank []int) {
	n := len(g.names)
	byName = make([]int, n)
	for i := range byName {
		byName[i] = i
	}
	slices.SortFunc(byName, func(a, b int) int { return strings.Compare(g.names[a], g.names[b]) })
	rank = make([]int, n)
	for r, i := range byName {
		rank[i] = r
	}
	return byName, rank
}
