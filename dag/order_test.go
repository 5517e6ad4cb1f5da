package dag

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkOrder fails the test unless order holds every vertex of g exactly
// once and puts every edge's source before its target.
func checkOrder(t testing.TB, g *Graph, order []string) {
	t.Helper()
	pos := make(map[string]int, len(order))
	for i, v := range order {
		if _, dup := pos[v]; dup {
			t.Fatalf("order lists %q twice", v)
		}
		if !g.Has(v) {
			t.Fatalf("order lists %q, which is not a vertex", v)
		}
		pos[v] = i
	}
	if len(order) != g.Len() {
		t.Fatalf("order has %d vertices, graph has %d", len(order), g.Len())
	}
	for _, e := range g.Edges() {
		if pos[e[0]] >= pos[e[1]] {
			t.Fatalf("edge %s -> %s: %q at %d, %q at %d", e[0], e[1], e[0], pos[e[0]], e[1], pos[e[1]])
		}
	}
}

func TestTopoOrder(t *testing.T) {
	tests := map[string]struct {
		specs []string
		want  []string
	}{
		"empty":   {nil, []string{}},
		"lone":    {[]string{"b", "a", "c"}, []string{"a", "b", "c"}},
		"chain":   {[]string{"c->a", "b->c"}, []string{"b", "c", "a"}},
		"diamond": {[]string{"a->c", "a->b", "b->d", "c->d"}, []string{"a", "b", "c", "d"}},
		"smallest ready first": {
			// z is ready at the start but comes after everything a unlocks
			// that sorts before it.
			[]string{"a->b", "b->c", "z"},
			[]string{"a", "b", "c", "z"},
		},
		"late unlock": {
			[]string{"m->a", "b"},
			[]string{"b", "m", "a"},
		},
		"phases": {
			[]string{`prepare->harden["b"]`, `prepare->harden["a"]`, `harden["a"]->report`, `harden["b"]->report`},
			[]string{"prepare", `harden["a"]`, `harden["b"]`, "report"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := graphOf(tt.specs...)
			got, err := g.TopoOrder()
			if err != nil {
				t.Fatalf("TopoOrder: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("TopoOrder (-want +got):\n%s", diff)
			}
			checkOrder(t, g, got)
		})
	}
}

func TestTopoOrderShuffled(t *testing.T) {
	base := layeredGraph(10, 50, 3)
	specs := append([]string(nil), base.Vertices()...)
	for _, e := range base.Edges() {
		specs = append(specs, e[0]+"->"+e[1])
	}
	want, err := base.TopoOrder()
	if err != nil {
		t.Fatal(err)
	}
	checkOrder(t, base, want)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 20 {
		g := shuffled(r, specs...)
		got, err := g.TopoOrder()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("shuffle %d: order depends on insertion order (-want +got):\n%s", i, diff)
		}
	}
}

func TestTopoOrderCycle(t *testing.T) {
	g := graphOf("a->b", "b->c", "c->a", "c->d", "x")
	order, err := g.TopoOrder()
	if order != nil {
		t.Errorf("TopoOrder returned order %q with a cycle, want nil", order)
	}
	var ce *CycleError
	if !errors.As(err, &ce) {
		t.Fatalf("TopoOrder error = %v, want *CycleError", err)
	}
	if diff := cmp.Diff([][]string{{"a", "b", "c"}}, ce.Cycles); diff != "" {
		t.Errorf("Cycles (-want +got):\n%s", diff)
	}
	if got, want := err.Error(), "dependency cycle: a -> b -> c -> a"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestTopoOrderDeepChain(t *testing.T) {
	const n = 100_000
	var g Graph
	// Insert backwards so index order and name order disagree.
	for i := n - 1; i > 0; i-- {
		g.Connect(fmt.Sprintf("v%06d", i-1), fmt.Sprintf("v%06d", i))
	}
	order, err := g.TopoOrder()
	if err != nil {
		t.Fatal(err)
	}
	checkOrder(t, &g, order)
}

func BenchmarkTopoOrder100k(b *testing.B) {
	g := layeredGraph(100, 1000, 3) // 100,000 vertices, ~300,000 edges
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.TopoOrder(); err != nil {
			b.Fatal(err)
		}
	}
}
