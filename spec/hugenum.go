package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/spec/funcs"
)

// checkNumberLiterals reports the number literals of src (a spec or
// variable file, starting at start) whose exponent is beyond
// ±funcs.MaxExponent, before HCL reads them. A quick scan of the bytes looks
// for such an exponent first; only then is src lexed, so that one in a
// string or a comment is no error.
func checkNumberLiterals(src []byte, filename string, start hcl.Pos) hcl.Diagnostics {
	if !mayHaveHugeExponent(src) {
		return nil
	}
	toks, _ := hclsyntax.LexConfig(src, filename, start)
	var diags hcl.Diagnostics
	for _, t := range toks {
		if t.Type != hclsyntax.TokenNumberLit || !exponentBeyond(t.Bytes) {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Number out of range",
			Detail:   fmt.Sprintf("The exponent of %s is beyond ±%d: cairn does not read numbers this large or this small. Write the value as a string (in quotes) if a command needs it.", t.Bytes, funcs.MaxExponent),
			Subject:  t.Range.Ptr(),
		})
	}
	return diags
}

// mayHaveHugeExponent reports whether src holds a digit or a point
// followed by e or E, an optional sign and digits worth more than
// funcs.MaxExponent.
func mayHaveHugeExponent(src []byte) bool {
	for i := 1; i < len(src); i++ {
		if c := src[i]; c != 'e' && c != 'E' {
			continue
		}
		if p := src[i-1]; (p < '0' || p > '9') && p != '.' {
			continue
		}
		if exponentBeyond(src[i-1:]) {
			return true
		}
	}
	return false
}

// exponentBeyond reports whether b, from the last mantissa character on
// (or a whole number literal), has an exponent beyond ±funcs.MaxExponent.
func exponentBeyond(b []byte) bool {
	i := 0
	for i < len(b) && b[i] != 'e' && b[i] != 'E' {
		i++
	}
	i++ // the e
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	n := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
		if n > funcs.MaxExponent {
			return true
		}
	}
	return false
}

// hugeNumberDiag is the error for a value holding a number beyond the
// bound, at subject; nil when v holds none.
func hugeNumberDiag(v cty.Value, what string, subject *hcl.Range) *hcl.Diagnostic {
	if !funcs.MayHoldNumber(v.Type()) {
		return nil
	}
	if _, ok := funcs.HugeNumberIn(v); !ok {
		return nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Number out of range",
		Detail:   fmt.Sprintf("%s holds a number whose exponent is beyond ±%d: cairn does not read numbers this large or this small. Write the value as a string (in quotes) if a command needs it.", what, funcs.MaxExponent),
		Subject:  subject,
	}
}
