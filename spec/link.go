package spec

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/dag"
)

// claim is one declared output and the phase that declares it.
type claim struct {
	path  string
	phase *Phase
}

// linkPhases checks that no two phases claim one output, adds the edges
// that inputs create when they name another phase's output (as in make),
// and builds s.Graph.
func linkPhases(s *Spec, raws map[string]*rawPhase) hcl.Diagnostics {
	var diags hcl.Diagnostics

	// Sorted output index: nested claims sit next to each other.
	var claims []claim
	for _, p := range s.Phases {
		for _, o := range p.Outputs {
			claims = append(claims, claim{o.Path, p})
		}
	}
	slices.SortStableFunc(claims, func(a, b claim) int { return strings.Compare(a.path, b.path) })
	byPath := make(map[string]*Phase, len(claims))
	// One diagnostic per phase in conflict, at the later-declared phase.
	reported := map[*Phase]bool{}
	conflict := func(a, b *Phase, outer, inner string) {
		if a.DeclRange.Start.Byte > b.DeclRange.Start.Byte {
			a, b = b, a
		}
		if !reported[b] {
			reported[b] = true
			diags = append(diags, claimConflict(a, b, outer, inner))
		}
	}
	for _, c := range claims {
		if first, ok := byPath[c.path]; ok {
			conflict(first, c.phase, c.path, c.path)
			continue
		}
		byPath[c.path] = c.phase
	}
	for _, c := range claims {
		for dir := parentDir(c.path); dir != ""; dir = parentDir(dir) {
			if outer, ok := byPath[dir]; ok {
				conflict(outer, c.phase, dir, c.path)
			}
		}
	}
	if diags.HasErrors() {
		return diags
	}
	paths := make([]string, len(claims))
	for i, c := range claims {
		paths[i] = c.path
	}

	g := &dag.Graph{}
	edges := 0
	for _, p := range s.Phases {
		edges += len(p.Upstream)
	}
	g.Grow(len(s.Phases), edges)
	for _, p := range s.Phases {
		g.Add(p.Addr)
		for up := range p.Upstream {
			g.Connect(up, p.Addr)
		}
	}
	for _, p := range s.Phases {
		for i, in := range p.Inputs {
			for _, c := range matchingClaims(in, claims, paths) {
				if c.phase == p && hasMeta(in) {
					continue // a glob may sweep up the phase's own outputs; expansion skips them
				}
				if c.phase == p {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Input is the phase's own output",
						Detail:   fmt.Sprintf("Input %q of phase %q names its own output %q. A phase's outputs are removed before it runs, so it cannot read them.", in, p.Addr, c.path),
						Subject:  p.inputRanges[i].Ptr(),
					})
					continue
				}
				g.Connect(c.phase.Addr, p.Addr)
				if p.Upstream == nil {
					p.Upstream = map[string][]string{}
				}
				if list, ok := p.Upstream[c.phase.Addr]; !ok || list != nil {
					p.Upstream[c.phase.Addr] = appendUnique(list, c.path)
				}
			}
		}
	}
	if err := g.Validate(); err != nil {
		diags = append(diags, cycleDiagnostic(err, raws))
	}
	s.Graph = g
	return diags
}

// matchingClaims returns the output claims an input pattern reads: the
// same path, an output inside an input directory, an input inside an
// output directory, or outputs a glob matches.
func matchingClaims(in string, claims []claim, paths []string) []claim {
	var out []claim
	if hasMeta(in) {
		prefix := staticPrefix(in)
		lo := sort.SearchStrings(paths, prefix)
		for i := lo; i < len(paths) && strings.HasPrefix(paths[i], prefix); i++ {
			if ok, _ := doublestar.Match(in, paths[i]); ok {
				out = append(out, claims[i])
			}
		}
		// An output directory above the pattern's static part.
		for dir := parentDir(prefix); dir != ""; dir = parentDir(dir) {
			if i := sort.SearchStrings(paths, dir); i < len(paths) && paths[i] == dir {
				out = append(out, claims[i])
			}
		}
		return out
	}
	if i := sort.SearchStrings(paths, in); i < len(paths) && paths[i] == in {
		out = append(out, claims[i])
	}
	// Outputs inside the input directory.
	lo := sort.SearchStrings(paths, in+"/")
	for i := lo; i < len(paths) && strings.HasPrefix(paths[i], in+"/"); i++ {
		out = append(out, claims[i])
	}
	// An output directory holding the input.
	for dir := parentDir(in); dir != ""; dir = parentDir(dir) {
		if i := sort.SearchStrings(paths, dir); i < len(paths) && paths[i] == dir {
			out = append(out, claims[i])
		}
	}
	return out
}

// staticPrefix is the part of a glob before its first metacharacter, cut
// back to a directory boundary ("data/" for "data/*.json").
func staticPrefix(pattern string) string {
	i := strings.IndexAny(pattern, "*?[{")
	if i < 0 {
		return pattern
	}
	return pattern[:strings.LastIndex(pattern[:i], "/")+1]
}

func parentDir(p string) string {
	p = strings.TrimSuffix(p, "/")
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return ""
	}
	return p[:i]
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	list = append(list, s)
	sort.Strings(list)
	return list
}

// claimConflict reports two phases claiming overlapping outputs, pointing
// at the later-declared one and citing the first.
func claimConflict(first, second *Phase, outer, inner string) *hcl.Diagnostic {
	if first == second {
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Overlapping outputs",
			Detail:   fmt.Sprintf("Phase %q declares %q and %q, which overlap. Declare the directory or the files in it, not both.", first.Addr, outer, inner),
			Subject:  first.DeclRange.Ptr(),
		}
	}
	what := fmt.Sprintf("both declare output %q", outer)
	if outer != inner {
		what = fmt.Sprintf("declare overlapping outputs: %q lies inside %q", inner, outer)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Two phases claim one output",
		Detail:   fmt.Sprintf("Phases %q (at %s) and %q %s. Each output path belongs to exactly one phase.", first.Addr, first.DeclRange, second.Addr, what),
		Subject:  second.DeclRange.Ptr(),
	}
}
