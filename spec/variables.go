package spec

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/cairn-run/cairn/spec/funcs"
)

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"},
		{Name: "default"},
		{Name: "description"},
		{Name: "sensitive"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true},
		{Name: "error_message", Required: true},
	},
}

// variable is a decoded variable block before its value is chosen.
type variable struct {
	name     string
	typ      cty.Type // cty.DynamicPseudoType when not constrained
	def      cty.Value
	hasDef   bool
	declared hcl.Range

	sensitive   bool
	validations []*hcl.Block
	source      string // where the chosen value came from
}

// decodeVariables decodes variable blocks and picks each value: -var
// first, then CAIRN_VAR_NAME from the environment, then the default.
func decodeVariables(blocks []*hcl.Block, cli []VarValue, lookupEnv func(string) (string, bool)) (map[string]cty.Value, map[string]bool, hcl.Diagnostics) {
	decl, names, diags := declareVariables(blocks)
	given, d := givenValues(cli, decl, names)
	diags = append(diags, d...)
	values := map[string]cty.Value{}
	for _, name := range names {
		val, d := chooseValue(decl[name], given, lookupEnv)
		diags = append(diags, d...)
		values[name] = val
	}
	sensitive := map[string]bool{}
	for _, name := range names {
		v := decl[name]
		if v.sensitive {
			sensitive[name] = true
		}
		if hd := hugeNumberDiag(values[name], "var."+name+" ("+v.source+")", v.declared.Ptr()); hd != nil {
			diags = append(diags, hd)
			values[name] = cty.DynamicVal
			continue
		}
		if val := values[name]; val.IsWhollyKnown() {
			diags = append(diags, validateVariable(v, val)...)
		}
	}
	return values, sensitive, diags
}

// declareVariables decodes the variable blocks, by name, and returns
// their names sorted.
func declareVariables(blocks []*hcl.Block) (map[string]*variable, []string, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	decl := map[string]*variable{}
	var names []string
	for _, b := range blocks {
		name := b.Labels[0]
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid variable name",
				Detail:   "A variable name must start with a letter or underscore and hold only letters, digits, underscores and dashes.",
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		if prev, ok := decl[name]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate variable",
				Detail:   fmt.Sprintf("Variable %q was already declared at %s. Each variable name must be unique.", name, prev.declared),
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		v, d := decodeVariable(name, b)
		diags = append(diags, d...)
		decl[name] = v
		names = append(names, name)
	}
	sort.Strings(names)
	return decl, names, diags
}

// decodeVariable decodes the variable block b named name: its type,
// default, sensitivity and validation blocks.
func decodeVariable(name string, b *hcl.Block) (*variable, hcl.Diagnostics) {
	v := &variable{name: name, typ: cty.DynamicPseudoType, declared: b.DefRange}
	content, diags := b.Body.Content(variableSchema)
	diags = betterSuggestions(diags, variableSchema)
	v.validations = content.Blocks.OfType("validation")
	if a, ok := content.Attributes["sensitive"]; ok {
		var d hcl.Diagnostics
		v.sensitive, d = evalBool(a.Expr, nil, "sensitive")
		diags = append(diags, d...)
	}
	if a, ok := content.Attributes["type"]; ok {
		t, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.typ = t
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			conv, err := convert.Convert(val, v.typ)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid default value for variable",
					Detail:   fmt.Sprintf("The default of %q does not match its type: %v.", name, err),
					Subject:  a.Expr.Range().Ptr(),
				})
			} else {
				v.def, v.hasDef = conv, true
			}
		}
	}
	return v, diags
}

// givenVars are the values given on the command line: by -var (text)
// and by -var-file (values), the last of each name winning.
type givenVars struct {
	cli  map[string]string
	file map[string]VarValue
}

// givenValues sorts the values given on the command line by where they
// came from; a value for an undeclared variable is an error.
func givenValues(cli []VarValue, decl map[string]*variable, names []string) (givenVars, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	g := givenVars{cli: map[string]string{}, file: map[string]VarValue{}}
	for _, kv := range cli {
		if _, ok := decl[kv.Name]; !ok {
			where := fmt.Sprintf("-var %s=...", kv.Name)
			var subject *hcl.Range
			if kv.File != "" {
				where, subject = fmt.Sprintf("%s in %s", kv.Name, kv.File), kv.Range.Ptr()
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("%s names no variable of this experiment.%s Declare it with a variable %q block.", where, didYouMean(kv.Name, names), kv.Name),
				Subject:  subject,
			})
			continue
		}
		if kv.File != "" {
			g.file[kv.Name] = kv
			delete(g.cli, kv.Name)
			continue
		}
		delete(g.file, kv.Name)
		g.cli[kv.Name] = kv.Value
	}
	return g, diags
}

