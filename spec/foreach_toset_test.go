package spec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
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
		{"flatten of deep nesting", `flatten([[[["d"]]], "c", [[], [["b", "a"]]], toset([["e"], ["a"]])])`, true, false},
		{"flatten with empty collections of other types", `flatten([tolist([]), toset([]), [], [[]], ["a"], var.none])`, true, false},
		{"flatten of nothing", `flatten([[], [[]], var.none])`, true, false},
		{"flatten of an empty set", `flatten(toset([]))`, true, false},
		{"flatten with duplicates across levels", `flatten([var.names, [var.names, "n1"], toset(var.names)])`, true, false},
		{"flatten of strings equal once normalised", `flatten([["\u00e9"], ["e\u0301", "x"]])`, true, false},
		{"flatten with numbers in a set", `flatten([toset([2, 1]), ["1", "a"]])`, false, false},
		{"flatten with a bool", `flatten([["true", "b"], [true]])`, false, false},
		{"flatten with a number string and a number", `flatten([["10", "9"], 10])`, false, false},
		{"flatten with a null element", `flatten([["a"], null])`, false, true},
		{"flatten with a null string", `flatten([["a", tostring(null)]])`, false, true},
		{"flatten with an object in a list", `flatten([["a"], [{b = "c"}]])`, false, true},
		{"flatten of a null", `flatten(null)`, false, true},
		{"flatten of an erroneous list", `flatten([["a"], var.nothere])`, false, true},
		{"flatten with a map variable", `flatten([var.names, var.m])`, false, true},
		{"flatten with a list of lists variable", `flatten(var.nested)`, true, false},
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
			shortcuts := 0
			testHookTosetShortcut = func() { shortcuts++ }
			got, gotDiags := load(t, "toset.hcl", tosetSpec("toset("+tt.x+")"), Options{})
			testHookTosetShortcut = nil
			if took := shortcuts > 0; took != tt.short {
				t.Errorf("toSetOfStrings took toset(%s): %v, want %v", tt.x, took, tt.short)
			}
			want, wantDiags := load(t, "tolist.hcl", tosetSpec("tolist(toset("+tt.x+"))"), Options{})
			// (toset(X)) is toset(X) as HCL evaluates it: the shortcut
			// only takes a call of toset itself. Its diagnostics are
			// the user's, but for their column.
			exactHook := 0
			testHookTosetShortcut = func() { exactHook++ }
			exact, exactDiags := load(t, "exact.hcl", tosetSpec("(toset("+tt.x+"))"), Options{})
			testHookTosetShortcut = nil
			if exactHook > 0 {
				t.Fatalf("toSetOfStrings took (toset(%s))", tt.x)
			}
			messages := func(ds hcl.Diagnostics) []string {
				var out []string
				for _, d := range ds {
					out = append(out, fmt.Sprintf("%d %s: %s", d.Severity, d.Summary, d.Detail))
				}
				return out
			}
			if diff := cmp.Diff(messages(exactDiags), messages(gotDiags)); diff != "" {
				t.Errorf("diagnostics differ (-(toset(X)) +toset(X)):\n%s", diff)
			}
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
					out = append(out, [2]string{p.Addr, strings.Join(p.Command, " ")})
				}
				return out
			}
			if diff := cmp.Diff(instances(want), instances(got)); diff != "" {
				t.Errorf("instances differ (-tolist(toset(X)) +toset(X)):\n%s", diff)
			}
			if diff := cmp.Diff(instances(exact), instances(got)); diff != "" {
				t.Errorf("instances differ (-(toset(X)) +toset(X)):\n%s", diff)
			}
		})
	}
}

// TestForEachTosetRandom: for_each = toset(X), for X made at random of
// strings (some equal once normalised), numbers, bools, nulls, maps and
// nested lists, tuples and sets, often flattened, gives the instances
// and the diagnostics that HCL's own toset(X) gives.
func TestForEachTosetRandom(t *testing.T) {
	leaves := []string{`"a"`, `"b"`, `"\u00e9"`, `"e\u0301"`, `"1"`, `1`, `true`, `"true"`, `null`,
		`tostring(null)`, `[]`, `tolist([])`, `toset([])`, `var.names`, `var.none`, `{k = "v"}`, `var.nested`}
	rng := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth == 0 || rng.IntN(3) == 0 {
			return leaves[rng.IntN(len(leaves))]
		}
		var parts []string
		for range rng.IntN(4) {
			parts = append(parts, gen(depth-1))
		}
		list := "[" + strings.Join(parts, ", ") + "]"
		switch rng.IntN(4) {
		case 0:
			return "toset(" + list + ")"
		case 1:
			return "tolist(" + list + ")"
		}
		return list
	}
	instances := func(s *Spec) []string {
		var out []string
		if s != nil {
			for _, p := range s.Phases {
				out = append(out, p.Addr+" "+strings.Join(p.Command, " "))
			}
		}
		return out
	}
	messages := func(ds hcl.Diagnostics) []string {
		var out []string
		for _, d := range ds {
			out = append(out, fmt.Sprintf("%d %s: %s", d.Severity, d.Summary, d.Detail))
		}
		return out
	}
	shortcuts := 0
	testHookTosetShortcut = func() { shortcuts++ }
	defer func() { testHookTosetShortcut = nil }()
	for range 600 {
		x := gen(3)
		if rng.IntN(3) > 0 {
			x = "flatten(" + x + ")"
		}
		got, gotDiags := load(t, "toset.hcl", tosetSpec("toset("+x+")"), Options{})
		want, wantDiags := load(t, "exact.hcl", tosetSpec("(toset("+x+"))"), Options{})
		if diff := cmp.Diff(messages(wantDiags), messages(gotDiags)); diff != "" {
			t.Errorf("toset(%s): diagnostics differ (-HCL +toset(X)):\n%s", x, diff)
		}
		if diff := cmp.Diff(instances(want), instances(got)); diff != "" {
			t.Errorf("toset(%s): instances differ (-HCL +toset(X)):\n%s", x, diff)
		}
	}
	// The shortcut must have been taken often enough to be tested.
	if shortcuts < 100 {
		t.Errorf("toSetOfStrings took %d of 600 random sets, want 100 or more", shortcuts)
	}
}

// tosetSpec is the spec of the toset tests: a sweep over forEach, with
// variables of every shape they name.
func tosetSpec(forEach string) []byte {
	return fmt.Appendf(nil, `variable "names" {
  default = ["n2", "n1", "n2"]
}

variable "none" {
  type    = list(number)
  default = []
}

variable "m" {
  default = { k = "v" }
}

variable "nested" {
  type    = list(list(string))
  default = [["b", "a"], [], ["a", "c"]]
}

phase "cell" {
  for_each = %s
  command  = "echo ${each.value} > out/${each.key}"
  outputs  = { o = "out/${each.key}" }
}
`, forEach)
}
