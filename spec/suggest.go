package spec

import (
	"fmt"

	"github.com/agext/levenshtein"
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
