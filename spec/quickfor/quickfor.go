// Package quickfor evaluates the for expressions of a sweep's keys with
// plain Go values instead of cty's, for the part of the language where
// that gives exactly HCL's value, and leaves the rest to HCL. It knows
// HCL and cty only; package spec hands it the expressions it evaluates
// once per load (a for_each, a local).
package quickfor

import (
	"math/big"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
)

// HCL evaluates `format("%06d", a * 1000 + b) if a * 1000 + b < n` with
// cty numbers, which are big.Floats, every operator a cty function call
// with its type checks, marks and refinements: for a large sweep, most
// of its first plan. quickFor evaluates the for expressions
// of a sweep's keys with plain Go values instead, for the part of the
// language where that gives exactly HCL's result:
//
//   - numbers are integers of magnitude under 2^53 (exact in any cty
//     number, whatever its precision, and so is every result below that
//     bound), never a negative zero, never divided; they only feed
//     arithmetic, comparisons, templates and a few functions, and never
//     reach the result (a number in the result would carry a precision
//     HCL gives it);
//   - strings are cty's (normalised); bools are bools;
//   - the functions called are those whose result does not depend on a
//     number argument's precision, called as HCL calls them.
//
// Anything else (another value, another expression, an error, an unknown
// or marked value) gives up, and HCL evaluates the expression as written.

// quickLimit bounds the integers quickFor computes with.
const quickLimit = 1 << 53

// qv is a value in quickFor: an integer, a string, a bool, or a tuple
// made by a nested for expression.
type qv struct {
	kind  qkind
	i     int64
	s     string
	b     bool
	tuple []cty.Value
}

type qkind uint8

const (
	qInt qkind = iota + 1
	qStr
	qBool
	qTuple
)

// quickFuncs are the functions quickFor calls: their results do not
// depend on the precision of a number argument that is an integer.
var quickFuncs = map[string]bool{
	"format": true, "tostring": true, "upper": true, "lower": true,
	"trimspace": true, "substr": true, "replace": true, "length": true,
	"strrev": true, "title": true, "trimprefix": true, "trimsuffix": true,
}

// quickForExpr is a for expression producing a tuple, with no key
// variable (for v in coll : ..., the usual sweep), evaluated by quickFor
// when it can and by HCL otherwise.
type quickForExpr struct {
	*hclsyntax.ForExpr
}

func (e quickForExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if v, ok := quickFor(e.ForExpr, ctx); ok {
		return v, nil
	}
	return e.ForExpr.Value(ctx)
}

