package spec

import (
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestReadmeReference keeps the README's language reference from drifting
// from the schemas: every block and attribute the decoder accepts must be
// named (in backquotes) in README.md's "The language, in short" section.
func TestReadmeReference(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "### The language, in short")
	if start < 0 {
		t.Fatal(`README.md has no "### The language, in short" section`)
	}
	section := doc[start:]
	if end := strings.Index(section[4:], "\n## "); end >= 0 {
		section = section[:end+4]
	}
	schemas := map[string]*hcl.BodySchema{
		"file":       rootSchema,
		"experiment": experimentSchema,
		"cache":      cacheSchema,
		"variable":   variableSchema,
		"validation": validationSchema,
		"phase":      phaseSchema,
		"budget":     phaseBudgetSchema,
		"run budget": runBudgetSchema,
		"pool":       poolSchema,
	}
	// Every identifier inside a code span of the section.
	named := map[string]bool{}
	spans := strings.Split(section, "`")
	for i := 1; i < len(spans); i += 2 {
		for _, w := range strings.FieldsFunc(spans[i], func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			named[w] = true
		}
	}
	for where, sc := range schemas {
		var names []string
		for _, a := range sc.Attributes {
			names = append(names, a.Name)
		}
		for _, bl := range sc.Blocks {
			names = append(names, bl.Type)
		}
		for _, n := range names {
			if !named[n] {
				t.Errorf("README.md's language reference does not mention %s %q", where, n)
			}
		}
	}
}
