package spec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/cairn-run/cairn/spec/quickfor"
)

// Loading a spec has one general path: HCL evaluates every expression. A
// fast path does one step of it faster for the shapes large specs are
// made of, and gives exactly what the general path gives or declines, so
// that every value and every message stays HCL's. All of them hang from
// the table below: the general path asks it at each step whether a fast
// path can do the step, and removing a fast path is deleting its code
// and its line here. A fast path stays only while a user-visible figure
// (BENCHMARKS.md, "Spec fast paths") is clearly worse without it.

// fastPaths are the steps a fast path may take over; a nil one has none.
type fastPaths struct {
	// once readies an expression evaluated once per load (for_each, a
	// local): it returns the expression to evaluate in its place.
	once func(expr hcl.Expression) hcl.Expression
	// forEach gives the instances of a for_each expression, sorted by
	// key, or declines.
	forEach func(expr hcl.Expression, ctx *hcl.EvalContext) ([]eachItem, hcl.Diagnostics, bool)
	// params evaluates params written as an object into p.Params, or
	// declines having written nothing.
	params func(p *Phase, cons *hclsyntax.ObjectConsExpr, ctx *hcl.EvalContext) bool
}

var fast = fastPaths{
	// A sweep's keys are nested for expressions over range(): HCL
	// computes each element with cty's big.Float numbers and function
	// calls, quickFor with Go integers. The first plan of a sweep waits
	// on it.
	once: quickfor.Rewrite,
	// toset() of a sweep's keys: cty sorts a set's elements with a slow
	// comparison every time it is iterated; the instances are sorted by
	// key anyway. The first plan of a sweep waits on it.
	forEach: toSetOfStrings,
	// A sweep's params are evaluated once per instance: item by item
	// skips building an object per instance, which every plan after an
	// edit pays.
	params: paramsByItem,
}

// fastOnce readies expr, evaluated once per load, for evaluation.
func fastOnce(expr hcl.Expression) hcl.Expression {
	if fast.once == nil {
		return expr
	}
	return fast.once(expr)
}
