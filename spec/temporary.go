package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// evalTemporary evaluates a phase's temporary attribute: a list of
// strings, each the path or the name of one of the phase's declared
// outputs, which is hashed but not stored in the cache and is removed from
// the workspace once the phases reading it in a run have succeeded. It
// must run after evalOutputs.
func evalTemporary(p *Phase, e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	paths, diags := evalOutputRefs(p, e, ctx, outputRefs{
		attr: "temporary", notOutput: "Temporary output is not an output", duplicate: "Duplicate temporary output", hint: temporaryHint,
	})
	p.Temporary = append(p.Temporary, paths...)
	return diags
}

// temporaryHint lists a phase's outputs for a temporary error.
func temporaryHint(p *Phase) string {
	if len(p.Outputs) == 0 {
		return "The phase declares no outputs: temporary names outputs declared in outputs."
	}
	parts := make([]string, len(p.Outputs))
	for i, o := range p.Outputs {
		parts[i] = fmt.Sprintf("%s = %q", o.Name, o.Path)
	}
	return "Its outputs are: " + strings.Join(parts, ", ") + "."
}

// IsTemporary reports whether the declared output path is one of the
// phase's temporary outputs.
func (p *Phase) IsTemporary(path string) bool {
	return slices.Contains(p.Temporary, path)
}

// Reads reports whether the phase reads the output path of its upstream
// phase up: through a reference or an input naming it, or through
// depends_on or a reference to all of up's outputs.
func (p *Phase) Reads(up, path string) bool {
	list, ok := p.Upstream[up]
	return ok && (list == nil || slices.Contains(list, path))
}

// unreadTemporary warns of temporary outputs no phase reads: they are
// results, kept in the workspace (there is no dependant after which to
// remove them) but never in the cache, so a lost copy means running the
// phase again.
func unreadTemporary(s *Spec) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, p := range s.Phases {
		for _, t := range p.Temporary {
			read := false
			for _, d := range s.Graph.Downstream(p.Addr) {
				if dp := s.byAddr[d]; dp != nil && dp.Reads(p.Addr, t) {
					read = true
					break
				}
			}
			if !read {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagWarning,
					Summary:  "Temporary output that no phase reads",
					Detail:   fmt.Sprintf("Phase %s: temporary output %q is read by no other phase, so it is never removed; it is not stored in the cache either, so if it is lost the phase runs again. Remove it from temporary to cache it.", p.Addr, t),
					Subject:  p.DeclRange.Ptr(),
				})
			}
		}
	}
	return diags
}
