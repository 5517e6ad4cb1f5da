package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// evalMetrics evaluates a phase's metrics attribute: a list of strings,
// each the path or the name of one of the phase's declared outputs. It
// must run after evalOutputs.
func evalMetrics(p *Phase, e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	type item struct {
		s   string
		rng hcl.Range
	}
	var items []item
	var diags hcl.Diagnostics
	if tup, ok := e.(*hclsyntax.TupleConsExpr); ok {
		for _, x := range tup.Exprs {
			s, d := evalString(x, ctx, "metrics entry")
			diags = append(diags, d...)
			if !d.HasErrors() {
				items = append(items, item{s, x.Range()})
			}
		}
	} else {
		list, d := evalStringList(e, ctx, "metrics")
		diags = append(diags, d...)
		for _, s := range list {
			items = append(items, item{s, e.Range()})
		}
	}
	seen := map[string]bool{}
	for _, it := range items {
		path, ok := metricsOutput(p, it.s)
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Metrics file is not an output",
				Detail:   fmt.Sprintf("Phase %s: metrics entry %q is neither the path nor the name of one of its outputs. %s", p.Addr, it.s, outputsHint(p)),
				Subject:  it.rng.Ptr(),
			})
			continue
		}
		if seen[path] {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate metrics file",
				Detail:   fmt.Sprintf("Phase %s: metrics names output %q twice; list it once.", p.Addr, path),
				Subject:  it.rng.Ptr(),
			})
			continue
		}
		seen[path] = true
		p.Metrics = append(p.Metrics, path)
	}
	return diags
}

// metricsOutput finds the declared output a metrics entry names: by path
// first, then by output name.
func metricsOutput(p *Phase, s string) (string, bool) {
	if s == "" {
		return "", false
	}
	clean := cleanRelPath(s)
	for _, o := range p.Outputs {
		if o.Path == clean {
			return o.Path, true
		}
	}
	for _, o := range p.Outputs {
		if o.Name == s {
			return o.Path, true
		}
	}
	return "", false
}

// outputsHint lists a phase's outputs for a metrics error.
func outputsHint(p *Phase) string {
	if len(p.Outputs) == 0 {
		return "The phase declares no outputs: a metrics file must be declared in outputs too, so that it is cached with the phase's result."
	}
	parts := make([]string, len(p.Outputs))
	for i, o := range p.Outputs {
		parts[i] = fmt.Sprintf("%s = %q", o.Name, o.Path)
	}
	return "Its outputs are: " + strings.Join(parts, ", ") + ". A metrics file must be one of them, so that it is cached with the phase's result."
}
