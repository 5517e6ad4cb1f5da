package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A phase names its own paths through self, as Terraform's provisioners
// do: self.outputs has the shape of phase.NAME.outputs (an object for
// outputs written as a map, a tuple for a list), self.inputs is the tuple
// of the declared inputs, cleaned as they are for the key and with globs
// left unexpanded, and self.name and self.key are the instance's address
// and for_each key. self is made from inputs and outputs, so those two
// and for_each cannot use it; every other attribute is evaluated after
// them and can. A path written through self evaluates to the same string
// as the path written out, so the phase's key is the same either way.

// usesSelf reports whether expr refers to self.
func usesSelf(expr hcl.Expression) bool {
	for _, tr := range expr.Variables() {
		if tr.RootName() == "self" {
			return true
		}
	}
	return false
}

// selfInPaths reports each use of self in a, an attribute evaluated
// before self exists.
func selfInPaths(a *hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range a.Expr.Variables() {
		if tr.RootName() != "self" {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf(`Reference to "self" in %s`, a.Name),
			Detail:   fmt.Sprintf("self.inputs and self.outputs are made from a phase's inputs and outputs, so %s cannot use self. Write the path here, and refer to it as self.outputs.NAME or self.inputs[i] in command, env, params and the other attributes.", a.Name),
			Subject:  tr.SourceRange().Ptr(),
		})
	}
	return diags
}

// selfValue is what self evaluates to in phase p, whose inputs and
// outputs (and nothing else yet) are evaluated.
func selfValue(p *Phase, rp *rawPhase) cty.Value {
	v := phaseValue(p, rp).AsValueMap()
	inputs := cty.EmptyTupleVal
	if len(p.Inputs) > 0 {
		vals := make([]cty.Value, len(p.Inputs))
		for i, in := range p.Inputs {
			vals[i] = cty.StringVal(in)
		}
		inputs = cty.TupleVal(vals)
	}
	v["inputs"] = inputs
	return cty.ObjectVal(v)
}
