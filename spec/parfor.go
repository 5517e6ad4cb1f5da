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

// withParallelFors returns expr with each outermost for expression that
// produces a tuple and names no key variable (for v in coll : ..., the
// usual sweep) made a parallelFor. An expression nested in another for
// expression is left as it is: its runs are already side by side. Only
// for expressions evaluated where file() and env() record nothing per
// phase (for_each, locals) may be given to it.
func withParallelFors(expr hcl.Expression) hcl.Expression {
	return rewriteExprs(expr, func(x hclsyntax.Expression) (hclsyntax.Expression, bool) {
		e, ok := x.(*hclsyntax.ForExpr)
		if !ok || e.KeyExpr != nil || e.KeyVar != "" || e.Group {
			return x, false
		}
		return parallelFor{e}, true
	})
}

// rewriteExprs returns expr with wrap applied to it and, where wrap
// leaves a node as it is (false), to the elements of lists, the values of
// objects, the arguments of function calls and the results of
// conditionals and parentheses, recursively. Containers are changed in
// place; a node wrap replaced is not looked into.
func rewriteExprs(expr hcl.Expression, wrap func(hclsyntax.Expression) (hclsyntax.Expression, bool)) hcl.Expression {
	x, ok := expr.(hclsyntax.Expression)
	if !ok {
		return expr
	}
	var walk func(x hclsyntax.Expression) hclsyntax.Expression
	walk = func(x hclsyntax.Expression) hclsyntax.Expression {
		if w, ok := wrap(x); ok {
			return w
		}
		switch e := x.(type) {
		case *hclsyntax.FunctionCallExpr:
			for i, a := range e.Args {
				e.Args[i] = walk(a)
			}
		case *hclsyntax.TupleConsExpr:
			for i, a := range e.Exprs {
				e.Exprs[i] = walk(a)
			}
		case *hclsyntax.ObjectConsExpr:
			for i := range e.Items {
				e.Items[i].ValueExpr = walk(e.Items[i].ValueExpr)
			}
		case *hclsyntax.ParenthesesExpr:
			e.Expression = walk(e.Expression)
		case *hclsyntax.ConditionalExpr:
			e.TrueResult = walk(e.TrueResult)
			e.FalseResult = walk(e.FalseResult)
		}
		return x
	}
	return walk(x)
}
