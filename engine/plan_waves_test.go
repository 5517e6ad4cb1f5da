package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/internal/cores"
)

// TestPlanWavesSideBySide: a plan decided side by side gives the decisions,
// in the same order, that one at a time gives, and every phase comes
// after the phases it reads.
func TestPlanWavesSideBySide(t *testing.T) {
	const n = 150
	files := map[string]string{"experiment.hcl": `
phase "a" {
  for_each = toset([for i in range(` + fmt.Sprint(n) + `) : tostring(i)])
  command  = "cp in/${each.key}.txt a-${each.key}.txt"
  inputs   = ["in/${each.key}.txt"]
  outputs  = ["a-${each.key}.txt"]
}
phase "b" {
  for_each = phase.a
  command  = "cp ${each.value.outputs[0]} b-${each.key}.txt"
  outputs  = ["b-${each.key}.txt"]
}
phase "all" {
  command = "write all.txt done"
  outputs = ["all.txt"]
  depends_on = [phase.b]
}
`}
	for i := range n {
		files[fmt.Sprintf("in/%d.txt", i)] = fmt.Sprintf("input %d\n", i)
	}
	s := newSetup(t, files)
	s.run(t, RunOptions{})
	for _, i := range []int{3, 40, 41, 149} { // these a instances and their b run
		if err := os.WriteFile(filepath.Join(s.dir, fmt.Sprintf("in/%d.txt", i)), []byte("edited\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a-7.txt", "b-8.txt", "b-40.txt"} { // restored, or run anyway
		if err := os.Remove(filepath.Join(s.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(procs int) *PlanResult {
		t.Helper()
		defer func(old int) { cores.N = old }(cores.N)
		cores.N = procs
		p, err := s.engine(t).Plan(PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	type row struct {
		Phase, Action, Key string
		Reasons            []string
	}
	rows := func(p *PlanResult) []row {
		var out []row
		for _, d := range p.Decisions {
			out = append(out, row{d.Phase, string(d.Action), d.Key, d.Reasons})
		}
		return out
	}
	one, many := plan(1), plan(4)
	if diff := cmp.Diff(rows(one), rows(many)); diff != "" {
		t.Errorf("side by side differs from one at a time (-one +many):\n%s", diff)
	}
	if one.Run != 9 || one.Restore != 2 || one.Cached != 2*n+1-11 {
		t.Errorf("run %d, restore %d, cached %d; want 9, 2, %d", one.Run, one.Restore, one.Cached, 2*n+1-11)
	}
	sp := s.engine(t).spec
	seen := map[string]bool{}
	for _, d := range many.Decisions {
		for _, up := range sp.Graph.Upstream(d.Phase) {
			if !seen[up] {
				t.Errorf("%s is planned before its upstream %s", d.Phase, up)
			}
		}
		seen[d.Phase] = true
	}
	if got := rows(many)[len(many.Decisions)-1]; got.Phase != "all" || got.Action != "run" {
		t.Errorf("last decision %+v, want all to run", got)
	}
}

// TestPlanWavesFirstError: when several phases cannot be decided, the plan
// fails with the error of the first of them in the plan's order, as
// deciding one at a time does, whatever wave each is in. Here b (after a,
// so in the second wave) comes before c (first wave) in the order, and
// both lack an input.
func TestPlanWavesFirstError(t *testing.T) {
	s := newSetup(t, map[string]string{
		"experiment.hcl": `
phase "a" {
  command = "write a.txt a"
  outputs = ["a.txt"]
}
phase "b" {
  command = "cp ${phase.a.outputs[0]} b.txt"
  inputs  = ["b.in"]
  outputs = ["b.txt"]
}
phase "c" {
  command = "cp c.in c.txt"
  inputs  = ["c.in"]
  outputs = ["c.txt"]
}
`,
		"b.in": "b\n",
		"c.in": "c\n",
	})
	s.run(t, RunOptions{})
	for _, f := range []string{"b.in", "c.in"} {
		if err := os.Remove(filepath.Join(s.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, procs := range []int{1, 4} {
		func() {
			defer func(old int) { cores.N = old }(cores.N)
			cores.N = procs
			_, err := s.engine(t).Plan(PlanOptions{})
			var mi *MissingInputError
			if !errors.As(err, &mi) || mi.Phase != "b" {
				t.Errorf("%d cores: plan error %v, want b's missing input (b comes before c)", procs, err)
			}
		}()
	}
}
