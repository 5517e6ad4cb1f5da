package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cairn-run/cairn/internal/cores"
)

// TestInstancesSideBySide: a sweep's instances evaluated side by side give
// the model and the diagnostics, in the same order, that one at a time
// gives; each instance keeps its own file() and env() reads; a phase
// reading the sweep's instances sees every one of them.
func TestInstancesSideBySide(t *testing.T) {
	dir := t.TempDir()
	for i := range 7 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("in%d.txt", i)), []byte(fmt.Sprintf("content %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const n = 700
	sweep := func(bad bool) []byte {
		out := `"out/${each.key}"`
		if bad { // every 97th instance writes outside the workspace
			out = `tonumber(each.key) % 97 == 5 ? "../${each.key}" : "out/${each.key}"`
		}
		return fmt.Appendf(nil, `
phase "cell" {
  for_each = toset([for i in range(%d) : tostring(i)])
  command  = "echo ${file("in${tonumber(each.key) %% 7}.txt")} > out/${each.key}"
  params   = { home = env("SWEEP_${tonumber(each.key) %% 5}") }
  outputs  = { o = %s }
}

phase "pick" {
  command = "cat ${phase.cell["42"].outputs.o} > out/pick"
  outputs = { o = "out/pick" }
}

phase "each_cell" {
  for_each = phase.cell
  command  = "cat ${each.value.outputs.o} > out/e-${each.key}"
  outputs  = { o = "out/e-${each.key}" }
}
`, n, out)
	}
	env := map[string]string{"SWEEP_0": "/home/sweep"}
	loadWith := func(procs int, src []byte) (*Spec, []string) {
		t.Helper()
		defer func(old int) { cores.N = old }(cores.N)
		cores.N = procs
		s, diags := NewParser().LoadBytes("sweep.hcl", src, dir, Options{LookupEnv: func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		}})
		var msgs []string
		for _, d := range diags {
			msgs = append(msgs, d.Error())
		}
		return s, msgs
	}

	one, oneDiags := loadWith(1, sweep(false))
	many, manyDiags := loadWith(4, sweep(false))
	if len(oneDiags) > 0 || len(manyDiags) > 0 {
		t.Fatalf("diagnostics: %v / %v", oneDiags, manyDiags)
	}
	if got, want := len(many.Phases), 2*n+1; got != want {
		t.Fatalf("%d phases, want %d", got, want)
	}
	opts := []cmp.Option{cmpopts.IgnoreUnexported(Spec{}, Phase{}), cmpopts.IgnoreFields(Spec{}, "Graph")}
	if diff := cmp.Diff(one, many, opts...); diff != "" {
		t.Errorf("side by side differs from one at a time (-one +many):\n%s", diff)
	}
	for _, k := range []int{0, 5, 13, 699} {
		p := many.Phase(fmt.Sprintf("cell[%q]", fmt.Sprint(k)))
		if p == nil {
			t.Fatalf("no instance %d", k)
		}
		if want := []string{fmt.Sprintf("in%d.txt", k%7)}; !cmp.Equal(p.Inputs, want) {
			t.Errorf("instance %d inputs %q, want %q", k, p.Inputs, want)
		}
		wantEnv := map[string]string{fmt.Sprintf("SWEEP_%d", k%5): "unset"}
		if k%5 == 0 {
			wantEnv = map[string]string{"SWEEP_0": "=/home/sweep"}
		}
		if !cmp.Equal(p.EnvRead, wantEnv) {
			t.Errorf("instance %d env reads %q, want %q", k, p.EnvRead, wantEnv)
		}
	}
	if ups := many.Phase("pick").Upstream; !cmp.Equal(ups, map[string][]string{`cell["42"]`: {"out/42"}}) {
		t.Errorf("pick reads %v", ups)
	}

	_, oneBad := loadWith(1, sweep(true))
	_, manyBad := loadWith(4, sweep(true))
	if len(oneBad) != (n+91)/97 {
		t.Errorf("%d diagnostics one at a time, want %d: %q", len(oneBad), (n+91)/97, oneBad)
	}
	if diff := cmp.Diff(oneBad, manyBad); diff != "" {
		t.Errorf("diagnostics differ (-one +many):\n%s", diff)
	}
}
