package dag

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCycles(t *testing.T) {
	tests := map[string]struct {
		specs   []string
		want    [][]string
		wantErr string
	}{
		"acyclic": {
			specs: []string{"a->b", "b->c", "a->c"},
		},
		"three-cycle": {
			specs:   []string{"b->c", "c->a", "a->b", "c->d"},
			want:    [][]string{{"a", "b", "c"}},
			wantErr: "dependency cycle: a -> b -> c -> a",
		},
		"two separate cycles": {
			specs:   []string{"y->x", "x->y", "b->a", "a->b", "b->x"},
			want:    [][]string{{"a", "b"}, {"x", "y"}},
			wantErr: "dependency cycle: a -> b -> a; dependency cycle: x -> y -> x",
		},
		"self-edge": {
			specs:   []string{"a->a", "a->b"},
			want:    [][]string{{"a"}},
			wantErr: "dependency cycle: a -> a",
		},
		"self-edge inside a larger cycle": {
			specs:   []string{"a->b", "b->a", "b->b"},
			want:    [][]string{{"a", "b"}, {"b"}},
			wantErr: "dependency cycle: a -> b -> a; dependency cycle: b -> b",
		},
		"shortest cycle through the smallest vertex": {
			// a -> b -> c -> d -> a and the shortcut b -> d.
			specs:   []string{"a->b", "b->c", "c->d", "d->a", "b->d"},
			want:    [][]string{{"a", "b", "d"}},
			wantErr: "dependency cycle: a -> b -> d -> a",
		},
		"ties broken by name": {
			specs:   []string{"a->c", "a->b", "c->a", "b->a"},
			want:    [][]string{{"a", "b"}},
			wantErr: "dependency cycle: a -> b -> a",
		},
		"rotated to the smallest vertex": {
			specs:   []string{"m->z", "z->b", "b->m"},
			want:    [][]string{{"b", "m", "z"}},
			wantErr: "dependency cycle: b -> m -> z -> b",
		},
		"phase names": {
			specs:   []string{`harden["x"]->report`, `report->harden["x"]`},
			want:    [][]string{{`harden["x"]`, "report"}},
			wantErr: `dependency cycle: harden["x"] -> report -> harden["x"]`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 8))
			for range 10 {
				g := shuffled(r, tt.specs...)
				if diff := cmp.Diff(tt.want, g.Cycles()); diff != "" {
					t.Fatalf("Cycles (-want +got):\n%s", diff)
				}
				err := g.Validate()
				if tt.wantErr == "" {
					if err != nil {
						t.Fatalf("Validate: %v, want nil", err)
					}
					continue
				}
				var ce *CycleError
				if !errors.As(err, &ce) {
					t.Fatalf("Validate = %v, want *CycleError", err)
				}
				if got := err.Error(); got != tt.wantErr {
					t.Fatalf("Validate error:\ngot:  %s\nwant: %s", got, tt.wantErr)
				}
			}
		})
	}
}

func TestCyclesLongRing(t *testing.T) {
	const n = 100_000
	var g Graph
	for i := range n {
		g.Connect(fmt.Sprintf("v%06d", i), fmt.Sprintf("v%06d", (i+1)%n))
	}
	cs := g.Cycles()
	if len(cs) != 1 || len(cs[0]) != n || cs[0][0] != "v000000" || cs[0][n-1] != fmt.Sprintf("v%06d", n-1) {
		t.Errorf("Cycles on a ring of %d: got %d cycles, want one through every vertex", n, len(cs))
	}
}
