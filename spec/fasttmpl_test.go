package spec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/spec/funcs"
)

// fastTemplateContext is the context the templates below are evaluated
// in: values of every kind a part may have.
func fastTemplateContext() *hcl.EvalContext {
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("k1"), "value": cty.StringVal("cafe\u0301")}),
			"var": cty.ObjectVal(map[string]cty.Value{
				"n":       cty.NumberIntVal(42),
				"f":       cty.NumberFloatVal(0.1),
				"big":     cty.MustParseNumberVal("123456789012345678901234567890.5"),
				"b":       cty.True,
				"null":    cty.NullVal(cty.String),
				"unknown": cty.UnknownVal(cty.String),
				"secret":  cty.StringVal("hunter2").Mark("sensitive"),
				"list":    cty.ListVal([]cty.Value{cty.StringVal("a")}),
				"obj":     cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x")}),
				"dyn":     cty.DynamicVal,
			}),
		},
		Functions: funcs.Std(),
	}
}

// checkFastTemplates evaluates src as written and with fastTemplates, and
// fails if the values or the diagnostics differ.
func checkFastTemplates(t *testing.T, src string) {
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
		return
	}
	ctx := fastTemplateContext()
	want, wantDiags := plain.Value(ctx)
	got, gotDiags := rewriteExprs(parse(), fastTemplateOf).Value(ctx)
	if !got.RawEquals(want) {
		t.Errorf("%s:\nfast       %#v\nas written %#v", src, got, want)
	}
	msgs := hclMessages
	if diff := cmp.Diff(msgs(wantDiags), msgs(gotDiags)); diff != "" {
		// Some of HCL's messages differ from one evaluation to the
		// next (map order): compare only what HCL says alike twice.
		if _, again := parse().Value(ctx); !cmp.Equal(msgs(wantDiags), msgs(again)) {
			return
		}
		t.Errorf("%s: diagnostics differ (-as written +fast):\n%s", src, diff)
	}
}

func TestFastTemplate(t *testing.T) {
	for _, src := range []string{
		`"echo ${each.key} > out/cell-${each.key}"`,
		`"${each.value}"`, // a lone interpolation is the value itself
		`"x${each.value}y"`,
		`"n=${var.n} f=${var.f} big=${var.big} b=${var.b}"`,
		`"null: ${var.null}"`,
		`"unknown: ${var.unknown} and ${each.key}"`,
		`"secret: ${var.secret}"`,
		`"list: ${var.list}"`,
		`"obj: ${var.obj}"`,
		`"dyn: ${var.dyn}"`,
		`"missing: ${var.nope}"`,
		`"call: ${upper(each.key)} ${format("%05d", var.n)}"`,
		`"%{ if var.b }yes%{ else }no%{ endif } ${each.key}"`,
		`"%{ for x in var.list }${x},%{ endfor }"`,
		`["a-${each.key}", "b-${var.n}", { o = "c-${each.key}" }]`,
		`{ seed = each.key, path = "out/${each.key}" }`,
		`var.b ? "t-${each.key}" : "f-${each.key}"`,
		`upper("u-${each.key}")`,
		`("p-${each.key}")`,
		`"plain"`,
		`""`,
		`"${""}"`,
		`"a\u0301 ${each.value}"`, // joined text is normalised, as HCL's is
	} {
		checkFastTemplates(t, src)
	}
}

// FuzzFastTemplate: for any expression, its templates evaluated fast give
// what HCL gives (the value, every diagnostic).
func FuzzFastTemplate(f *testing.F) {
	for _, s := range []string{
		`"echo ${each.key} > out/cell-${each.key}"`,
		`"n=${var.n} f=${var.f} b=${var.b} ${var.null}"`,
		`"${var.secret}-${var.unknown}"`,
		`["a-${each.key}", { o = "c-${var.big}" }]`,
		`"%{ if var.b }yes%{ endif }${var.list}"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 300 || strings.Contains(src, "range") || strings.Contains(src, "file") || strings.Contains(src, "env") || hugeExponent.MatchString(src) {
			return
		}
		checkFastTemplates(t, src)
	})
}
