package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// layoutCase is a graph to lay out: vertex names and edges.
type layoutCase struct {
	names []string
	edges [][2]string
}

func layoutCases() map[string]layoutCase {
	cases := map[string]layoutCase{
		"empty":  {},
		"single": {names: []string{"a"}},
		"no edges wrap into columns": {names: func() []string {
			var ns []string
			for i := range 30 {
				ns = append(ns, fmt.Sprintf("p%02d", i))
			}
			return ns
		}()},
		"diamond": {
			names: []string{"a", "b", "c", "d"},
			edges: [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}},
		},
		"sweep with long edges": {
			names: []string{"prepare", `train["a"]`, `train["b"]`, `train["c"]`, `eval["a"]`, `eval["b"]`, `eval["c"]`, "report", "plot", "lonely"},
			edges: [][2]string{
				{"prepare", `train["a"]`}, {"prepare", `train["b"]`}, {"prepare", `train["c"]`},
				{`train["a"]`, `eval["a"]`}, {`train["b"]`, `eval["b"]`}, {`train["c"]`, `eval["c"]`},
				{`eval["a"]`, "report"}, {`eval["b"]`, "report"}, {`eval["c"]`, "report"},
				{"prepare", "report"}, {"prepare", "plot"}, {"report", "plot"},
			},
		},
		"self edge and unknown vertex are ignored": {
			names: []string{"a", "b"},
			edges: [][2]string{{"a", "a"}, {"a", "b"}, {"b", "ghost"}},
		},
	}
	// Random DAGs: edges only from a lower to a higher index, so acyclic.
	r := rand.New(rand.NewPCG(1, 2))
	for k := range 20 {
		n := 2 + r.IntN(25)
		var c layoutCase
		for i := range n {
			name := fmt.Sprintf("v%02d", i)
			if r.IntN(3) == 0 {
				name = fmt.Sprintf(`g%d["%02d"]`, r.IntN(3), i)
			}
			c.names = append(c.names, name)
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				if r.IntN(5) == 0 {
					c.edges = append(c.edges, [2]string{c.names[i], c.names[j]})
				}
			}
		}
		cases[fmt.Sprintf("random %d", k)] = c
	}
	return cases
}

func testLayout(c layoutCase) *diagram {
	size := func(n string) (int, int) { return 60 + 7*len(n), boxH }
	labelW := func(g string) int { return textW(groupLabel(g), smallSize) + 2*groupPadX + 8 }
	return layoutGraph(c.names, c.edges, groupFromAddr, size, labelW)
}

type rect struct{ x, y, w, h int }

func (a rect) overlaps(b rect) bool {
	return a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h
}

func (a rect) contains(b rect) bool {
	return a.x <= b.x && a.y <= b.y && b.x+b.w <= a.x+a.w && b.y+b.h <= a.y+a.h
}

func TestLayoutInvariants(t *testing.T) {
	for name, c := range layoutCases() {
		t.Run(name, func(t *testing.T) {
			d := testLayout(c)
			byID := map[string]box{}
			for _, b := range d.Boxes {
				byID[b.ID] = b
			}
			want := slices.Compact(slices.Sorted(slices.Values(c.names)))
			if got := slices.Sorted(func(yield func(string) bool) {
				for id := range byID {
					if !yield(id) {
						return
					}
				}
			}); !slices.Equal(got, want) {
				t.Fatalf("boxes %v, want one per vertex %v", got, want)
			}
			frame := rect{0, 0, d.W, d.H}
			for i, a := range d.Boxes {
				ra := rect{a.X, a.Y, a.W, a.H}
				if !frame.contains(ra) {
					t.Errorf("box %s %v lies outside the drawing %dx%d", a.ID, ra, d.W, d.H)
				}
				for _, b := range d.Boxes[i+1:] {
					if rb := (rect{b.X, b.Y, b.W, b.H}); ra.overlaps(rb) {
						t.Errorf("boxes %s %v and %s %v overlap", a.ID, ra, b.ID, rb)
					}
				}
				for _, g := range d.Groups {
					rg := rect{g.X, g.Y, g.W, g.H}
					member := g.Name == a.Group && g.Layer == a.Layer
					if member && !rg.contains(ra) {
						t.Errorf("box %s %v is outside its group frame %s %v", a.ID, ra, g.Name, rg)
					}
					if !member && rg.overlaps(ra) {
						t.Errorf("box %s %v overlaps the frame of group %s %v", a.ID, ra, g.Name, rg)
					}
				}
			}
			for i, g := range d.Groups {
				for _, h := range d.Groups[i+1:] {
					if (rect{g.X, g.Y, g.W, g.H}).overlaps(rect{h.X, h.Y, h.W, h.H}) {
						t.Errorf("group frames %s (layer %d) and %s (layer %d) overlap", g.Name, g.Layer, h.Name, h.Layer)
					}
				}
			}
			routes := map[[2]string]route{}
			for _, r := range d.Routes {
				routes[[2]string{r.From, r.To}] = r
			}
			for _, e := range c.edges {
				f, okf := byID[e[0]]
				to, okt := byID[e[1]]
				if !okf || !okt || e[0] == e[1] {
					continue
				}
				if f.Layer >= to.Layer {
					t.Errorf("edge %s -> %s goes from layer %d to layer %d", e[0], e[1], f.Layer, to.Layer)
				}
				r, ok := routes[e]
				if !ok {
					t.Errorf("edge %s -> %s has no route", e[0], e[1])
					continue
				}
				first, last := r.Points[0], r.Points[len(r.Points)-1]
				if first != (point{f.X + f.W, f.Y + f.H/2}) || last != (point{to.X, to.Y + to.H/2}) {
					t.Errorf("edge %s -> %s runs from %v to %v, want from the right side of %s to the left side of %s", e[0], e[1], first, last, e[0], e[1])
				}
				if want := 2 + 2*(to.Layer-f.Layer-1); len(r.Points) != want {
					t.Errorf("edge %s -> %s across %d layers has %d points, want %d", e[0], e[1], to.Layer-f.Layer, len(r.Points), want)
				}
				for k := 1; k < len(r.Points); k++ {
					if r.Points[k].X < r.Points[k-1].X {
						t.Errorf("edge %s -> %s runs backwards at %v", e[0], e[1], r.Points[k])
					}
				}
				// A long edge crosses a layer in a free slot: not through a box.
				for k := 1; k+1 < len(r.Points); k += 2 {
					in, out := r.Points[k], r.Points[k+1]
					seg := rect{in.X, in.Y, out.X - in.X, 1}
					for _, b := range d.Boxes {
						if seg.overlaps(rect{b.X, b.Y, b.W, b.H}) {
							t.Errorf("edge %s -> %s crosses box %s", e[0], e[1], b.ID)
						}
					}
				}
			}
			if len(routes) != len(d.Routes) {
				t.Errorf("%d routes for %d distinct edges", len(d.Routes), len(routes))
			}
		})
	}
}

