package spec

import (
	"fmt"
	"path/filepath"
	"sync"
	"unicode/utf8"

	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// fileFunc is file(path): the content of a regular file of at most
// maxFileRead bytes, relative to the workspace. A phase whose
// expressions call it gets the file as an input.
func (sc *scope) fileFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			rel := args[0].AsString()
			p := rel
			if !filepath.IsAbs(p) {
				p = filepath.Join(sc.dir, p)
			}
			b, err := readRegular(p)
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot read %s: %v", rel, err)
			}
			if !utf8.Valid(b) {
				return cty.NilVal, fmt.Errorf("%s is not UTF-8 text", rel)
			}
			if sc.use != nil {
				sc.use.files = append(sc.use.files, cleanRelPath(rel))
			}
			sc.reads.file(p, b)
			return cty.StringVal(string(b)), nil
		},
	})
}

// envFunc is env(NAME): an environment variable's value, "" when unset.
// A phase whose expressions call it has the variable in its key.
func (sc *scope) envFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "name", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := args[0].AsString()
			sc.envSeen.add(name)
			v, ok := "", false
			if sc.lookupEnv != nil {
				v, ok = sc.lookupEnv(name)
			}
			if sc.use != nil {
				if sc.use.env == nil {
					sc.use.env = map[string]string{}
				}
				if ok {
					sc.use.env[name] = "=" + v
				} else {
					sc.use.env[name] = "unset"
				}
			}
			return cty.StringVal(v), nil
		},
	})
}

// envNames is the set of names env() looked up anywhere in a spec
// (variables' defaults, locals, settings, phases), so that a name a phase
// also declares in secret_env can be refused: its value would enter phase
// keys, the cache and the spec memo.
type envNames struct {
	mu    sync.Mutex
	names map[string]bool
}

func (e *envNames) add(name string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	if e.names == nil {
		e.names = map[string]bool{}
	}
	e.names[name] = true
	e.mu.Unlock()
}

func (e *envNames) has(name string) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.names[name]
}

// functions returns the functions available in spec expressions: the
// go-cty standard library under the names Terraform users know.
func functions() map[string]function.Function {
	return map[string]function.Function{
		"abs":             stdlib.AbsoluteFunc,
		"ceil":            stdlib.CeilFunc,
		"chomp":           stdlib.ChompFunc,
		"chunklist":       stdlib.ChunklistFunc,
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"csvdecode":       stdlib.CSVDecodeFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"floor":           stdlib.FloorFunc,
		"format":          stdlib.FormatFunc,
		"formatdate":      stdlib.FormatDateFunc,
		"formatlist":      stdlib.FormatListFunc,
		"indent":          stdlib.IndentFunc,
		"index":           stdlib.IndexFunc,
		"int":             stdlib.IntFunc,
		"join":            stdlib.JoinFunc,
		"jsondecode":      jsonDecodeFunc,
		"jsonencode":      stdlib.JSONEncodeFunc,
		"keys":            stdlib.KeysFunc,
		"length":          stdlib.LengthFunc,
		"log":             stdlib.LogFunc,
		"lookup":          stdlib.LookupFunc,
		"lower":           stdlib.LowerFunc,
		"max":             stdlib.MaxFunc,
		"merge":           stdlib.MergeFunc,
		"min":             stdlib.MinFunc,
		"parseint":        stdlib.ParseIntFunc,
		"pow":             stdlib.PowFunc,
		"range":           stdlib.RangeFunc,
		"regex":           stdlib.RegexFunc,
		"regexall":        stdlib.RegexAllFunc,
		"regex_replace":   stdlib.RegexReplaceFunc,
		"replace":         stdlib.ReplaceFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      stdlib.SetProductFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"signum":          stdlib.SignumFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"split":           stdlib.SplitFunc,
		"strrev":          stdlib.ReverseFunc,
		"substr":          stdlib.SubstrFunc,
		"title":           stdlib.TitleFunc,
		"tolist":          makeToFunc("list"),
		"tomap":           makeToFunc("map"),
		"tonumber":        makeToFunc("number"),
		"toset":           makeToFunc("set"),
		"tostring":        makeToFunc("string"),
		"trim":            stdlib.TrimFunc,
		"trimprefix":      stdlib.TrimPrefixFunc,
		"trimspace":       stdlib.TrimSpaceFunc,
		"trimsuffix":      stdlib.TrimSuffixFunc,
		"upper":           stdlib.UpperFunc,
		"values":          stdlib.ValuesFunc,
		"yamldecode":      yamlDecodeFunc,
		"yamlencode":      ctyyaml.YAMLEncodeFunc,
		"zipmap":          stdlib.ZipmapFunc,
	}
}
