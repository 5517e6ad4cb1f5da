package dag

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// drive runs p to the end in waves: it takes everything Ready returns and
// marks each vertex done, failing those in fail. It logs each step as
// "ready a b", "ok a" or "fail a, skip c d", and checks Pending and
// Finished on the way.
func drive(t *testing.T, p *Plan, fail map[string]bool) []string {
	t.Helper()
	var log []string
	for {
		ready := p.Ready()
		if len(ready) == 0 {
			break
		}
		log = append(log, "ready "+strings.Join(ready, " "))
		for _, v := range ready {
			before := p.Pending()
			skipped := p.Done(v, !fail[v])
			if got, want := p.Pending(), before-1-len(skipped); got != want {
				t.Fatalf("after Done(%q): Pending() = %d, want %d", v, got, want)
			}
			switch {
			case !fail[v]:
				log = append(log, "ok "+v)
			case len(skipped) == 0:
				log = append(log, "fail "+v)
			default:
				log = append(log, "fail "+v+", skip "+strings.Join(skipped, " "))
			}
		}
	}
	if !p.Finished() || p.Pending() != 0 {
		t.Fatalf("no vertex ready but Finished() = %v, Pending() = %d", p.Finished(), p.Pending())
	}
	return log
}

func TestPlan(t *testing.T) {
	// A diamond a -> {b, c} -> d -> e beside an independent branch x -> y.
	diamond := []string{"a->b", "a->c", "b->d", "c->d", "d->e", "x->y"}
	tests := map[string]struct {
		specs   []string
		include []string // nil: all
		fail    []string
		want    []string
	}{
		"empty": {},
		"all succeed": {
			specs: diamond,
			want: []string{
				"ready a x", "ok a", "ok x",
				"ready b c y", "ok b", "ok c", "ok y",
				"ready d", "ok d",
				"ready e", "ok e",
			},
		},
		"failure skips the diamond's dependents, the other branch continues": {
			specs: diamond,
			fail:  []string{"b"},
			want: []string{
				"ready a x", "ok a", "ok x",
				"ready b c y", "fail b, skip d e", "ok c", "ok y",
			},
		},
		"failing a root skips everything below it": {
			specs: diamond,
			fail:  []string{"a"},
			want: []string{
				"ready a x", "fail a, skip b c d e", "ok x",
				"ready y", "ok y",
			},
		},
		"failing a leaf skips nothing": {
			specs: diamond,
			fail:  []string{"e", "y"},
			want: []string{
				"ready a x", "ok a", "ok x",
				"ready b c y", "ok b", "ok c", "fail y",
				"ready d", "ok d",
				"ready e", "fail e",
			},
		},
		"two failures skip each dependent once": {
			specs: diamond,
			fail:  []string{"b", "c"},
			want: []string{
				"ready a x", "ok a", "ok x",
				"ready b c y", "fail b, skip d e", "fail c", "ok y",
			},
		},
		"include a subset": {
			specs:   diamond,
			include: []string{"c", "d", "y"},
			want: []string{
				"ready c y", "ok c", "ok y",
				"ready d", "ok d",
			},
		},
		"excluded vertices count as satisfied, so failures do not skip through them": {
			specs:   diamond,
			include: []string{"a", "b", "e"},
			fail:    []string{"a"},
			// e's only upstream, d, is excluded: e is ready at once and
			// is not skipped when a fails.
			want: []string{"ready a e", "fail a, skip b", "ok e"},
		},
		"include names outside the graph": {
			specs:   []string{"a->b"},
			include: []string{"b", "nope"},
			want:    []string{"ready b", "ok b"},
		},
		"include nothing": {
			specs:   diamond,
			include: []string{},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var include map[string]bool
			if tt.include != nil {
				include = map[string]bool{}
				for _, v := range tt.include {
					include[v] = true
				}
			}
			fail := map[string]bool{}
			for _, v := range tt.fail {
				fail[v] = true
			}
			got := drive(t, NewPlan(graphOf(tt.specs...), include), fail)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan log (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanIncremental(t *testing.T) {
	// Vertices become ready as soon as their last upstream is done, while
	// others are still running.
	p := NewPlan(graphOf("a->c", "b->c", "c->d", "a->e"), nil)
	if got, want := p.Pending(), 5; got != want {
		t.Fatalf("Pending() = %d, want %d", got, want)
	}
	step := func(want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, p.Ready()); diff != "" {
			t.Fatalf("Ready() (-want +got):\n%s", diff)
		}
	}
	step("a", "b")
	step() // each vertex is returned once
	p.Done("a", true)
	step("e")
	p.Done("b", true)
	p.Done("e", true)
	step("c")
	if p.Finished() {
		t.Fatal("Finished() = true with c running")
	}
	if got := p.Done("c", false); !cmp.Equal(got, []string{"d"}) {
		t.Fatalf("Done(c, false) = %q, want [d]", got)
	}
	step()
	if !p.Finished() {
		t.Fatalf("Finished() = false, Pending() = %d", p.Pending())
	}
}

func TestPlanCycleNeverFinishes(t *testing.T) {
	p := NewPlan(graphOf("a->b", "b->c", "c->b", "x"), nil)
	drained := 0
	for r := p.Ready(); len(r) > 0; r = p.Ready() {
		for _, v := range r {
			p.Done(v, true)
			drained++
		}
	}
	if drained != 2 || p.Finished() || p.Pending() != 2 {
		t.Errorf("ran %d, Finished() = %v, Pending() = %d; want 2, false, 2", drained, p.Finished(), p.Pending())
	}
}

func TestPlanDonePanics(t *testing.T) {
	tests := map[string]struct {
		setup func(p *Plan)
		v     string
		want  string
	}{
		"unknown vertex": {
			v: "nope", want: `dag: Plan.Done("nope"): not a vertex of the graph`,
		},
		"ready but not yet returned": {
			v: "a", want: `dag: Plan.Done("a"): vertex is ready but was not yet returned by Ready`,
		},
		"still waiting": {
			v: "b", want: `dag: Plan.Done("b"): vertex was never returned by Ready`,
		},
		"twice": {
			setup: func(p *Plan) { p.Ready(); p.Done("a", true) },
			v:     "a", want: `dag: Plan.Done("a"): vertex already done`,
		},
		"skipped": {
			setup: func(p *Plan) { p.Ready(); p.Done("a", false) },
			v:     "b", want: `dag: Plan.Done("b"): vertex was skipped because an upstream vertex failed`,
		},
		"not included": {
			v: "z", want: `dag: Plan.Done("z"): vertex is not included in the plan`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := NewPlan(graphOf("a->b", "z"), map[string]bool{"a": true, "b": true})
			if tt.setup != nil {
				tt.setup(p)
			}
			defer func() {
				if got := fmt.Sprint(recover()); got != tt.want {
					t.Errorf("panic = %q, want %q", got, tt.want)
				}
			}()
			p.Done(tt.v, true)
		})
	}
}

func BenchmarkPlan100k(b *testing.B) {
	g := layeredGraph(100, 1000, 3)
	b.ReportAllocs()
	for b.Loop() {
		p := NewPlan(g, nil)
		for r := p.Ready(); len(r) > 0; r = p.Ready() {
			for _, v := range r {
				p.Done(v, true)
			}
		}
		if !p.Finished() {
			b.Fatal("plan did not finish")
		}
	}
}
