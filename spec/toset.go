package spec

import (
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// toSetOfStrings gives the instances of for_each = toset(X), where X is a
// list or tuple of known strings, as toset would give them (each string
// once) without making the set: cty sorts a set's elements, with a slow
// comparison, every time the set is iterated (a large part of loading a
// sweep of 100,000 keys), and instances are sorted by key here
// anyway. X = flatten(Y), the usual way to write a sweep over several
// axes, is flattened here too, in one walk: cty's flatten walks Y twice
// (once for its result's type) and checks it for marks deeply. Anything
// else is not ok, and is evaluated as written.
func toSetOfStrings(expr hcl.Expression, ctx *hcl.EvalContext) ([]eachItem, hcl.Diagnostics, bool) {
	call, ok := expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "toset" || len(call.Args) != 1 || call.ExpandFinal {
		return nil, nil, false
	}
	arg, flat := call.Args[0], false
	if f, ok := arg.(*hclsyntax.FunctionCallExpr); ok && f.Name == "flatten" && len(f.Args) == 1 && !f.ExpandFinal {
		arg, flat = f.Args[0], true
	}
	v, diags := arg.Value(ctx)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.IsMarked() {
		return nil, nil, false
	}
	if t := v.Type(); !(t.IsListType() || t.IsTupleType() || flat && t.IsSetType()) {
		return nil, nil, false
	}
	items := make([]eachItem, 0, v.LengthInt())
	// add adds c's strings, and with flat those of the lists, tuples and
	// sets in it, as flatten would give them; it is false for anything
	// else (a null, unknown or marked element, a number, a map).
	var add func(c cty.Value) bool
	add = func(c cty.Value) bool {
		for it := c.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if !ev.IsKnown() || ev.IsNull() || ev.IsMarked() {
				return false
			}
			switch t := ev.Type(); {
			case t.Equals(cty.String):
				items = append(items, eachItem{key: ev.AsString(), value: ev})
			case flat && (t.IsListType() || t.IsTupleType() || t.IsSetType()):
				if !add(ev) {
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	if !add(v) {
		return nil, nil, false
	}
	// Sorted, each string once (toset's duplicates are neighbours now).
	slices.SortFunc(items, func(a, b eachItem) int { return strings.Compare(a.key, b.key) })
	items = slices.CompactFunc(items, func(a, b eachItem) bool { return a.key == b.key })
	if testHookTosetShortcut != nil {
		testHookTosetShortcut()
	}
	return items, diags, true
}

// testHookTosetShortcut, set by tests only, is called when toSetOfStrings
// gives a for_each's instances.
var testHookTosetShortcut func()
