package spec

import (
	"fmt"
	"path/filepath"
	"sync"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
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
			b, err := ReadFile(p)
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
