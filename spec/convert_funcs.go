package spec

import (
	"fmt"
	"strings"

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
			if err := hugeNumberString(kind, args[0]); err != nil {
				return cty.NilType, function.NewArgError(0, err)
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
			if err := hugeNumberString(kind, args[0]); err != nil {
				return cty.NilVal, function.NewArgError(0, err)
			}
			return convert.Convert(args[0], retType)
		},
	})
}

// hugeNumberString refuses tonumber of a string whose exponent is beyond
// ±maxExponent, as number literals are: cty reads it into a 512-bit
// big.Float and writes it back out digit by digit, which took 2 s for
// tonumber("1e-80000") and grows with the square of the exponent.
func hugeNumberString(kind string, v cty.Value) error {
	if kind != "number" || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return nil
	}
	if s := v.AsString(); exponentBeyond([]byte(s)) || binaryExponentBeyond(s) {
		return fmt.Errorf("the exponent of %q is beyond ±%d: cairn does not read numbers this large or this small", s, maxExponent)
	}
	return nil
}

// maxBinaryExponent is maxExponent as a power of two: 2^13607 > 1e4096.
const maxBinaryExponent = 13607

// binaryExponentBeyond reports whether s has a binary exponent (p or P,
// which cty's reading of a string as a number accepts, as big.ParseFloat
// does: "1p-265000" is 2^-265000) beyond ±maxBinaryExponent, a number as
// slow to write out as a decimal one beyond ±maxExponent.
func binaryExponentBeyond(s string) bool {
	i := strings.IndexAny(s, "pP")
	if i < 0 {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	n := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
		if n > maxBinaryExponent {
			return true
		}
	}
	return false
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
