package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
)

// UnknownPhaseError is returned for a phase name the spec does not
// declare.
type UnknownPhaseError struct {
	Name  string
	Valid []string
}

func (e *UnknownPhaseError) Error() string {
	msg := fmt.Sprintf("unknown phase %q", e.Name)
	best, bestDist := "", 3
	for _, v := range e.Valid {
		if d := levenshtein.Distance(e.Name, v, nil); d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	return msg + "; phases: " + strings.Join(e.Valid, ", ")
}

// selection resolves target names to the set of phases to consider: the
// targets and everything they need. No targets means every phase.
func (e *Engine) selection(targets []string) (map[string]bool, error) {
	if err := e.checkNames(targets); err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, nil
	}
	sel := e.spec.Graph.Ancestors(targets...)
	for _, t := range targets {
		sel[t] = true
	}
	return sel, nil
}

func (e *Engine) checkNames(names []string) error {
	for _, n := range names {
		if e.spec.Phase(n) == nil {
			valid := e.spec.Addrs()
			sort.Strings(valid)
			return &UnknownPhaseError{Name: n, Valid: valid}
		}
	}
	return nil
}
