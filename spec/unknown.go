package spec

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
)

// UnknownPhaseError is returned for a phase name the spec does not
// declare.
type UnknownPhaseError struct {
	Name  string
	Valid []string
	// Outputs holds the declared output paths when Name may name one
	// (a target of run, plan, why, logs or graph).
	Outputs []string
}

func (e *UnknownPhaseError) Error() string {
	if e.Outputs != nil && looksLikePath(e.Name) {
		return e.outputError()
	}
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

// looksLikePath reports whether a target is meant as a file: phase
// names hold neither dots nor slashes, and an instance address has
// brackets.
func looksLikePath(name string) bool {
	return strings.ContainsAny(name, "/.") && !strings.Contains(name, "[")
}

// outputError says that no phase declares the path e.Name, and
// suggests the declared outputs nearest to it: the closest by edit
// distance, else those in the same directory.
func (e *UnknownPhaseError) outputError() string {
	name := path.Clean(filepath.ToSlash(e.Name))
	msg := fmt.Sprintf("unknown phase or output %q: no phase declares it as an output, nor a directory holding it", e.Name)
	best, bestDist := "", max(3, len(name)/3)
	for _, o := range e.Outputs {
		if d := levenshtein.Distance(name, o, nil); d < bestDist {
			best, bestDist = o, d
		}
	}
	if best != "" {
		return msg + fmt.Sprintf("; did you mean %q?", best)
	}
	var near []string
	for _, o := range e.Outputs {
		if path.Dir(o) == path.Dir(name) {
			near = append(near, o)
		}
	}
	sort.Strings(near)
	switch {
	case len(near) > 5:
		msg += fmt.Sprintf("; outputs in %s/ include %s", path.Dir(name), strings.Join(near[:5], ", "))
	case len(near) > 0:
		msg += fmt.Sprintf("; outputs in %s/: %s", path.Dir(name), strings.Join(near, ", "))
	}
	return msg + "; a target is a phase name, an instance address or a declared output path (cairn graph shows the phases)"
}

// UnknownTarget is the error for name, a target that s does not
// resolve.
func UnknownTarget(s *Spec, name string) *UnknownPhaseError {
	return &UnknownPhaseError{Name: name, Valid: validNames(s), Outputs: s.OutputPaths()}
}

// validNames lists what may be named: block names and instance addresses.
func validNames(s *Spec) []string {
	seen := map[string]bool{}
	var valid []string
	for _, p := range s.Phases {
		for _, n := range []string{p.Block, p.Addr} {
			if n != "" && !seen[n] {
				seen[n] = true
				valid = append(valid, n)
			}
		}
	}
	sort.Strings(valid)
	return valid
}

// IsUnknownPhase reports whether err is an UnknownPhaseError.
func IsUnknownPhase(err error) bool {
	var u *UnknownPhaseError
	return errors.As(err, &u)
}
