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
	paths, diags := evalOutputRefs(p, e, ctx, outputRefs{
		attr: "metrics", notOutput: "Metrics file is not an output", duplicate: "Duplicate metrics file", hint: outputsHint,
	})
	p.Metrics = append(p.Metrics, paths...)
	return diags
}

// outputRefs words the diagnostics of an attribute naming outputs.
type outputRefs struct {
	attr                 string // "metrics", "temporary"
	notOutput, duplicate string // the summaries
	hint                 func(*Phase) string
}

// evalOutputRefs evaluates an attribute listing some of a phase's declared
// outputs, each by path or by name, and returns their paths, each once.
// A literal list's entries are each reported at their own range.
func evalOutputRefs(p *Phase, e hcl.Expression, ctx *hcl.EvalContext, w outputRefs) ([]string, hcl.Diagnostics) {
	type item struct {
		s   string
		rng hcl.Range
	}
	var items []item
	var diags hcl.Diagnostics
	if tup, ok := e.(*hclsyntax.TupleConsExpr); ok {
		for _, x := range tup.Exprs {
			s, d := evalString(x, ctx, w.attr+" entry")
			diags = append(diags, d...)
			if !d.HasErrors() {
				items = append(items, item{s, x.Range()})
			}
		}
	} else {
		list, d := evalStringList(e, ctx, w.attr)
		diags = append(diags, d...)
		for _, s := range list {
			items = append(items, item{s, e.Range()})
		}
	}
	var paths []string
	seen := map[string]bool{}
	for _, it := range items {
		path, ok := metricsOutput(p, it.s)
		switch {
		case !ok:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  w.notOutput,
				Detail:   fmt.Sprintf("Phase %s: %s entry %q is neither the path nor the name of one of its outputs. %s", p.Addr, w.attr, it.s, w.hint(p)),
				Subject:  it.rng.Ptr(),
			})
		case seen[path]:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  w.duplicate,
				Detail:   fmt.Sprintf("Phase %s: %s names output %q twice; list it once.", p.Addr, w.attr, path),
				Subject:  it.rng.Ptr(),
			})
		default:
			seen[path] = true
			paths = append(paths, path)
		}
	}
	return paths, diags
}

// metricsOutput finds the declared output an entry of metrics or
// temporary names: by path first, then by output name.
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