// The layout depends on the graph, not on the order it is given in.
func TestLayoutDeterministic(t *testing.T) {
	for name, c := range layoutCases() {
		t.Run(name, func(t *testing.T) {
			want := testLayout(c)
			r := rand.New(rand.NewPCG(3, 4))
			shuffled := layoutCase{names: slices.Clone(c.names), edges: slices.Clone(c.edges)}
			r.Shuffle(len(shuffled.names), func(i, j int) { shuffled.names[i], shuffled.names[j] = shuffled.names[j], shuffled.names[i] })
			r.Shuffle(len(shuffled.edges), func(i, j int) { shuffled.edges[i], shuffled.edges[j] = shuffled.edges[j], shuffled.edges[i] })
			if diff := cmp.Diff(want, testLayout(shuffled)); diff != "" {
				t.Errorf("layout changed with input order (-first +shuffled):\n%s", diff)
			}
		})
	}
}

func TestLayoutLayers(t *testing.T) {
	c := layoutCases()["sweep with long edges"]
	d := testLayout(c)
	got := map[string]int{}
	for _, b := range d.Boxes {
		got[b.ID] = b.Layer
	}
	want := map[string]int{
		"prepare": 0, "lonely": 0,
		`train["a"]`: 1, `train["b"]`: 1, `train["c"]`: 1,
		`eval["a"]`: 2, `eval["b"]`: 2, `eval["c"]`: 2,
		"report": 3, "plot": 4,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layers (-want +got):\n%s", diff)
	}
	// The three train instances share one frame, as do the eval ones.
	var groups []string
	for _, g := range d.Groups {
		groups = append(groups, fmt.Sprintf("%s@%d", g.Name, g.Layer))
	}
	if diff := cmp.Diff([]string{"train@1", "eval@2"}, groups); diff != "" {
		t.Errorf("group frames (-want +got):\n%s", diff)
	}
	// Without crossings to avoid, instance a sits above b above c.
	ys := map[string]int{}
	for _, b := range d.Boxes {
		ys[b.ID] = b.Y
	}
	if !(ys[`train["a"]`] < ys[`train["b"]`] && ys[`train["b"]`] < ys[`train["c"]`]) {
		t.Errorf("train instances out of order: %v", ys)
	}
}

func TestCrossingsReduced(t *testing.T) {
	// Two chains given in an order that crosses: a1->b2, a2->b1. Names
	// alone would place a1 over a2 and b1 over b2, crossing once.
	c := layoutCase{
		names: []string{"a1", "a2", "b1", "b2"},
		edges: [][2]string{{"a1", "b2"}, {"a2", "b1"}},
	}
	d := testLayout(c)
	y := map[string]int{}
	for _, b := range d.Boxes {
		y[b.ID] = b.Y
	}
	if (y["a1"] < y["a2"]) != (y["b2"] < y["b1"]) {
		t.Errorf("edges cross: positions %v", y)
	}
}
