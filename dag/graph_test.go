package dag

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// graphOf builds a graph from specs: "a" adds a vertex, "a->b" an edge.
func graphOf(specs ...string) *Graph {
	var g Graph
	for _, s := range specs {
		if from, to, ok := strings.Cut(s, "->"); ok {
			g.Connect(from, to)
		} else {
			g.Add(s)
		}
	}
	return &g
}

// shuffled builds the same graph as graphOf(specs...) but inserting the
// vertices and edges in a random order.
func shuffled(r *rand.Rand, specs ...string) *Graph {
	s := append([]string(nil), specs...)
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return graphOf(s...)
}

// layeredGraph returns a DAG of layers*width vertices in which every vertex
// below the first layer depends on fanIn pseudo-random vertices of the
// layer above. The same arguments always give the same graph.
func layeredGraph(layers, width, fanIn int) *Graph {
	r := rand.New(rand.NewPCG(1, 2))
	var g Graph
	name := func(l, i int) string { return fmt.Sprintf("l%03d/v%05d", l, i) }
	for l := range layers {
		for i := range width {
			v := name(l, i)
			g.Add(v)
			if l == 0 {
				continue
			}
			for range fanIn {
				g.Connect(name(l-1, r.IntN(width)), v)
			}
		}
	}
	return &g
}

func TestGraphZeroValue(t *testing.T) {
	var g Graph
	if g.Len() != 0 || g.Has("a") || g.String() != "" {
		t.Errorf("zero Graph: Len=%d Has(a)=%v String=%q, want 0 false \"\"", g.Len(), g.Has("a"), g.String())
	}
	if got := g.Vertices(); len(got) != 0 {
		t.Errorf("Vertices() = %q, want none", got)
	}
	if got := g.Edges(); len(got) != 0 {
		t.Errorf("Edges() = %q, want none", got)
	}
	if got := g.Upstream("a"); got != nil {
		t.Errorf("Upstream(missing) = %q, want nil", got)
	}
}

func TestGraphString(t *testing.T) {
	tests := map[string]struct {
		specs []string
		want  string
	}{
		"empty": {nil, ""},
		"lone vertices": {
			[]string{"b", "a", "b"},
			"a\nb\n",
		},
		"diamond": {
			[]string{"a->c", "a->b", "b->d", "c->d"},
			"a\n  b\n  c\nb\n  d\nc\n  d\nd\n",
		},
		"duplicate edges and self-edge": {
			[]string{"a->b", "a->b", "b->b"},
			"a\n  b\nb\n  b\n",
		},
		"quoted names": {
			[]string{`prepare->harden["gpt-4o-mini"]`, `prepare->harden["claude"]`},
			"harden[\"claude\"]\nharden[\"gpt-4o-mini\"]\nprepare\n  harden[\"claude\"]\n  harden[\"gpt-4o-mini\"]\n",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := graphOf(tt.specs...).String(); got != tt.want {
				t.Errorf("graph:\ngot:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestGraphQueries(t *testing.T) {
	g := graphOf("c->d", "a->c", "a->b", "b->d", "a->b", "e")
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, g.Vertices()); diff != "" {
		t.Errorf("Vertices() (-want +got):\n%s", diff)
	}
	wantEdges := [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}}
	if diff := cmp.Diff(wantEdges, g.Edges()); diff != "" {
		t.Errorf("Edges() (-want +got):\n%s", diff)
	}
	if g.Len() != 5 || !g.Has("e") || g.Has("z") {
		t.Errorf("Len=%d Has(e)=%v Has(z)=%v, want 5 true false", g.Len(), g.Has("e"), g.Has("z"))
	}

	neighbours := map[string]struct{ up, down []string }{
		"a": {nil, []string{"b", "c"}},
		"b": {[]string{"a"}, []string{"d"}},
		"d": {[]string{"b", "c"}, nil},
		"e": {nil, nil},
		"z": {nil, nil},
	}
	for v, want := range neighbours {
		if diff := cmp.Diff(want.up, g.Upstream(v)); diff != "" {
			t.Errorf("Upstream(%q) (-want +got):\n%s", v, diff)
		}
		if diff := cmp.Diff(want.down, g.Downstream(v)); diff != "" {
			t.Errorf("Downstream(%q) (-want +got):\n%s", v, diff)
		}
	}
}

func TestAncestorsDescendants(t *testing.T) {
	//   a -> b -> d -> e      x -> y -> x (cycle), y -> y (self-edge)
	//   a -> c -> d           z
	g := graphOf("a->b", "a->c", "b->d", "c->d", "d->e", "x->y", "y->x", "y->y", "z")
	set := func(vs ...string) map[string]bool {
		m := map[string]bool{}
		for _, v := range vs {
			m[v] = true
		}
		return m
	}
	tests := map[string]struct {
		vs                []string
		ancestors, descen map[string]bool
	}{
		"none":                    {nil, set(), set()},
		"missing":                 {[]string{"nope"}, set(), set()},
		"root":                    {[]string{"a"}, set(), set("b", "c", "d", "e")},
		"middle":                  {[]string{"d"}, set("a", "b", "c"), set("e")},
		"leaf":                    {[]string{"e"}, set("a", "b", "c", "d"), set()},
		"several":                 {[]string{"b", "c"}, set("a"), set("d", "e")},
		"one upstream of another": {[]string{"b", "d"}, set("a", "b", "c"), set("d", "e")},
		"isolated":                {[]string{"z"}, set(), set()},
		"on a cycle":              {[]string{"x"}, set("x", "y"), set("x", "y")},
		"self-edge":               {[]string{"y"}, set("x", "y"), set("x", "y")},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.ancestors, g.Ancestors(tt.vs...)); diff != "" {
				t.Errorf("Ancestors(%q) (-want +got):\n%s", tt.vs, diff)
			}
			if diff := cmp.Diff(tt.descen, g.Descendants(tt.vs...)); diff != "" {
				t.Errorf("Descendants(%q) (-want +got):\n%s", tt.vs, diff)
			}
		})
	}
}

