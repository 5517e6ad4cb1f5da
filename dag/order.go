package dag

// TopoOrder returns every vertex of g in an order where each vertex comes
// after all of its upstream vertices.
//
// It runs Kahn's algorithm and, among the vertices that are ready, always
// takes the smallest name first, so the order depends only on the graph
// and not on insertion order. If g has a cycle, TopoOrder returns a nil
// slice and a *[CycleError] listing the cycles. It runs in
// O((V+E) log V) time.
func (g *Graph) TopoOrder() ([]string, error) {
	n := len(g.names)
	byName, rank := g.order()

	waiting := make([]int, n) // upstream vertices not yet emitted
	var ready rankHeap
	for i := range n {
		waiting[i] = len(g.up[i])
	}
	// Seeding in name order makes the slice already a valid heap.
	for _, i := range byName {
		if waiting[i] == 0 {
			ready = append(ready, rank[i])
		}
	}

	out := make([]string, 0, n)
	for len(ready) > 0 {
		i := byName[ready.pop()]
		out = append(out, g.names[i])
		for _, d := range g.down[i] {
			waiting[d]--
			if waiting[d] == 0 {
				ready.push(rank[d])
			}
		}
	}
	if len(out) < n {
		return nil, &CycleError{Cycles: g.Cycles()}
	}
	return out, nil
}

// rankHeap is a binary min-heap of vertex ranks. It is hand-written rather
// than built on container/heap to avoid boxing every push and pop in an
// interface on graphs of 100,000 vertices.
type rankHeap []int

func (h *rankHeap) push(r int) {
	s := append(*h, r)
	for c := len(s) - 1; c > 0; {
		p := (c - 1) / 2
		if s[p] <= s[c] {
			break
		}
		s[p], s[c] = s[c], s[p]
		c = p
	}
	*h = s
}

func (h *rankHeap) pop() int {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for p := 0; ; {
		c := 2*p + 1
		if c >= len(s) {
			break
		}
		if c+1 < len(s) && s[c+1] < s[c] {
			c++
		}
		if s[p] <= s[c] {
			break
		}
		s[p], s[c] = s[c], s[p]
		p = c
	}
	*h = s
	return top
}
