package dag

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzOrder builds a graph from pairs of bytes (each byte picks one of 16
// vertices; an odd byte left over adds a lone vertex) and checks that
// either Validate reports cycles that really are cycles, or TopoOrder and a
// Plan driven to the end both produce orders that respect every edge. The
// seeds live in testdata/fuzz/FuzzOrder.
func FuzzOrder(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		name := func(b byte) string { return fmt.Sprintf("v%02d", b%16) }
		var g Graph
		for i := 0; i < len(data); i += 2 {
			if i+1 == len(data) {
				g.Add(name(data[i]))
			} else {
				g.Connect(name(data[i]), name(data[i+1]))
			}
		}

		verr := g.Validate()
		order, terr := g.TopoOrder()
		if (verr == nil) != (terr == nil) {
			t.Fatalf("Validate = %v but TopoOrder error = %v", verr, terr)
		}
		if verr != nil {
			var ce *CycleError
			if !errors.As(verr, &ce) || len(ce.Cycles) == 0 {
				t.Fatalf("Validate = %v, want *CycleError with cycles", verr)
			}
			checkCycles(t, &g, ce.Cycles)
			return
		}
		checkOrder(t, &g, order)

		p := NewPlan(&g, nil)
		var run []string
		for r := p.Ready(); len(r) > 0; r = p.Ready() {
			for _, v := range r {
				p.Done(v, true)
				run = append(run, v)
			}
		}
		if !p.Finished() {
			t.Fatalf("plan stalled with %d pending", p.Pending())
		}
		checkOrder(t, &g, run)
	})
}

// checkCycles fails unless every cycle follows edges of g back to its start,
// visits distinct vertices, starts at its smallest vertex, and the list is
// sorted without duplicates.
func checkCycles(t *testing.T, g *Graph, cycles [][]string) {
	t.Helper()
	edges := map[[2]string]bool{}
	for _, e := range g.Edges() {
		edges[e] = true
	}
	for _, c := range cycles {
		if len(c) == 0 || slices.Min(c) != c[0] {
			t.Fatalf("cycle %q does not start at its smallest vertex", c)
		}
		seen := map[string]bool{}
		for i, v := range c {
			if seen[v] {
				t.Fatalf("cycle %q repeats %q", c, v)
			}
			seen[v] = true
			if next := c[(i+1)%len(c)]; !edges[[2]string{v, next}] {
				t.Fatalf("cycle %q uses missing edge %s -> %s", c, v, next)
			}
		}
	}
	sorted := slices.Clone(cycles)
	slices.SortFunc(sorted, slices.Compare)
	sorted = slices.CompactFunc(sorted, slices.Equal)
	if diff := cmp.Diff(sorted, cycles); diff != "" {
		t.Fatalf("cycles not sorted and unique (-want +got):\n%s", diff)
	}
}
