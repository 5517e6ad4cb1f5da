package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// maxExponent bounds the decimal exponent of the number literals cairn
// reads. HCL reads every number literal into a 512-bit big.Float, which
// for a huge exponent is slow: 1e-80000 took 5 s, 1e-808000 minutes, on a
// typo. No experiment needs a number beyond 1e±4096 (a float64 ends at
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
