package spec

import (
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
			want := targetType(kind)
			got := args[0].Type()
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
			return convert.Convert(args[0], retType)
		},
	})
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
