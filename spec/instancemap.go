package spec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// instanceMapRefs reports rp's references that read an attribute of a
// phase with for_each as if it were one phase (phase.sort.outputs.bam):
// phase.NAME of such a phase is a map of its instances, whose only
// attributes are its keys. HCL would say only that the object has no
// attribute "outputs", once for every instance of rp; this says what
// phase.NAME is and how to write the reference, once, at the reference.
// Upstream phases are evaluated already, so their keys are known.
func instanceMapRefs(rp *rawPhase, raws map[string]*rawPhase, values map[string]cty.Value, instances map[string][]*Phase) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, r := range append(append([]phaseRef(nil), rp.forEachRefs...), rp.refs...) {
		up := raws[r.phase]
		if r.attr == "" || up == nil || up.forEach == nil || !values[r.phase].IsKnown() {
			continue
		}
		insts := instances[r.phase]
		i := sort.Search(len(insts), func(i int) bool { return insts[i].Key >= r.attr })
		if i < len(insts) && insts[i].Key == r.attr {
			continue // phase.NAME.KEY: the instance KEY
		}
		diags = append(diags, instanceMapRef(rp, r, insts))
	}
	return diags
}

func instanceMapRef(rp *rawPhase, r phaseRef, insts []*Phase) *hcl.Diagnostic {
	keys := make([]string, 0, 4)
	for _, p := range insts[:min(3, len(insts))] {
		keys = append(keys, strconv.Quote(p.Key))
	}
	if len(insts) > 3 {
		keys = append(keys, "...")
	}
	example := "KEY"
	if len(insts) > 0 {
		example = insts[0].Key
	}
	rest := "." + r.attr + r.after
	var b strings.Builder
	fmt.Fprintf(&b, "phase.%s has for_each, so phase.%s is a map of its instances keyed by the for_each keys", r.phase, r.phase)
	if len(keys) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(keys, ", "))
	}
	fmt.Fprintf(&b, ", not one phase: it has no attribute %q. Name one instance, as phase.%s[%q]%s, or all of them, as [for s in phase.%s : s%s].", r.attr, r.phase, example, rest, r.phase, rest)
	if rp.eachPhase == r.phase {
		fmt.Fprintf(&b, " Here, with for_each = phase.%s, each.value%s reads the instance of the same key.", r.phase, rest)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Reference to %q of a phase with for_each", r.attr),
		Detail:   b.String(),
		Subject:  r.rng.Ptr(),
	}
}

// traversalText writes out a relative traversal as it is written in HCL
// (.outputs.bam, ["key"], [0]).
func traversalText(tr hcl.Traversal) string {
	var b strings.Builder
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull() {
				b.WriteString("[" + strconv.Quote(s.Key.AsString()) + "]")
			} else {
				b.WriteString("[" + displayKey(s.Key) + "]")
			}
		case hcl.TraverseSplat:
			b.WriteString("[*]")
		}
	}
	return b.String()
}
