package spec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// evalLocals evaluates every locals block. A local may refer to variables
// and to other locals in any order; locals that refer to each other in a
// loop are an error naming the loop's members.
func evalLocals(blocks []*hcl.Block, base scope) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	attrs := map[string]*hcl.Attribute{}
	for _, b := range blocks {
		as, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for name, a := range as {
			if prev, ok := attrs[name]; ok {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate local value",
					Detail:   fmt.Sprintf("Local %q was already defined at %s.", name, prev.NameRange),
					Subject:  a.NameRange.Ptr(),
				})
				continue
			}
			attrs[name] = a
		}
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)

	// deps[name] = the locals it refers to.
	deps := map[string][]string{}
	for _, name := range names {
		for _, tr := range attrs[name].Expr.Variables() {
			if tr.RootName() != "local" || len(tr) < 2 {
				continue
			}
			step, ok := tr[1].(hcl.TraverseAttr)
			if !ok {
				continue
			}
			if _, ok := attrs[step.Name]; !ok {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Reference to undeclared local value",
					Detail:   fmt.Sprintf("There is no local value named %q.%s", step.Name, didYouMean(step.Name, names)),
					Subject:  tr.SourceRange().Ptr(),
				})
				continue
			}
			deps[name] = append(deps[name], step.Name)
		}
	}

	values := map[string]cty.Value{}
	done := map[string]bool{}
	for progress := true; progress && len(done) < len(names); {
		progress = false
		for _, name := range names {
			if done[name] {
				continue
			}
			ready := true
			for _, d := range deps[name] {
				if !done[d] {
					ready = false
				}
			}
			if !ready {
				continue
			}
			sc := base
			sc.locals = values
			v, d := withParallelFors(attrs[name].Expr).Value(sc.evalContext(nil))
			diags = append(diags, d...)
			if d.HasErrors() {
				v = cty.DynamicVal
			} else if hd := hugeNumberDiag(v, "local."+name, attrs[name].Expr.Range().Ptr()); hd != nil {
				diags = append(diags, hd)
				v = cty.DynamicVal
			}
			values[name] = v
			done[name] = true
			progress = true
		}
	}
	if len(done) < len(names) {
		var loop []string
		for _, n := range names {
			if !done[n] {
				loop = append(loop, "local."+n)
			}
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Local values refer to each other in a loop",
			Detail:   fmt.Sprintf("These locals depend on each other and cannot be evaluated: %s.", strings.Join(loop, ", ")),
			Subject:  attrs[strings.TrimPrefix(loop[0], "local.")].NameRange.Ptr(),
		})
		for _, n := range names {
			if !done[n] {
				values[n] = cty.DynamicVal
			}
		}
	}
	return values, diags
}
