package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

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
		ctx := fastTemplateContext()
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
