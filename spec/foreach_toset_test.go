package spec

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestForEachTosetShortcut: for_each = toset(X) gives the instances that
// for_each = tolist(toset(X)) gives (the same keys, each once, in order,
// and each.value the key), whether X takes toSetOfStrings' shortcut (a
// list or tuple of known strings) or is evaluated as written; and where
// X is refused, both refuse it.
func TestForEachTosetShortcut(t *testing.T) {
	tests := []struct {
		name, x string
		short   bool // toSetOfStrings takes it
		wantErr bool
	}{
		{"tuple of strings with duplicates", `["b", "a", "b", "c"]`, true, false},
		{"for expression", `[for i in range(5) : format("k%d", i % 3)]`, true, false},
		{"flatten of nested fors", `flatten([for a in range(3) : [for b in range(2) : "${a}-${b}"]])`, true, false},
		{"flatten of strings, lists and sets", `flatten(["b", ["a", ["c", "b"]], toset(["d", "a"]), []])`, true, false},
		{"flatten of a list variable", `flatten([var.names, ["n0"]])`, true, false},
		{"flatten of a set", `flatten(toset(["y", "x"]))`, true, false},
		{"flatten with a number", `flatten([["a"], [1]])`, false, false},
		{"flatten with a null list", `flatten([["a"], tolist(null)])`, false, true},
		{"flatten of a string", `flatten("a")`, false, true},
		{"flatten with a map", `flatten([["a"], {b = "c"}])`, false, true},
		{"list variable", `var.names`, true, false},
		{"empty tuple", `[]`, true, false},
		{"numbers", `[3, 1, 3]`, false, false},
		{"strings and numbers", `["a", 1]`, false, false},
		{"already a set", `toset(["x", "y"])`, false, false},
		{"a null element", `["a", null]`, false, true},
		{"a map", `{a = "1"}`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := func(forEach string) []byte {
				return fmt.Appendf(nil, `variable "names" {
  default = ["n2", "n1", "n2"]
}

phase "cell" {
  for_each = %s
  command  = "echo ${each.value} > out/${each.key}"
  outputs  = { o = "out/${each.key}" }
}
`, forEach)
			}
			shortcuts := 0
			testHookTosetShortcut = func() { shortcuts++ }
			got, gotDiags := load(t, "toset.hcl", spec("toset("+tt.x+")"), Options{})
			testHookTosetShortcut = nil
			if took := shortcuts > 0; took != tt.short {
				t.Errorf("toSetOfStrings took toset(%s): %v, want %v", tt.x, took, tt.short)
			}
			want, wantDiags := load(t, "tolist.hcl", spec("tolist(toset("+tt.x+"))"), Options{})
			if tt.wantErr {
				if !gotDiags.HasErrors() || !wantDiags.HasErrors() {
					t.Fatalf("want errors from both; got %v and %v", gotDiags, wantDiags)
				}
				return
			}
			if gotDiags.HasErrors() || wantDiags.HasErrors() {
				t.Fatalf("diagnostics: %v / %v", gotDiags, wantDiags)
			}
			instances := func(s *Spec) [][2]string {
				var out [][2]string
				for _, p := range s.Phases {
					out = append(out, [2]string{p.Addr, p.Command[len(p.Command)-1]})
				}
				return out
			}
			if diff := cmp.Diff(instances(want), instances(got)); diff != "" {
				t.Errorf("instances differ (-tolist(toset(X)) +toset(X)):\n%s", diff)
			}
		})
	}
}
