package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/cairn-run/cairn/spec/funcs"
)

// evalValue evaluates expr and checks that the result is known and not null.
func evalValue(expr hcl.Expression, ctx *hcl.EvalContext, what string) (cty.Value, hcl.Diagnostics) {
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if v.IsNull() {
		return cty.NilVal, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Missing value for %s", what),
			Detail:   fmt.Sprintf("%s must not be null.", what),
			Subject:  expr.Range().Ptr(),
		})
	}
	if !v.IsWhollyKnown() {
		// Unknown values only come from a variable, local or phase that
		// already has an error; decodeFile drops this follow-on diagnostic
		// when that error is reported.
		return cty.NilVal, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Unknown value for %s", what),
			Detail:   fmt.Sprintf("%s must be known when the spec is loaded.", what),
			Subject:  expr.Range().Ptr(),
			Extra:    followOn{},
		})
	}
	return v, diags
}

func typeError(expr hcl.Expression, what, want string, err error) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid value for %s", what),
		Detail:   fmt.Sprintf("%s must be %s: %v.", what, want, err),
		Subject:  expr.Range().Ptr(),
	}
}

func evalString(expr hcl.Expression, ctx *hcl.EvalContext, what string) (string, hcl.Diagnostics) {
	v, diags := evalValue(expr, ctx, what)
	if diags.HasErrors() {
		return "", diags
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		return "", append(diags, typeError(expr, what, "a string", err))
	}
	return s.AsString(), diags
}

func evalInt(expr hcl.Expression, ctx *hcl.EvalContext, what string) (int, hcl.Diagnostics) {
	v, diags := evalValue(expr, ctx, what)
	if diags.HasErrors() {
		return 0, diags
	}
	n, err := convert.Convert(v, cty.Number)
	var i int
	if err == nil {
		err = gocty.FromCtyValue(n, &i)
	}
	if err != nil {
		return 0, append(diags, typeError(expr, what, "a whole number", err))
	}
	return i, diags
}

func evalBool(expr hcl.Expression, ctx *hcl.EvalContext, what string) (bool, hcl.Diagnostics) {
	v, diags := evalValue(expr, ctx, what)
	if diags.HasErrors() {
		return false, diags
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil {
		return false, append(diags, typeError(expr, what, "true or false", err))
	}
	return b.True(), diags
}

// evalStringList evaluates a list of strings.
func evalStringList(expr hcl.Expression, ctx *hcl.EvalContext, what string) ([]string, hcl.Diagnostics) {
	v, diags := evalValue(expr, ctx, what)
	if diags.HasErrors() {
		return nil, diags
	}
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil {
		return nil, append(diags, typeError(expr, what, "a list of strings", err))
	}
	var out []string
	for it := l.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			return nil, append(diags, typeError(expr, what, "a list of strings", fmt.Errorf("an element is null")))
		}
		out = append(out, e.AsString())
	}
	return out, diags
}

// evalStringMap evaluates a map whose values convert to strings.
func evalStringMap(expr hcl.Expression, ctx *hcl.EvalContext, what string) (map[string]string, hcl.Diagnostics) {
	v, diags := evalValue(expr, ctx, what)
	if diags.HasErrors() {
		return nil, diags
	}
	m, err := convert.Convert(v, cty.Map(cty.String))
	if err != nil {
		return nil, append(diags, typeError(expr, what, "a map of strings", err))
	}
	out := map[string]string{}
	for it := m.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() {
			return nil, append(diags, typeError(expr, what, "a map of strings", fmt.Errorf("%s is null", k.AsString())))
		}
		out[k.AsString()] = e.AsString()
	}
	return out, diags
}

// canonicalJSON renders a value as JSON; object keys come out sorted, so
// equal values give equal bytes.
func canonicalJSON(v cty.Value) (string, error) {
	if funcs.MayHoldNumber(v.Type()) {
		if n, ok := funcs.HugeNumberIn(v); ok {
			return "", fmt.Errorf("a number with exponent %d (a power of two) is beyond ±1e%d: cairn does not write numbers this large or this small; quote it to pass it as text", n.AsBigFloat().MantExp(nil), funcs.MaxExponent)
		}
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// displayValue renders a value for humans: strings bare, others as JSON.
func displayValue(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	if v.Type() == cty.String && v.IsKnown() {
		return v.AsString()
	}
	if s, err := canonicalJSON(v); err == nil {
		return s
	}
	return v.GoString()
}

// expandHome expands a leading ~ to HOME, read through lookupEnv when it
// is set (so that the spec memo records it: a memo made with another HOME
// is not used), else through os.UserHomeDir.
func expandHome(p string, lookupEnv func(string) (string, bool)) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home := ""
	if lookupEnv != nil {
		home, _ = lookupEnv("HOME")
	} else if h, err := os.UserHomeDir(); err == nil {
		home = h
	}
	if home == "" {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

func absUnder(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// followOn marks diagnostics caused by an earlier error.
type followOn struct{}

// dropFollowOn removes follow-on diagnostics when a root cause is present.
func dropFollowOn(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	root := false
	for _, d := range diags {
		if _, ok := d.Extra.(followOn); !ok && d.Severity == hcl.DiagError {
			root = true
		}
	}
	for _, d := range diags {
		if _, ok := d.Extra.(followOn); ok && root {
			continue
		}
		out = append(out, d)
	}
	return out
}
