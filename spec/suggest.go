package spec

import (
	"fmt"
	"regexp"
	"sync"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
)

// nameSuggestion returns the candidate closest to given, or "" when none
// is close enough to be a plausible typo.
func nameSuggestion(given string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := levenshtein.Distance(given, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// didYouMean formats a suggestion sentence, or "" when there is none.
func didYouMean(given string, candidates []string) string {
	if s := nameSuggestion(given, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

var unsupportedArg = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^An argument named "([^"]+)" is not expected here\.`)
})

// betterSuggestions replaces HCL's "Did you mean" for unsupported
// arguments with the closest schema name by edit distance (HCL's own pick
// can be a farther name).
func betterSuggestions(diags hcl.Diagnostics, schema *hcl.BodySchema) hcl.Diagnostics {
	names := make([]string, len(schema.Attributes))
	for i, a := range schema.Attributes {
		names[i] = a.Name
	}
	for _, d := range diags {
		if d.Summary != "Unsupported argument" {
			continue
		}
		m := unsupportedArg().FindStringSubmatch(d.Detail)
		if m == nil {
			continue
		}
		d.Detail = m[0] + didYouMean(m[1], names)
	}
	return diags
}
