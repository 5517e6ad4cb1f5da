package funcs

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
)

// makeToFunc returns Terraform's tolist/tomap/toset/tostring/tonumber: a
// conversion to the named kind whose element type is inferred.
func makeToFunc(kind string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true}},
		Type: func(args []cty.Value) (cty.Type, error) {
			got := args[0].Type()
			if t, ok := uniformTarget(kind, got); ok {
				return t, nil
			}
			want := targetType(kind)
			if conv := convert.GetConversionUnsafe(got, want); conv == nil {
				return cty.NilType, function.NewArgErrorf(0, "cannot convert %s to %s", got.FriendlyName(), kind)
			}
			v, err := convert.Convert(args[0], want)
			if err != nil {
				return cty.NilType, function.NewArgError(0, err)
			}
			return v.Type(), nil
		},
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			v, err := convert.Convert(args[0], retType)
			if err == nil && kind == "number" {
				// Reading a number from text is quick; writing one beyond
				// the bound out is not (it grows with the exponent).
				if _, huge := HugeNumberIn(v); huge {
					return cty.NilVal, function.NewArgErrorf(0, "the exponent of %s is beyond ±%d: cairn does not read numbers this large or this small", displayArg(args[0]), MaxExponent)
				}
			}
			return v, err
		},
	})
}

// displayArg renders a function argument for a message: a string
// quoted, anything else by its type.
func displayArg(v cty.Value) string {
	if v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
		return fmt.Sprintf("%q", v.AsString())
	}
	return v.Type().FriendlyName()
}

// uniformTarget gives the result type of tolist or toset over a tuple or
// collection whose elements all have one known type, without asking cty
// to unify the element types: its unify sorts them pairwise, which makes
// toset() over a 100,000-key sweep take minutes.
func uniformTarget(kind string, got cty.Type) (cty.Type, bool) {
	if kind != "list" && kind != "set" {
		return cty.NilType, false
	}
	var ety cty.Type
	switch {
	case got.IsTupleType():
		elems := got.TupleElementTypes()
		if len(elems) == 0 {
			return cty.NilType, false
		}
		ety = elems[0]
		for _, t := range elems[1:] {
			if !t.Equals(ety) {
				return cty.NilType, false
			}
		}
	case got.IsListType() || got.IsSetType():
		ety = got.ElementType()
	default:
		return cty.NilType, false
	}
	if ety == cty.DynamicPseudoType || !ety.IsPrimitiveType() {
		return cty.NilType, false
	}
	if kind == "list" {
		return cty.List(ety), true
	}
	return cty.Set(ety), true
}

func targetType(kind string) cty.Type {
	switch kind {
	case "list":
		return cty.List(cty.DynamicPseudoType)
	case "map":
		return cty.Map(cty.DynamicPseudoType)
	case "set":
		return cty.Set(cty.DynamicPseudoType)
	case "number":
		return cty.Number
	default:
		return cty.String
	}
}
