package spec

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// A sweep's phase is a handful of string templates ("echo ${each.key} >
// out/${each.key}") evaluated once per instance. HCL's template
// evaluation makes a buffer, a map of marks and a refinement for every
// one: a fifth of evaluating an instance. fastTemplate joins the parts
// itself when each is a known, unmarked, non-null string, number or bool
// evaluated without a diagnostic (a number or bool converted to a string
// as HCL converts it); anything else is evaluated again by HCL, so that
// unknown, marked or null parts and every message are HCL's own.

// fastTemplate is a string template joined without HCL's machinery when
// its parts are plain.
type fastTemplate struct {
	*hclsyntax.TemplateExpr
}

func (e fastTemplate) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var b strings.Builder
	for _, part := range e.Parts {
		if lit, ok := part.(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.String && lit.Val.IsKnown() && !lit.Val.IsNull() && !lit.Val.IsMarked() {
			b.WriteString(lit.Val.AsString())
			continue
		}
		v, diags := part.Value(ctx)
		if len(diags) > 0 || !v.IsKnown() || v.IsNull() || v.IsMarked() {
			return e.TemplateExpr.Value(ctx)
		}
		switch v.Type() {
		case cty.String:
		case cty.Number, cty.Bool:
			s, err := convert.Convert(v, cty.String)
			if err != nil || !s.IsKnown() || s.IsNull() || s.IsMarked() {
				return e.TemplateExpr.Value(ctx)
			}
			v = s
		default:
			return e.TemplateExpr.Value(ctx)
		}
		b.WriteString(v.AsString())
	}
	return cty.StringVal(b.String()), nil
}

// fastTemplateOf makes x a fastTemplate when it is a string template.
func fastTemplateOf(x hclsyntax.Expression) (hclsyntax.Expression, bool) {
	if e, ok := x.(*hclsyntax.TemplateExpr); ok {
		return fastTemplate{e}, true
	}
	return x, false
}