// chooseValue picks v's value (and sets v.source): given on the command
// line, else CAIRN_VAR_NAME, else the default.
func chooseValue(v *variable, given givenVars, lookupEnv func(string) (string, bool)) (cty.Value, hcl.Diagnostics) {
	name := v.name
	raw, source := given.cli[name], "-var "+name
	fv, inFile := given.file[name]
	ok := false
	if _, set := given.cli[name]; set {
		ok = true
	} else if lookupEnv != nil && !inFile {
		// Looked up only when it can count (a -var-file wins over
		// it): a lookup is recorded by the spec memo, which a change
		// of an unused CAIRN_VAR_ would otherwise invalidate.
		raw, ok = lookupEnv("CAIRN_VAR_" + name)
		source = "CAIRN_VAR_" + name
	}
	switch {
	case inFile:
		v.source = "the value from " + fv.File
		return convertFileValue(v, fv)
	case ok:
		v.source = "the value from " + source
		return parseVarValue(v, raw, source)
	case v.hasDef:
		v.source = "the default"
		return v.def, nil
	}
	return cty.DynamicVal, hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "No value for required variable",
		Detail:   fmt.Sprintf("Variable %q has no default. Set it with -var %s=VALUE, in a -var-file, or with the environment variable CAIRN_VAR_%s.", name, name, name),
		Subject:  v.declared.Ptr(),
	}}
}

// validateVariable checks a variable's value against its validation
// blocks. A condition may refer to the variable itself (var.NAME) and use
// functions.
func validateVariable(v *variable, val cty.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{v.name: val})},
		Functions: funcs.Std(),
	}
	for _, b := range v.validations {
		content, d := b.Body.Content(validationSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		cond, msgAttr := content.Attributes["condition"], content.Attributes["error_message"]
		for _, tr := range cond.Expr.Variables() {
			if tr.RootName() != "var" || len(tr) < 2 {
				continue
			}
			if a, ok := tr[1].(hcl.TraverseAttr); ok && a.Name != v.name {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid validation condition",
					Detail:   fmt.Sprintf("The condition of variable %q may refer only to var.%s.", v.name, v.name),
					Subject:  tr.SourceRange().Ptr(),
				})
			}
		}
		if diags.HasErrors() {
			continue
		}
		ok, d := evalBool(cond.Expr, ctx, "condition")
		diags = append(diags, d...)
		if d.HasErrors() || ok {
			continue
		}
		msg, d := evalString(msgAttr.Expr, ctx, "error_message")
		diags = append(diags, d...)
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("%s\n\nVariable %q failed this validation rule with %s.", msg, v.name, v.source),
			Subject:  cond.Expr.Range().Ptr(),
		})
	}
	return diags
}

// parseVarValue reads a value given as text. A string-typed (or untyped,
// string-defaulted) variable takes the text as is; any other type parses
// it as an HCL expression, as Terraform does.
func parseVarValue(v *variable, raw, source string) (cty.Value, hcl.Diagnostics) {
	want := v.typ
	if want == cty.DynamicPseudoType && v.hasDef && v.def.Type() != cty.String {
		want = v.def.Type()
	}
	if want == cty.DynamicPseudoType || want == cty.String {
		return cty.StringVal(raw), nil
	}
	if d := checkSource([]byte(raw), source, hcl.InitialPos); d.HasErrors() {
		return cty.DynamicVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("%s: %s", source, d[0].Detail),
		}}
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), source, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.DynamicVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("%s: cannot parse %q as %s: %s.", source, raw, want.FriendlyName(), diags[0].Summary),
		}}
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.DynamicVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("%s: %q is not a valid %s: %s. Quote strings and write lists as [\"a\", \"b\"].", source, raw, want.FriendlyName(), diags[0].Detail),
		}}
	}
	conv, err := convert.Convert(val, want)
	if err != nil {
		return cty.DynamicVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("%s: %q is not a valid %s: %v.", source, raw, want.FriendlyName(), err),
		}}
	}
	return conv, nil
}

// convertFileValue converts a value read from a -var-file to the
// variable's type.
func convertFileValue(v *variable, kv VarValue) (cty.Value, hcl.Diagnostics) {
	want := v.typ
	if want == cty.DynamicPseudoType && v.hasDef {
		want = v.def.Type()
	}
	if want == cty.DynamicPseudoType {
		return kv.Val, nil
	}
	conv, err := convert.Convert(kv.Val, want)
	if err != nil {
		return cty.DynamicVal, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("%s in %s is not a valid %s: %v.", kv.Name, kv.File, want.FriendlyName(), err),
			Subject:  kv.Range.Ptr(),
		}}
	}
	return conv, nil
}
