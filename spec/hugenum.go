package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// maxExponent bounds the decimal exponent of the number literals cairn
// reads. HCL reads every number literal into a 512-bit big.Float, which
// for a huge exponent is slow (it grows with the exponent), on a typo.
// No experiment needs a number beyond 1e±4096 (a float64 ends at
// 1e±308).
const maxExponent = 4096

// checkNumberLiterals reports the number literals of src (a spec or
// variable file, starting at start) whose exponent is beyond
// ±maxExponent, before HCL reads them. A quick scan of the bytes looks
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
			Detail:   fmt.Sprintf("The exponent of %s is beyond ±%d: cairn does not read numbers this large or this small. Write the value as a string (in quotes) if a command needs it.", t.Bytes, maxExponent),
			Subject:  t.Range.Ptr(),
		})
	}
	return diags
}

// mayHaveHugeExponent reports whether src holds a digit or a point
// followed by e or E, an optional sign and digits worth more than
// maxExponent.
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
// (or a whole number literal), has an exponent beyond ±maxExponent.
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
		if n > maxExponent {
			return true
		}
	}
	return false
}

// maxBinaryExponent bounds the binary exponent (big.Float's MantExp) of
// the numbers a spec's values may hold: 2^13607 is just past 1e4096
// (maxExponent).
const maxBinaryExponent = 13607

// hugeNumberIn returns a number held in v (at any depth) whose exponent
// is beyond ±maxExponent, and true; else false. Such a number comes from
// a string ("1e-80000" + 0, jsondecode, a number variable given as text):
// reading it is quick, but writing it out (into a command, params, the
// plan) takes seconds to minutes, growing with the exponent's square.
func hugeNumberIn(v cty.Value) (cty.Value, bool) {
	if !v.IsKnown() || v.IsNull() {
		return cty.NilVal, false
	}
	t := v.Type()
	switch {
	case t == cty.Number:
		if e := v.AsBigFloat().MantExp(nil); e > maxBinaryExponent || e < -maxBinaryExponent {
			return v, true
		}
		return cty.NilVal, false
	case t.IsPrimitiveType() || t == cty.DynamicPseudoType:
		return cty.NilVal, false
	case v.CanIterateElements():
		for it := v.ElementIterator(); it.Next(); {
			if _, ev := it.Element(); ev.IsKnown() {
				if n, ok := hugeNumberIn(ev); ok {
					return n, true
				}
			}
		}
	}
	return cty.NilVal, false
}

// typeMayHoldNumber reports whether values of type t can hold a number,
// so that hugeNumberIn need not walk a list of 100,000 strings.
func typeMayHoldNumber(t cty.Type) bool {
	switch {
	case t == cty.Number || t == cty.DynamicPseudoType:
		return true
	case t.IsPrimitiveType():
		return false
	case t.IsListType() || t.IsSetType() || t.IsMapType():
		return typeMayHoldNumber(t.ElementType())
	case t.IsObjectType():
		for _, at := range t.AttributeTypes() {
			if typeMayHoldNumber(at) {
				return true
			}
		}
		return false
	case t.IsTupleType():
		for _, et := range t.TupleElementTypes() {
			if typeMayHoldNumber(et) {
				return true
			}
		}
		return false
	}
	return true
}

// hugeNumberDiag is the error for a value holding a number beyond the
// bound, at subject; nil when v holds none.
func hugeNumberDiag(v cty.Value, what string, subject *hcl.Range) *hcl.Diagnostic {
	if !typeMayHoldNumber(v.Type()) {
		return nil
	}
	if _, ok := hugeNumberIn(v); !ok {
		return nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Number out of range",
		Detail:   fmt.Sprintf("%s holds a number whose exponent is beyond ±%d: cairn does not read numbers this large or this small. Write the value as a string (in quotes) if a command needs it.", what, maxExponent),
		Subject:  subject,
	}
}