// Rewrite returns expr with each for expression quickFor may take, at its
// top or in the elements of lists, the values of objects, the arguments
// of function calls and the results of conditionals and parentheses,
// replaced by a node that evaluates it with quickFor when it can and by
// HCL otherwise. Containers are changed in place.
func Rewrite(expr hcl.Expression) hcl.Expression {
	return rewriteExprs(expr, quickForOf)
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

// quickForOf makes x a quickForExpr when it is a for expression quickFor
// may take. The for expressions nested in it are quickFor's part.
func quickForOf(x hclsyntax.Expression) (hclsyntax.Expression, bool) {
	e, ok := x.(*hclsyntax.ForExpr)
	if !ok || e.KeyExpr != nil || e.KeyVar != "" || e.Group {
		return x, false
	}
	return quickForExpr{e}, true
}

// testHookQuickFor, set by tests only, is called when quickFor gives a
// for expression's value.
var testHookQuickFor func()

// quickFor evaluates e, a for expression producing a tuple, or reports
// that it cannot.
func quickFor(e *hclsyntax.ForExpr, ctx *hcl.EvalContext) (cty.Value, bool) {
	q := quick{ctx: ctx}
	v, ok := q.forExpr(e)
	if !ok {
		return cty.NilVal, false
	}
	if testHookQuickFor != nil {
		testHookQuickFor()
	}
	return tupleOf(v.tuple), true
}

func tupleOf(vals []cty.Value) cty.Value {
	if len(vals) == 0 {
		return cty.EmptyTupleVal
	}
	return cty.TupleVal(vals)
}

// quick holds the for variables in scope, innermost last, and the
// collections of nested for expressions that name none of them.
type quick struct {
	ctx   *hcl.EvalContext
	vars  []qvar
	colls map[hclsyntax.Expression][]qv
}

type qvar struct {
	name string
	val  qv
}

func (q *quick) lookup(name string) (qv, bool) {
	for i := len(q.vars) - 1; i >= 0; i-- {
		if q.vars[i].name == name {
			return q.vars[i].val, true
		}
	}
	return qv{}, false
}

// usesVars reports whether x refers to a for variable in scope.
func (q *quick) usesVars(x hclsyntax.Expression) bool {
	if len(q.vars) == 0 {
		return false
	}
	for _, tr := range x.Variables() {
		if _, ok := q.lookup(tr.RootName()); ok {
			return true
		}
	}
	return false
}

// fromCty turns a value HCL gave into a qv.
func fromCty(v cty.Value) (qv, bool) {
	if !v.IsKnown() || v.IsNull() || v.IsMarked() {
		return qv{}, false
	}
	switch v.Type() {
	case cty.String:
		return qv{kind: qStr, s: v.AsString()}, true
	case cty.Bool:
		return qv{kind: qBool, b: v.True()}, true
	case cty.Number:
		f := v.AsBigFloat()
		if !f.IsInt() || f.Signbit() && f.Sign() == 0 {
			return qv{}, false
		}
		i, acc := f.Int64()
		if acc != big.Exact || i <= -quickLimit || i >= quickLimit {
			return qv{}, false
		}
		return qv{kind: qInt, i: i}, true
	}
	return qv{}, false
}

func (q *quick) expr(x hclsyntax.Expression) (qv, bool) {
	switch e := x.(type) {
	case *hclsyntax.LiteralValueExpr:
		return fromCty(e.Val)
	case *hclsyntax.ScopeTraversalExpr:
		if len(e.Traversal) == 1 {
			if v, ok := q.lookup(e.Traversal.RootName()); ok {
				return v, true
			}
		}
		return q.byHCL(e)
	case *hclsyntax.ParenthesesExpr:
		return q.expr(e.Expression)
	case *hclsyntax.TemplateWrapExpr:
		return q.expr(e.Wrapped)
	case *hclsyntax.TemplateExpr:
		return q.template(e.Parts)
	case *hclsyntax.BinaryOpExpr:
		return q.binary(e)
	case *hclsyntax.UnaryOpExpr:
		v, ok := q.expr(e.Val)
		switch {
		case !ok:
		case e.Op == hclsyntax.OpNegate && v.kind == qInt && v.i != 0:
			return qv{kind: qInt, i: -v.i}, true
		case e.Op == hclsyntax.OpLogicalNot && v.kind == qBool:
			return qv{kind: qBool, b: !v.b}, true
		}
		return qv{}, false
	case *hclsyntax.ConditionalExpr:
		c, ok := q.expr(e.Condition)
		if !ok || c.kind != qBool {
			return qv{}, false
		}
		// HCL evaluates both results (to agree on a type).
		t, ok1 := q.expr(e.TrueResult)
		f, ok2 := q.expr(e.FalseResult)
		if !ok1 || !ok2 || t.kind != f.kind || t.kind == qTuple {
			return qv{}, false
		}
		if c.b {
			return t, true
		}
		return f, true
	case *hclsyntax.FunctionCallExpr:
		return q.call(e)
	case *hclsyntax.ForExpr:
		return q.forExpr(e)
	case quickForExpr:
		return q.forExpr(e.ForExpr)
	}
	return qv{}, false
}

// byHCL evaluates x, which names no for variable in scope, with HCL.
func (q *quick) byHCL(x hclsyntax.Expression) (qv, bool) {
	if q.usesVars(x) {
		return qv{}, false
	}
	v, diags := x.Value(q.ctx)
	if len(diags) > 0 {
		return qv{}, false
	}
	return fromCty(v)
}

func (q *quick) template(parts []hclsyntax.Expression) (qv, bool) {
	var b []byte
	for _, p := range parts {
		v, ok := q.expr(p)
		if !ok {
			return qv{}, false
		}
		switch v.kind {
		case qStr:
			b = append(b, v.s...)
		case qInt:
			b = strconv.AppendInt(b, v.i, 10)
		case qBool:
			b = strconv.AppendBool(b, v.b)
		default:
			return qv{}, false
		}
	}
	// As HCL's: a cty string of the joined text (normalised).
	return qv{kind: qStr, s: cty.StringVal(string(b)).AsString()}, true
}

func (q *quick) binary(e *hclsyntax.BinaryOpExpr) (qv, bool) {
	l, ok1 := q.expr(e.LHS)
	r, ok2 := q.expr(e.RHS)
	if !ok1 || !ok2 {
		return qv{}, false
	}
	ints := l.kind == qInt && r.kind == qInt
	num := func(n int64, ok bool) (qv, bool) {
		if !ok || n <= -quickLimit || n >= quickLimit {
			return qv{}, false
		}
		return qv{kind: qInt, i: n}, true
	}
	truth := func(b bool) (qv, bool) { return qv{kind: qBool, b: b}, true }
	switch e.Op {
	case hclsyntax.OpAdd:
		if ints {
			return num(l.i+r.i, true)
		}
	case hclsyntax.OpSubtract:
		if ints {
			return num(l.i-r.i, true)
		}
	case hclsyntax.OpMultiply:
		// |l|, |r| < 2^53: the product fits an int64 once checked by
		// division; a zero product of a negative factor is a negative
		// zero in cty, which prints "-0".
		if ints && (l.i == 0 || r.i == 0) {
			return num(0, l.i >= 0 && r.i >= 0)
		}
		if ints && absLess(l.i, quickLimit/absOf(r.i)+1) {
			return num(l.i*r.i, true)
		}
	case hclsyntax.OpModulo:
		if ints && r.i != 0 {
			return num(l.i%r.i, true)
		}
	case hclsyntax.OpLessThan:
		if ints {
			return truth(l.i < r.i)
		}
	case hclsyntax.OpLessThanOrEqual:
		if ints {
			return truth(l.i <= r.i)
		}
	case hclsyntax.OpGreaterThan:
		if ints {
			return truth(l.i > r.i)
		}
	case hclsyntax.OpGreaterThanOrEqual:
		if ints {
			return truth(l.i >= r.i)
		}
	case hclsyntax.OpEqual, hclsyntax.OpNotEqual:
		if l.kind != r.kind || l.kind == qTuple {
			return qv{}, false
		}
		same := l.i == r.i && l.s == r.s && l.b == r.b
		return truth(same == (e.Op == hclsyntax.OpEqual))
	case hclsyntax.OpLogicalAnd:
		if l.kind == qBool && r.kind == qBool {
			return truth(l.b && r.b)
		}
	case hclsyntax.OpLogicalOr:
		if l.kind == qBool && r.kind == qBool {
			return truth(l.b || r.b)
		}
	}
	return qv{}, false
}

func absOf(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func absLess(n, bound int64) bool { return absOf(n) < bound }

// call calls one of quickFuncs as HCL would: arguments of the parameters'
// own types (a dynamic parameter takes any), no expansion.
func (q *quick) call(e *hclsyntax.FunctionCallExpr) (qv, bool) {
	if !quickFuncs[e.Name] || e.ExpandFinal || q.ctx == nil {
		return qv{}, false
	}
	if e.Name == "format" {
		if v, ok := q.format(e); ok {
			return v, true
		}
	}
	var f function.Function
	var found bool
	for c := q.ctx; c != nil && !found; c = c.Parent() {
		f, found = c.Functions[e.Name]
	}
	if !found {
		return qv{}, false
	}
	params, variadic := f.Params(), f.VarParam()
	if len(e.Args) < len(params) || len(e.Args) > len(params) && variadic == nil {
		return qv{}, false
	}
	args := make([]cty.Value, len(e.Args))
	for i, a := range e.Args {
		v, ok := q.expr(a)
		if !ok {
			return qv{}, false
		}
		var c cty.Value
		switch v.kind {
		case qStr:
			c = cty.StringVal(v.s)
		case qInt:
			c = cty.NumberIntVal(v.i)
		case qBool:
			c = cty.BoolVal(v.b)
		default:
			return qv{}, false
		}
		p := variadic
		if i < len(params) {
			p = &params[i]
		}
		if p.Type != cty.DynamicPseudoType && !c.Type().Equals(p.Type) {
			return qv{}, false
		}
		args[i] = c
	}
	r, err := f.Call(args)
	if err != nil {
		return qv{}, false
	}
	return fromCty(r)
}

// condChecks does what HCL does before a for expression's first element:
// it evaluates the condition with the value variable unknown, and fails
// on a diagnostic, a null or a value that is no bool (however many
// elements follow, even none). The for variables in scope take their
// values (as cty values: only types matter here).
func (q *quick) condChecks(e *hclsyntax.ForExpr) bool {
	child := q.ctx.NewChild()
	child.Variables = make(map[string]cty.Value, len(q.vars)+1)
	for _, v := range q.vars {
		switch v.val.kind {
		case qStr:
			child.Variables[v.name] = cty.StringVal(v.val.s)
		case qInt:
			child.Variables[v.name] = cty.NumberIntVal(v.val.i)
		case qBool:
			child.Variables[v.name] = cty.BoolVal(v.val.b)
		default:
			return false
		}
	}
	child.Variables[e.ValVar] = cty.DynamicVal
	r, diags := e.CondExpr.Value(child)
	if len(diags) > 0 || r.IsNull() {
		return false
	}
	_, err := convert.Convert(r, cty.Bool)
	return err == nil
}

// format formats as cty's format() does when the format string holds
// only text, %%, %s (no flags) and %d with at most a 0 flag and a width
// (Go's fmt, which cty's %d calls on a big.Int, pads an int64 alike), one
// argument per verb, of its type. Anything else: false, and format() is
// called.
func (q *quick) format(e *hclsyntax.FunctionCallExpr) (qv, bool) {
	if len(e.Args) == 0 {
		return qv{}, false
	}
	f, ok := q.expr(e.Args[0])
	if !ok || f.kind != qStr {
		return qv{}, false
	}
	var out []byte
	arg := 1
	s := f.s
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			out = append(out, s[i])
			continue
		}
		i++
		if i < len(s) && s[i] == '%' {
			out = append(out, '%')
			continue
		}
		zero := i < len(s) && s[i] == '0'
		if zero {
			i++
		}
		width := 0
		for n := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; n++ {
			if n == 2 {
				return qv{}, false
			}
			width = width*10 + int(s[i]-'0')
			i++
		}
		if i >= len(s) || arg >= len(e.Args) {
			return qv{}, false
		}
		v, ok := q.expr(e.Args[arg])
		arg++
		switch {
		case !ok:
			return qv{}, false
		case s[i] == 'd' && v.kind == qInt:
			digits := strconv.AppendInt(nil, absOf(v.i), 10)
			n := len(digits)
			if v.i < 0 {
				n++
			}
			pad := max(width-n, 0)
			if !zero {
				for range pad {
					out = append(out, ' ')
				}
			}
			if v.i < 0 {
				out = append(out, '-')
			}
			if zero {
				for range pad {
					out = append(out, '0')
				}
			}
			out = append(out, digits...)
		case s[i] == 's' && v.kind == qStr && !zero && width == 0:
			out = append(out, v.s...)
		default:
			return qv{}, false
		}
	}
	if arg != len(e.Args) {
		return qv{}, false
	}
	return qv{kind: qStr, s: cty.StringVal(string(out)).AsString()}, true
}

