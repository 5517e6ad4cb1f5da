package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/spec/funcs"
)

// paramsContext is the context the params below are evaluated
// in: values of every kind a param may have.
func paramsContext() *hcl.EvalContext {
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

// TestParamsByItem: params written as an object give, item by item, the
// params and diagnostics that evaluating the object gives.
func TestParamsByItem(t *testing.T) {
	for _, src := range []string{
		`{ seed = each.key, lr = 0.5, n = var.n, on = var.b }`,
		`{ a = 1, a = 2 }`, // the last wins
		`{ "quoted key" = "v", (each.key) = "dynamic key" }`,
		`{ list = [1, 2], obj = { x = "y" }, null = null }`,
		`{ big = var.big, f = var.f }`,
		`{ s = var.secret }`,
		`{ u = var.unknown }`,
		`{ (var.n) = "numeric key" }`,
		`{ (var.null) = "null key" }`,
		`{ (var.unknown) = "unknown key" }`,
		`{ d = var.dyn }`,
		`{ m = var.nope }`,
		`{}`,
	} {
		expr, diags := hclsyntax.ParseExpression([]byte(src), "p.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", src, diags)
		}
		ctx := paramsContext()
		fast := &Phase{Params: map[string]string{}}
		fastDiags := evalParams(fast, expr, ctx)
		slow := &Phase{Params: map[string]string{}}
		// Parentheses hide the object from the item-by-item path.
		slowDiags := evalParams(slow, &hclsyntax.ParenthesesExpr{Expression: expr.(*hclsyntax.ObjectConsExpr), SrcRange: expr.Range()}, ctx)
		if diff := cmp.Diff(slow.Params, fast.Params); diff != "" {
			t.Errorf("%s: params (-object +by item):\n%s", src, diff)
		}
		msgs := func(ds hcl.Diagnostics) []string {
			var out []string
			for _, d := range ds {
				out = append(out, d.Error())
			}
			return out
		}
		if diff := cmp.Diff(msgs(slowDiags), msgs(fastDiags)); diff != "" {
			t.Errorf("%s: diagnostics (-object +by item):\n%s", src, diff)
		}
	}
}
