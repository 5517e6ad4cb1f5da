package spec

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// maxNesting bounds how deeply brackets, braces, parentheses and
// template interpolations may nest in a spec, a -var-file or a -var
// value. HCL parses and evaluates nested expressions recursively: 100,000
// levels of "(" ended cairn with a Go stack overflow and a runtime trace
// instead of an error. No experiment nests anywhere near this deep.
const maxNesting = 1000

// checkNesting reports the first place in src (a spec or variable file,
// or a -var value, starting at start) where nesting goes deeper than
// maxNesting, before HCL parses it. Counting the opening bytes is quick;
// only a file with more of them than the bound is lexed, so that
// brackets in strings and comments do not count.
func checkNesting(src []byte, filename string, start hcl.Pos) hcl.Diagnostics {
	if bytes.Count(src, []byte("("))+bytes.Count(src, []byte("["))+bytes.Count(src, []byte("{")) <= maxNesting {
		return nil
	}
	toks, _ := hclsyntax.LexConfig(src, filename, start)
	depth := 0
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOParen, hclsyntax.TokenOBrack, hclsyntax.TokenOBrace,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			depth++
		case hclsyntax.TokenCParen, hclsyntax.TokenCBrack, hclsyntax.TokenCBrace,
			hclsyntax.TokenTemplateSeqEnd:
			depth--
		}
		if depth > maxNesting {
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Nesting too deep",
				Detail:   fmt.Sprintf("Brackets, braces, parentheses and interpolations nest more than %d levels deep here: cairn reads no deeper nesting. Split the expression into locals.", maxNesting),
				Subject:  t.Range.Ptr(),
			}}
		}
	}
	return nil
}

// checkSource runs the checks made on a spec, variable file or -var value
// before HCL parses it.
func checkSource(src []byte, filename string, start hcl.Pos) hcl.Diagnostics {
	if d := checkNesting(src, filename, start); d.HasErrors() {
		return d
	}
	return checkNumberLiterals(src, filename, start)
}