// forExpr evaluates a for expression producing a tuple, with no key
// variable: its collection by HCL when it names no for variable in scope
// (or as a nested for expression), each element bound to the value
// variable.
func (q *quick) forExpr(e *hclsyntax.ForExpr) (qv, bool) {
	if e.KeyExpr != nil || e.KeyVar != "" || e.Group {
		return qv{}, false
	}
	var elems []qv
	switch coll := e.CollExpr.(type) {
	case *hclsyntax.ForExpr, quickForExpr:
		v, ok := q.expr(coll)
		if !ok {
			return qv{}, false
		}
		for _, c := range v.tuple {
			x, ok := fromCty(c)
			if !ok {
				return qv{}, false
			}
			elems = append(elems, x)
		}
	default:
		if q.usesVars(coll) {
			return qv{}, false
		}
		// A collection that names no for variable is the same every time
		// (range(1000) inside a for over 100 values): made once.
		if c, ok := q.colls[coll]; ok {
			elems = c
			break
		}
		v, diags := coll.Value(q.ctx)
		if len(diags) > 0 || !v.IsKnown() || v.IsNull() || v.IsMarked() || !v.CanIterateElements() {
			return qv{}, false
		}
		elems = make([]qv, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, c := it.Element()
			x, ok := fromCty(c)
			if !ok {
				return qv{}, false
			}
			elems = append(elems, x)
		}
		if len(q.vars) > 0 {
			if q.colls == nil {
				q.colls = make(map[hclsyntax.Expression][]qv)
			}
			q.colls[coll] = elems
		}
	}
	if e.CondExpr != nil && !q.condChecks(e) {
		return qv{}, false
	}
	out := make([]cty.Value, 0, len(elems))
	q.vars = append(q.vars, qvar{name: e.ValVar})
	defer func() { q.vars = q.vars[:len(q.vars)-1] }()
	for _, el := range elems {
		q.vars[len(q.vars)-1].val = el
		if e.CondExpr != nil {
			c, ok := q.expr(e.CondExpr)
			if !ok || c.kind != qBool {
				return qv{}, false
			}
			if !c.b {
				continue
			}
		}
		v, ok := q.expr(e.ValExpr)
		if !ok {
			return qv{}, false
		}
		switch v.kind {
		case qStr:
			out = append(out, cty.StringVal(v.s))
		case qBool:
			out = append(out, cty.BoolVal(v.b))
		case qTuple:
			out = append(out, tupleOf(v.tuple))
		default: // a number: HCL's would carry its own precision
			return qv{}, false
		}
	}
	return qv{kind: qTuple, tuple: out}, true
}
