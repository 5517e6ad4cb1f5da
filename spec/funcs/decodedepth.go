package funcs

import (
	"fmt"

	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// MaxDecodeNesting bounds the nesting of [ and { in the text yamldecode
// and jsondecode read. Both decoders take time growing with the square
// of that depth: a few hundred KB of nested brackets would stall a run
// for minutes.
const MaxDecodeNesting = 1000

// yamlDecodeFunc and jsonDecodeFunc are go-cty's yamldecode and
// jsondecode, refusing text nested deeper than MaxDecodeNesting before
// the decoder sees it.
var (
	yamlDecodeFunc = depthChecked(ctyyaml.YAMLDecodeFunc, "YAML", yamlFlowDepth)
	jsonDecodeFunc = depthChecked(stdlib.JSONDecodeFunc, "JSON", jsonDepth)
)

func depthChecked(f function.Function, lang string, depth func(string) int) function.Function {
	check := func(v cty.Value) error {
		if v.IsKnown() && !v.IsNull() && depth(v.AsString()) > MaxDecodeNesting {
			return fmt.Errorf("the %s text nests [ and { more than %d levels deep: cairn does not decode %s nested this deep", lang, MaxDecodeNesting, lang)
		}
		return nil
	}
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "src", Type: cty.String}},
		Type: func(args []cty.Value) (cty.Type, error) {
			if err := check(args[0]); err != nil {
				return cty.NilType, err
			}
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if err := check(args[0]); err != nil {
				return cty.NilVal, err
			}
			return f.Call(args)
		},
	})
}

// jsonDepth returns the deepest nesting of [ and { in src outside
// strings.
func jsonDepth(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		case '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		}
	}
	return deepest
}

// yamlFlowDepth returns the deepest nesting of [ and { in src, not
// counting those in quoted scalars and comments (a bracket in a plain
// scalar counts: the answer may be too large, never too small for
// well-formed YAML).
func yamlFlowDepth(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		case '#':
			if i == 0 || src[i-1] == ' ' || src[i-1] == '\t' || src[i-1] == '\n' || src[i-1] == '\r' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			}
		case '"':
			if !startsYAMLScalar(src, i) {
				continue
			}
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '\'':
			if !startsYAMLScalar(src, i) {
				continue
			}
			for i++; i < len(src); i++ {
				if src[i] == '\'' {
					if i+1 < len(src) && src[i+1] == '\'' {
						i++ // '' is an escaped quote
						continue
					}
					break
				}
			}
		}
	}
	return deepest
}

// startsYAMLScalar reports whether the quote at src[i] opens a quoted
// scalar: it comes first on its line or after an indicator (": ", "- ",
// a flow bracket or comma). One inside a plain scalar (it's, 5" tall) is
// text, and the brackets after it still count.
func startsYAMLScalar(src string, i int) bool {
	j := i - 1
	for j >= 0 && (src[j] == ' ' || src[j] == '\t') {
		j--
	}
	if j < 0 {
		return true
	}
	switch src[j] {
	case '\n', '\r', ':', '-', '[', '{', ',', '?':
		return true
	}
	return false
}
