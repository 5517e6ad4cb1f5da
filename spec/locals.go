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
	attrs, diags := localAttrs(blocks)
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	deps, d := localDeps(attrs, names)
	diags = append(diags, d...)

	values := map[string]cty.Value{}
	done := map[string]bool{}
	for progress := true; progress && len(done) < len(names); {
		progress = false
		for _, name := range names {
			if done[name] || !allDone(deps[name], done) {
				continue
			}
			v, d := evalLocal(name, attrs[name], base, values)
			diags = append(diags, d...)
			values[name] = v
			done[name] = true
			progress = true
		}
	}
	if len(done) < len(names) {
		diags = append(diags, localLoop(attrs, names, done, values))
	}
	return values, diags
}

// localAttrs gathers the attributes of every locals block, by name.
func localAttrs(blocks []*hcl.Block) (map[string]*hcl.Attribute, hcl.Diagnostics) {
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
	return attrs, diags
}

// localDeps returns, for each local, the locals it refers to.
func localDeps(attrs map[string]*hcl.Attribute, names []string) (map[string][]string, hcl.Diagnostics) {
	var diags hcl.Diagnostics
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
	return deps, diags
}

func allDone(names []string, done map[string]bool) bool {
	for _, n := range names {
		if !done[n] {
			return false
		}
	}
	return true
}

// evalLocal evaluates local name, whose locals are all in values; on an
// error its value is unknown, so that its uses are not reported again.
func evalLocal(name string, a *hcl.Attribute, base scope, values map[string]cty.Value) (cty.Value, hcl.Diagnostics) {
	sc := base
	sc.locals = values
	v, diags := fastOnce(a.Expr).Value(sc.evalContext(nil))
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	if hd := hugeNumberDiag(v, "local."+name, a.Expr.Range().Ptr()); hd != nil {
		return cty.DynamicVal, append(diags, hd)
	}
	return v, diags
}

// localLoop is the error for the locals not done, which refer to each
// other in a loop; it gives them unknown values.
func localLoop(attrs map[string]*hcl.Attribute, names []string, done map[string]bool, values map[string]cty.Value) *hcl.Diagnostic {
	var loop []string
	for _, n := range names {
		if !done[n] {
			loop = append(loop, "local."+n)
			values[n] = cty.DynamicVal
		}
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Local values refer to each other in a loop",
		Detail:   fmt.Sprintf("These locals depend on each other and cannot be evaluated: %s.", strings.Join(loop, ", ")),
		Subject:  attrs[strings.TrimPrefix(loop[0], "local.")].NameRange.Ptr(),
	}
}
