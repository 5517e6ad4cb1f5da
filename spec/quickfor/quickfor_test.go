package quickfor

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/spec/funcs"
)

// forContext is the context the for expressions below are evaluated
// in: a few variables of each kind, some marked, some unknown.
func forContext() *hcl.EvalContext {
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
		Functions: funcs.Std(),
	}
}

// checkQuickFor evaluates src as written and with its for expressions
// given to quickFor, and fails if the values or the diagnostics differ.
// It reports whether quickFor gave the value.
func checkQuickFor(t *testing.T, src string) bool {
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
	ctx := forContext()
	want, wantDiags := plain.Value(ctx)
	ran := false
	testHookQuickFor = func() { ran = true }
	defer func() { testHookQuickFor = nil }()
	got, gotDiags := Rewrite(parse()).Value(ctx)
	if !sameValue(got, want) {
		t.Errorf("%s:\nby quickFor %#v\nas written %#v", src, got, want)
	}
	msgs := hclMessages
	if diff := cmp.Diff(msgs(wantDiags), msgs(gotDiags)); diff != "" {
		// Some of HCL's messages differ from one evaluation to the
		// next (map order): compare only what HCL says alike twice.
		if _, again := parse().Value(ctx); !cmp.Equal(msgs(wantDiags), msgs(again)) {
			return ran
		}
		t.Errorf("%s: diagnostics differ (-as written +by quickFor):\n%s", src, diff)
	}
	return ran
}

// hclMessages is what the differential tests compare of HCL's
// diagnostics: HCL picks among equally close names for "Did you mean" by
// map order, and a function's panic comes with its stack, neither ours to
// compare.
func hclMessages(ds hcl.Diagnostics) []string {
	var out []string
	for _, d := range ds {
		msg, _, _ := strings.Cut(d.Error(), " Did you mean")
		msg, _, _ = strings.Cut(msg, "\n")
		out = append(out, msg)
	}
	return out
}

// sameValue is RawEquals, and numbers of the same precision: a number's
// precision decides what later arithmetic on it gives.
func sameValue(a, b cty.Value) bool {
	if !a.RawEquals(b) {
		return false
	}
	if !a.IsKnown() || a.IsNull() || a.IsMarked() {
		return true
	}
	switch t := a.Type(); {
	case t == cty.Number:
		return a.AsBigFloat().Prec() == b.AsBigFloat().Prec()
	case t.IsListType() || t.IsTupleType() || t.IsSetType() || t.IsMapType() || t.IsObjectType():
		as, bs := a.AsValueSlice(), b.AsValueSlice()
		if t.IsMapType() || t.IsObjectType() {
			as, bs = nil, nil
			for it := a.ElementIterator(); it.Next(); {
				_, v := it.Element()
				as = append(as, v)
			}
			for it := b.ElementIterator(); it.Next(); {
				_, v := it.Element()
				bs = append(bs, v)
			}
		}
		for i := range as {
			if !sameValue(as[i], bs[i]) {
				return false
			}
		}
	}
	return true
}

// TestQuickForMatchesHCL: whether or not quickFor takes a for expression,
// the value and the diagnostics are HCL's.
func TestQuickForMatchesHCL(t *testing.T) {
	for _, tt := range []struct {
		src   string
		quick bool // quickFor gives the value (else HCL evaluates it as written)
	}{
		{`[for i in range(100) : i * 2]`, false},
		{`[for i in range(100) : format("k%03d", i) if i % 3 == 0]`, true},
		{`[for i in range(100) : i if i > 1000]`, true},
		{`flatten([for a in range(20) : [for b in range(30) : "${a}-${b}"]])`, true},
		{`toset([for a in range(20) : tostring(a % 7)])`, true},
		{`[for v in var.nums : v + 1]`, false},
		{`[for v in toset(["b", "a", "c", "a", "d", "e", "f", "g", "h"]) : upper(v)]`, true},
		{`[for v in {a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8} : v * 10]`, false},
		{`[for v in var.inner : v]`, false},               // a marked element
		{`[for v in var.unknown : v]`, false},             // an unknown element
		{`{ x = [for i in range(40) : i] }`, false},       // numbers in the result, in an object
		{`true ? [for i in range(40) : i] : []`, false},   // and in a conditional
		{`[for v in var.secret : v]`, false},              // a marked collection
		{`[for v in var.later : v]`, false},               // an unknown collection
		{`[for i in range(5) : i]`, false},                // numbers in the result
		{`[for i, v in var.nums : i + v]`, false},         // a key variable: as written
		{`{for v in var.nums : tostring(v) => v}`, false}, // an object: as written
		{`[for v in var.nums : v if v == 30 ? null : true]`, false},
		{`[for v in var.nums : v if v == 30 ? "x" : true]`, false},
		{`[for v in var.unknown : v if v > 3]`, false},
		{`[for v in var.nums : tonumber("x${v}")]`, false},
		{`[for v in var.nums : v / (v - 25)]`, false}, // a division
		{`[for v in var.nums : nope(v)]`, false},
		{`[for v in var.words : v]`, false},
		{`[for v in split(" ", var.words) : upper(v)]`, true},
		{`[for v in null : v]`, false},
		{`[for v in [for w in range(12) : w] : v if v != 3]`, false},
	} {
		if ran := checkQuickFor(t, tt.src); ran != tt.quick {
			t.Errorf("%s: quickFor took it %v, want %v", tt.src, ran, tt.quick)
		}
	}
}

