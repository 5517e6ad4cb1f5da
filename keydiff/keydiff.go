// Package keydiff sets a phase's key components beside those of another
// result, field by field, and renders them as people read them: commands
// as written, file contents by a short digest, sensitive values hidden.
// It is what cairn why and plan's reasons show, kept apart from the engine
// because it needs only the components, never the plan.
package keydiff

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-run/cairn/cache"
)

// The component kinds of a phase key (the engine makes them; Show and
// Reasons render some specially).
const (
	KindCommand  = "command"
	KindWorkdir  = "workdir"
	KindEnv      = "env"
	KindParam    = "param"
	KindOutput   = cache.KindOutput
	KindInput    = "input"
	KindUpstream = "upstream"
	KindBudget   = "budget"
	KindEnvFn    = "env()"
)

// Field is one key component, as it is now and as it was.
type Field struct {
	Kind   string `json:"kind"`
	Name   string `json:"name,omitempty"`
	Change string `json:"change"` // "same", "changed", "added" or "removed"
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
}

// Field changes.
const (
	FieldSame    = "same"
	FieldChanged = "changed"
	FieldAdded   = "added"
	FieldRemoved = "removed"
)

// Fields pairs the components by kind and name, in the order of cur
// then the removed ones, with values shown as people read them.
func Fields(prev, cur []cache.Component, compare bool, sensitive []string) []Field {
	type nk struct{ kind, name string }
	pm := map[nk]string{}
	for _, c := range prev {
		pm[nk{c.Kind, c.Name}] = c.Value
	}
	seen := map[nk]bool{}
	var out []Field
	for _, c := range cur {
		k := nk{c.Kind, c.Name}
		seen[k] = true
		f := Field{Kind: c.Kind, Name: c.Name, New: Show(c.Kind, c.Value)}
		old, had := pm[k]
		switch {
		case !compare:
			f.Change = FieldAdded
		case !had:
			f.Change = FieldAdded
		case old == c.Value:
			f.Change = FieldSame
		default:
			f.Change = FieldChanged
			f.Old = Show(c.Kind, old)
		}
		out = append(out, f)
	}
	for _, c := range prev {
		k := nk{c.Kind, c.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Field{Kind: c.Kind, Name: c.Name, Change: FieldRemoved, Old: Show(c.Kind, c.Value)})
	}
	return mask(out, sensitive)
}

// Show renders a component's value: commands as written, file
// contents by their short digest.
func Show(kind, v string) string {
	switch kind {
	case KindCommand:
		return DisplayCommand(v)
	case KindInput, KindUpstream:
		// "-:digest" or "x:digest" (executable; see fileValue); a
		// symlink's "l:target" is shown as it is.
		if mode, dig, ok := strings.Cut(v, ":"); ok && len(dig) == 64 {
			s := "sha256:" + dig[:12]
			if mode == "x" {
				s += " (executable)"
			}
			return s
		}
	}
	return v
}

// mask hides every value that holds a sensitive variable's value.
func mask(fs []Field, sensitive []string) []Field {
	for i := range fs {
		for _, v := range sensitive {
			if v == "" {
				continue
			}
			if strings.Contains(fs[i].Old, v) || strings.Contains(fs[i].New, v) {
				if fs[i].Old != "" {
					fs[i].Old = "(sensitive)"
				}
				if fs[i].New != "" {
					fs[i].New = "(sensitive)"
				}
			}
		}
	}
	return fs
}

// DisplayCommand renders a command component (a JSON argv) as the user
// wrote it.
func DisplayCommand(v string) string {
	var argv []string
	if err := json.Unmarshal([]byte(v), &argv); err != nil || len(argv) == 0 {
		return v
	}
	if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
		return fmt.Sprintf("%q", argv[2])
	}
	b, _ := json.Marshal(argv)
	return string(b)
}
