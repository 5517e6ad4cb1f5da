package spec

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/internal/cores"
)

// A sweep is usually written as a for expression, often two nested ones
// (HCL's range() stops at 1,024 values): evaluating one that makes
// 100,000 keys takes HCL a second on one core, for cty numbers are
// big.Floats and every element gets its own context. parallelFor
// evaluates such an expression in pieces side by side: the collection is
// cut into runs of consecutive elements, and each run is evaluated by
// HCL itself (the same for expression over that run alone). Their tuples
// joined are what the whole would give, when every run succeeds cleanly;
// otherwise (any diagnostic, an unknown or marked result) the expression
// is evaluated again as written, so that errors and warnings read
// exactly as HCL gives them. Each run is first given to quickFor
// (quickfor.go), which evaluates the usual sweep expressions without
// cty's numbers, and to HCL when quickFor cannot.

// parallelFor is a for expression producing a tuple, evaluated in runs.
type parallelFor struct {
	*hclsyntax.ForExpr
}

// minParallelFor is the fewest elements worth cutting into runs.
const minParallelFor = 8

// testHookParallelFor, set by tests only, is called with the number of
// runs whenever parallelFor's runs give the value.
var testHookParallelFor func(runs int)

func (e parallelFor) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if v, ok := e.inRuns(ctx); ok {
		return v, nil
	}
	return e.ForExpr.Value(ctx)
}

// inRuns evaluates e in runs; ok is false when that is not possible or
// not clean, and the caller evaluates e as written.
func (e parallelFor) inRuns(ctx *hcl.EvalContext) (cty.Value, bool) {
	if cores.N < 2 {
		return quickFor(e.ForExpr, ctx)
	}
	coll, diags := e.CollExpr.Value(ctx)
	if len(diags) > 0 || coll.IsNull() || !coll.IsKnown() || coll.IsMarked() || !coll.CanIterateElements() {
		return cty.NilVal, false
	}
	n := coll.LengthInt()
	if n < minParallelFor {
		return quickFor(e.ForExpr, ctx)
	}
	elems := make([]cty.Value, 0, n)
	for it := coll.ElementIterator(); it.Next(); {
		_, v := it.Element()
		elems = append(elems, v)
	}
	runs := min(n, 4*cores.N)
	per := (n + runs - 1) / runs
	runs = (n + per - 1) / per
	results := make([]cty.Value, runs)
	var failed atomic.Bool
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(cores.N, runs) {
		wg.Go(func() {
			for !failed.Load() {
				r := int(next.Add(1) - 1)
				if r >= runs {
					return
				}
				part := *e.ForExpr
				part.CollExpr = &hclsyntax.LiteralValueExpr{
					Val:      cty.TupleVal(elems[r*per : min((r+1)*per, n)]),
					SrcRange: e.CollExpr.Range(),
				}
				v, ok := quickFor(&part, ctx)
				if !ok {
					var d hcl.Diagnostics
					v, d = part.Value(ctx)
					if len(d) > 0 || !v.IsKnown() || v.IsMarked() || !v.Type().IsTupleType() {
						failed.Store(true)
						return
					}
				}
				results[r] = v
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return cty.NilVal, false
	}
	var out []cty.Value
	for _, v := range results {
		out = append(out, v.AsValueSlice()...)
	}
	if testHookParallelFor != nil {
		testHookParallelFor(runs)
	}
	if len(out) == 0 {
		return cty.EmptyTupleVal, true
	}
	return cty.TupleVal(out), true
}

// parallelForOf makes x a parallelFor when it is a for expression that
// produces a tuple and names no key variable (for v in coll : ..., the
// usual sweep). An expression nested in a for expression is not looked
// into: its runs are already side by side.
func parallelForOf(x hclsyntax.Expression) (hclsyntax.Expression, bool) {
	e, ok := x.(*hclsyntax.ForExpr)
	if !ok || e.KeyExpr != nil || e.KeyVar != "" || e.Group {
		return x, false
	}
	return parallelFor{e}, true
}
