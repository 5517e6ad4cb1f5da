package spec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/internal/cores"
)

// parForContext is the context the for expressions below are evaluated
// in: a few variables of each kind, some marked, some unknown.
func parForContext() *hcl.EvalContext {
	var nums []cty.Value
	for i := range 50 {
		nums = append(nums, cty.NumberIntVal(int64(i)))
	}
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var": cty.ObjectVal(map[string]cty.Value{
				"nums":    cty.ListVal(nums),
				"secret":  cty.ListVal(nums).Mark("sensitive"),
				"inner":   cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b").Mark("sensitive"), cty.StringVal("c"), cty.StringVal("d"), cty.StringVal("e"), cty.StringVal("f"), cty.StringVal("g"), cty.StringVal("h"), cty.StringVal("i")}),
				"unknown": cty.ListVal(append(append([]cty.Value{}, nums[:20]...), cty.UnknownVal(cty.Number))),
				"later":   cty.UnknownVal(cty.List(cty.String)),
				"words":   cty.StringVal("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"),
			}),
		},
		Functions: functions(),
	}
}

// checkParallelFor evaluates src as written and with its for expressions
// in runs, and fails if the values or the diagnostics differ. It reports
// whether the runs gave the value.
func checkParallelFor(t *testing.T, src string) bool {
	t.Helper()
	parse := func() hclsyntax.Expression {
		e, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			return nil
		}
		return e
	}
	plain := parse()
	if plain == nil {
		return false
	}
	ctx := parForContext()
	want, wantDiags := plain.Value(ctx)
	defer func(old int) { cores.N = old }(cores.N)
	cores.N = 3
	ran := false
	testHookParallelFor = func(int) { ran = true }
	defer func() { testHookParallelFor = nil }()
	got, gotDiags := withParallelFors(parse()).Value(ctx)
	if !got.RawEquals(want) {
		t.Errorf("%s:\nin runs  %#v\nas written %#v", src, got, want)
	}
	msgs := func(ds hcl.Diagnostics) []string {
		var out []string
		for _, d := range ds {
			// HCL picks among equally close names for "Did you mean"
			// by map order, and a function's panic comes with its
			// stack: not ours to compare.
			msg, _, _ := strings.Cut(d.Error(), " Did you mean")
			msg, _, _ = strings.Cut(msg, "\n")
			out = append(out, msg)
		}
		return out
	}
	if diff := cmp.Diff(msgs(wantDiags), msgs(gotDiags)); diff != "" {
		// Some of HCL's messages differ from one evaluation to the
		// next (map order): compare only what HCL says alike twice.
		if _, again := parse().Value(ctx); !cmp.Equal(msgs(wantDiags), msgs(again)) {
			return ran
		}
		t.Errorf("%s: diagnostics differ (-as written +in runs):\n%s", src, diff)
	}
	return ran
}

func TestParallelFor(t *testing.T) {
	for _, tt := range []struct {
		src  string
		runs bool // the runs give the value (else it is evaluated as written)
	}{
		{`[for i in range(100) : i * 2]`, true},
		{`[for i in range(100) : format("k%03d", i) if i % 3 == 0]`, true},
		{`[for i in range(100) : i if i > 1000]`, true},
		{`flatten([for a in range(20) : [for b in range(30) : "${a}-${b}"]])`, true},
		{`toset([for a in range(20) : tostring(a % 7)])`, true},
		{`[for v in var.nums : v + 1]`, true},
		{`[for v in toset(["b", "a", "c", "a", "d", "e", "f", "g", "h"]) : upper(v)]`, true},
		{`[for v in {a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8} : v * 10]`, true},
		{`[for v in var.inner : v]`, true},                // a marked element stays marked in place
		{`[for v in var.unknown : v]`, true},              // unknown elements, known tuple
		{`{ x = [for i in range(40) : i] }`, true},        // inside an object
		{`true ? [for i in range(40) : i] : []`, true},    // inside a conditional
		{`[for v in var.secret : v]`, false},              // a marked collection
		{`[for v in var.later : v]`, false},               // an unknown collection
		{`[for i in range(5) : i]`, false},                // too few elements
		{`[for i, v in var.nums : i + v]`, false},         // a key variable: as written
		{`{for v in var.nums : tostring(v) => v}`, false}, // an object: as written
		{`[for v in var.nums : v if v == 30 ? null : true]`, false},
		{`[for v in var.nums : v if v == 30 ? "x" : true]`, false},
		{`[for v in var.unknown : v if v > 3]`, false},
		{`[for v in var.nums : tonumber("x${v}")]`, false},
		{`[for v in var.nums : v / (v - 25)]`, true}, // division by zero is a number here
		{`[for v in var.nums : nope(v)]`, false},
		{`[for v in var.words : v]`, false},
		{`[for v in split(" ", var.words) : upper(v)]`, true},
		{`[for v in null : v]`, false},
		{`[for v in [for w in range(12) : w] : v if v != 3]`, true},
	} {
		if ran := checkParallelFor(t, tt.src); ran != tt.runs {
			t.Errorf("%s: evaluated in runs %v, want %v", tt.src, ran, tt.runs)
		}
	}
}

// FuzzParallelFor: for any expression, evaluating its for expressions in
// runs gives what HCL gives (the value, every diagnostic).
func FuzzParallelFor(f *testing.F) {
	for _, s := range []string{
		`[for i in range(100) : i * 2]`,
		`flatten([for a in range(20) : [for b in range(30) : "${a}-${b}"]])`,
		`[for v in var.nums : v if v == 30 ? null : true]`,
		`[for v in var.unknown : v if v > 3]`,
		`[for v in var.inner : upper(v)]`,
		`[for v in var.nums : tonumber("x${v}")]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// Keep the values small: nested ranges multiply.
		if len(src) > 300 || strings.Count(src, "range") > 1 || strings.Contains(src, "product") || strings.Contains(src, "file") || strings.Contains(src, "env") {
			return
		}
		checkParallelFor(t, src)
	})
}