// hugeExponent matches a number HCL takes minutes to parse (1E-808000:
// big.Float's parsing, not ours).
var hugeExponent = regexp.MustCompile(`[eE][+-]?[0-9]{4,}`)

// FuzzQuickFor: for any expression, giving its for expressions to
// quickFor gives what HCL gives (the value, every diagnostic).
func FuzzQuickFor(f *testing.F) {
	for _, s := range []string{
		`[for i in range(100) : i * 2]`,
		`flatten([for a in range(20) : [for b in range(30) : "${a}-${b}"]])`,
		`[for v in var.nums : v if v == 30 ? null : true]`,
		`[for v in var.unknown : v if v > 3]`,
		`[for v in var.inner : upper(v)]`,
		`[for v in var.nums : tonumber("x${v}")]`,
		`[for i in range(-20, 20) : "n${i % 3}/${i * -2}/${-i}/${i - 7 >= 0 && i != 4}" if i % 5 != 1]`,
		`[for i in range(12) : format("%05d|%x|%v", i * 1000 + 3, i, i > 2 ? "a" : "b")]`,
		`[for v in var.nums : upper(format("%s-%d", tostring(v), v * v))]`,
		`[for a in [for b in var.nums : "k${b}"] : "${a}!" if a != "k3"]`,
		`[for i in range(-6, 6) : format("%05d|%3d|%d|%s|%%|%0d|%00d|%10d|%-4d|%x", i * 7, -i, i, "x${i}", i, i, i, i, i)]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// Keep the values small: nested ranges multiply.
		if len(src) > 300 || strings.Count(src, "range") > 1 || strings.Contains(src, "product") || strings.Contains(src, "file") || strings.Contains(src, "env") || hugeExponent.MatchString(src) {
			return
		}
		checkQuickFor(t, src)
	})
}

// TestQuickFor: the for expressions quickFor evaluates give HCL's value;
// the others are left to HCL, with the same outcome.
func TestQuickFor(t *testing.T) {
	for _, tt := range []struct {
		src   string
		quick bool // quickFor gives the value
	}{
		{`toset(flatten([for a in range(10) : [for b in range(100) : format("%06d", a * 100 + b) if a * 100 + b < 950]]))`, true},
		{`[for i in range(100) : format("k%03d", i) if i % 3 == 0]`, true},
		{`[for i in range(20) : "${i}-${i * 7 - 30}-${i % 4 == 1}"]`, true},
		{`[for i in range(20) : i >= 5 && !(i > 15) || i == 0 ? "in${i}" : "out"]`, true},
		{`[for i in range(-10, 10) : "n${i % 3}/${i % -4}/${-i}"]`, false},
		{`[for i in range(1, 20) : "n${i * -1}"]`, true},
		{`[for i in range(0, 20) : "n${i * -1}"]`, false}, // 0 * -1 is -0 in cty
		{`[for i in range(12) : i * 2]`, false},           // numbers in the result
		{`[for i in range(12) : "${i * 2}"]`, false},      // "${x}" is x itself
		{`[for i in range(12) : "n${i * 1000000000000}"]`, true},
		{`[for i in range(12) : "n${i * 100000000000000000}"]`, false}, // over 2^53
		{`[for i in range(12) : "n${i / 2}"]`, false},
		{`[for f in [0.5, 1.5, 2, 3, 4, 5, 6, 7, 8] : "n${f}"]`, false},
		{`[for i in range(12) : format("%x %5d %-4d| %v %s %08.3f %e %t", i, i, i, i, tostring(i), i, i, i > 3)]`, true},
		{`[for s in split(",", "b,a,c,d,e,f,g,h,i") : upper(s) == "A" ? lower(s) : title(s)]`, true},
		{`[for s in toset(["b", "a", "b", "c", "d", "e", "f", "g", "h"]) : "${s}${length(s)}"]`, false}, // length of a string errs
		{`[for v in {a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8} : "n${v * 10}"]`, true},
		{`[for v in var.nums : "n${v + var.nums[1]}"]`, true},
		{`[for v in var.secret : "n${v}"]`, false},
		{`[for v in var.inner : v]`, false},         // the runs without the marked element
		{`[for v in var.unknown : "n${v}"]`, false}, // the runs before the unknown element
		{`[for i in range(12) : substr("abcdefghijklmnop", i, 3)]`, true},
		{`[for i in range(12) : replace("a-b-${i}", "-", "_")]`, true},
		{`[for i in range(12) : format("%d", i) if i]`, false}, // a number as the condition
		{`[for i in range(12) : "${true}${i < 3}"]`, true},
		{`[for i in range(12) : i == "1" ? "x" : "y"]`, false},
		{`[for a in [for b in range(12) : "k${b}"] : "${a}!"]`, true},
		{`[for i in range(12) : [for j in range(i) : "${i}.${j}"]]`, false}, // range is not quickFor's
		{`[for i in range(12) : [for j in range(3) : "${i}.${j}"]]`, true},
		{`[for i in range(12) : nope(i)]`, false},
		{`[for i in range(12) : format("%d", i, i)]`, false},
		{`[for i in range(-6, 6) : format("%05d|%3d|%d|%s|%%|%0d|%00d|%10d|%-4d|", i * 7, -i, i, "x${i}", i, i, i, i)]`, false}, // -i for 0
		{`[for i in range(12) : format("%06d%s", i)]`, false},
		{`[for i in range(12) : format("%[1]d", i)]`, true},
		{`[for i in range(12) : format("%d%", i)]`, false},
		{`[for i in range(12) : format("%s %s", i)]`, false},
		{`[for e in ["a\u0301", "b", "c", "d", "e", "f", "g", "h"] : "${e}\u0301x"]`, true},
		// A nested for's collection, made once when it names no for
		// variable in scope: naming one inside a for of its own, hiding
		// one behind a for variable of the same name, at two depths.
		{`[for a in ["p", "q", "r", "s", "t", "u", "v", "w"] : [for b in concat([for c in ["x", "y"] : "${c}${a}"]) : "${a}${b}"]]`, false},
		{`[for a in ["p", "q", "r", "s", "t", "u", "v", "w"] : [for b in concat([for a in ["x", "y"] : a]) : "${a}${b}"]]`, true},
		{`[for a in ["p", "q", "r", "s", "t", "u", "v", "w"] : [for b in ["x", "y"] : [for c in ["x", "y"] : "${a}${b}${c}"]]]`, true},
		{`[for a in ["p", "q", "r", "s", "t", "u", "v", "w"] : [for b in ["x", "y"] : [for c in split(",", "${b},${a}") : c]]]`, false},
		{`[for a in range(8) : [for b in ["x", "y", "z"] : "${a}${b}" if a % 2 == 0 || b != "x"]]`, true},
		{`[for a in range(8) : [for b in ["x", "y"] : a == 5 ? nope(b) : b]]`, false},
		{`[for a in range(8) : [for b in [for c in range(3) : "c${c}"] : [for d in var.nums : "${a}${b}${d}" if d < 2]]]`, true},
	} {
		if quick := checkQuickFor(t, tt.src); quick != tt.quick {
			t.Errorf("%s: quickFor took it %v, want %v", tt.src, quick, tt.quick)
		}
	}
}