func TestInduced(t *testing.T) {
	g := graphOf("a->b", "b->c", "a->c", "c->c", "d")
	sub := g.Induced(map[string]bool{"a": true, "c": true, "d": false, "missing": true})
	want := "a\n  c\nc\n  c\n"
	if got := sub.String(); got != want {
		t.Errorf("graph:\ngot:\n%s\nwant:\n%s", got, want)
	}
	if got := g.String(); got != "a\n  b\n  c\nb\n  c\nc\n  c\nd\n" {
		t.Errorf("Induced modified the original graph:\n%s", got)
	}
	if got := g.Induced(nil).Len(); got != 0 {
		t.Errorf("Induced(nil).Len() = %d, want 0", got)
	}
}

func TestGraphDeterministic(t *testing.T) {
	specs := []string{"a->b", "b->c", "c->a", "c->d", "d->e", "x", "e->e", "b->d"}
	want := graphOf(specs...)
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		got := shuffled(r, specs...)
		if got.String() != want.String() {
			t.Fatalf("String depends on insertion order:\ngot:\n%s\nwant:\n%s", got, want)
		}
		if diff := cmp.Diff(want.Edges(), got.Edges()); diff != "" {
			t.Fatalf("Edges depend on insertion order (-want +got):\n%s", diff)
		}
	}
}

func TestAncestorsDeepChain(t *testing.T) {
	const n = 100_000
	var g Graph
	for i := 1; i < n; i++ {
		g.Connect(fmt.Sprint(i-1), fmt.Sprint(i))
	}
	if got := len(g.Ancestors(fmt.Sprint(n - 1))); got != n-1 {
		t.Errorf("len(Ancestors(last)) = %d, want %d", got, n-1)
	}
	if got := len(g.Descendants("0")); got != n-1 {
		t.Errorf("len(Descendants(first)) = %d, want %d", got, n-1)
	}
}

// TestGrowKeepsGraph: Grow on an empty or a built graph changes nothing
// but room.
func TestGrowKeepsGraph(t *testing.T) {
	var g Graph
	g.Grow(3, 2)
	g.Connect("a", "b")
	g.Grow(10, 10)
	g.Connect("b", "c")
	g.Connect("a", "b") // duplicate: ignored
	if got, want := g.Upstream("c"), []string{"b"}; !slices.Equal(got, want) {
		t.Errorf("Upstream(c) = %v, want %v", got, want)
	}
	if got, want := g.Downstream("a"), []string{"b"}; !slices.Equal(got, want) {
		t.Errorf("Downstream(a) = %v, want %v", got, want)
	}
	if g.Len() != 3 {
		t.Errorf("Len = %d, want 3", g.Len())
	}
}
