package spec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// paramsByItem evaluates params written as an object, item by item,
// without making the object (a sweep's params cost a third of evaluating
// its instances that way). It gives up, and writes nothing, on anything
// but plain string keys and known, unmarked values evaluated without a
// diagnostic: evalParams then evaluates the object as written, for its
// exact messages. Keys given twice keep the last value, as in HCL.
func paramsByItem(p *Phase, cons *hclsyntax.ObjectConsExpr, ctx *hcl.EvalContext) bool {
	keys := make([]string, len(cons.Items))
	vals := make([]string, len(cons.Items))
	for i, item := range cons.Items {
		k, d := item.KeyExpr.Value(ctx)
		if len(d) > 0 || k.IsNull() || !k.IsKnown() || k.IsMarked() || k.Type() != cty.String {
			return false
		}
		v, d := item.ValueExpr.Value(ctx)
		if len(d) > 0 || !v.IsWhollyKnown() || v.ContainsMarked() {
			return false
		}
		js, err := canonicalJSON(v)
		if err != nil {
			return false
		}
		keys[i], vals[i] = k.AsString(), js
	}
	for i, k := range keys {
		p.Params[k] = vals[i]
	}
	return true
}
