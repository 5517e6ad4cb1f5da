package spec

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
)

// Pool is a named concurrency limit: the phases running at once never
// hold more than Size units of it.
type Pool struct {
	Name      string    `json:"name"`
	Size      int       `json:"size"`
	DeclRange hcl.Range `json:"-"`
}

var poolSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "size", Required: true}},
}

func decodePools(blocks []*hcl.Block, sc *scope) (map[string]*Pool, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	pools := map[string]*Pool{}
	ctx := sc.evalContext(nil)
	for _, b := range blocks {
		name := b.Labels[0]
		if prev, ok := pools[name]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate pool",
				Detail:   fmt.Sprintf("A pool named %q was already declared at %s.", name, prev.DeclRange),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		content, d := b.Body.Content(poolSchema)
		diags = append(diags, betterSuggestions(d, poolSchema)...)
		pool := &Pool{Name: name, DeclRange: b.DefRange}
		if a, ok := content.Attributes["size"]; ok {
			n, d := evalInt(a.Expr, ctx, "size")
			diags = append(diags, d...)
			if !d.HasErrors() && n < 1 {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid pool size",
					Detail:   "A pool's size is the number of units phases may hold at once: at least 1.",
					Subject:  a.Expr.Range().Ptr(),
				})
			}
			pool.Size = n
		}
		pools[name] = pool
	}
	return pools, diags
}

// evalResources evaluates a phase's resources = { POOL = n }.
func evalResources(e hcl.Expression, ctx *hcl.EvalContext) (map[string]int, hcl.Diagnostics) {
	m, diags := evalStringMap(e, ctx, "resources")
	if diags.HasErrors() {
		return nil, diags
	}
	out := map[string]int{}
	for k, v := range m {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil || fmt.Sprint(n) != v || n < 1 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid resources",
				Detail:   fmt.Sprintf("resources.%s must be a whole number of units, at least 1; got %q.", k, v),
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		out[k] = n
	}
	return out, diags
}

// checkResources reports phases that name an unknown pool or ask for more
// than a pool holds: such a phase could never start.
func checkResources(s *Spec, raws map[string]*rawPhase) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := make([]string, 0, len(s.Pools))
	for n := range s.Pools {
		names = append(names, n)
	}
	sort.Strings(names)
	reported := map[string]bool{}
	for _, p := range s.Phases {
		rp := raws[p.Block]
		rng := rp.block.DefRange
		if a, ok := rp.attrs["resources"]; ok {
			rng = a.Expr.Range()
		}
		for _, pool := range sortedKeys(p.Resources) {
			n := p.Resources[pool]
			key := p.Block + "\x00" + pool
			if reported[key] {
				continue
			}
			pl, ok := s.Pools[pool]
			switch {
			case !ok:
				reported[key] = true
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Reference to undeclared pool",
					Detail:   fmt.Sprintf("Phase %q asks for pool %q, which is not declared.%s Declare it with pool %q { size = N }.", p.Addr, pool, didYouMean(pool, names), pool),
					Subject:  rng.Ptr(),
				})
			case n > pl.Size:
				reported[key] = true
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Phase asks for more than a pool holds",
					Detail:   fmt.Sprintf("Phase %q asks for %d of pool %q, which holds %d (%s): it could never start.", p.Addr, n, pool, pl.Size, pl.DeclRange),
					Subject:  rng.Ptr(),
				})
			}
		}
	}
	return diags
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
