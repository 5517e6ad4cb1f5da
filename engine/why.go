package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cairn-run/cairn/cache"
)

// Why is the answer to "why would this phase run?": its current key
// components set beside those of the result they are compared with, field
// by field. The fields come from the same components that are hashed into
// the key, so the explanation cannot drift from what decides a hit.
type Why struct {
	Phase   string   `json:"phase"`
	Action  Action   `json:"action"`
	Reasons []string `json:"reasons,omitempty"`
	// Key is the phase's current key.
	Key string `json:"key"`
	// Against describes the result compared with: the cached result of the
	// current key (a hit), else the phase's last result in this workspace.
	// It is nil when there is nothing to compare with.
	Against *WhyResult `json:"against,omitempty"`
	// Note says what the comparison could not know (an upstream phase
	// that must run first, a last result that has left the cache).
	Note   string      `json:"note,omitempty"`
	Fields []FieldDiff `json:"fields"`
}

// WhyResult identifies a cached result.
type WhyResult struct {
	Key     string    `json:"key"`
	Created time.Time `json:"created"`
	Host    string    `json:"host,omitempty"`
	User    string    `json:"user,omitempty"`
	// SignedBy names the writer's key that signed the result: its comment
	// and fingerprint when the cache trusts it, else its fingerprint.
	SignedBy string `json:"signed_by,omitempty"`
}

// FieldDiff is one key component, as it is now and as it was.
type FieldDiff struct {
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

// Why explains each phase named (a for_each block name stands for all its
// instances): what a run would do with it and, field by field, how its key
// components differ from those of the result they are compared with.
func (e *Engine) Why(names []string) ([]*Why, error) {
	addrs, err := e.expand(names)
	if err != nil {
		return nil, err
	}
	targets := addrs
	for _, a := range addrs {
		if len(e.spec.Phase(a).Temporary) > 0 {
			// Whether the phase runs again for a temporary output that
			// is gone depends on its dependants: plan them too.
			targets = nil
			break
		}
	}
	plan, err := e.Plan(PlanOptions{Targets: targets})
	if err != nil {
		return nil, err
	}
	byPhase := map[string]*Decision{}
	for _, d := range plan.Decisions {
		byPhase[d.Phase] = d
	}
	var out []*Why
	for _, addr := range addrs {
		d := byPhase[addr]
		if d == nil {
			continue
		}
		w, err := e.why(d, byPhase)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

func (e *Engine) why(d *Decision, plan map[string]*Decision) (*Why, error) {
	p := e.spec.Phase(d.Phase)
	w := &Why{Phase: d.Phase, Action: d.Action, Reasons: d.Reasons}
	comps := d.components
	var whole *cache.Entry // d's entry read whole, when d.entry is lean
	if comps == nil && d.entry != nil {
		// Found cached through the memo, whose entries are lean.
		var err error
		if whole, err = e.cache.GetEntry(d.key); err != nil {
			return nil, fmt.Errorf("phase %s: %w", d.Phase, err)
		}
		comps = whole.Components
	}
	if comps == nil {
		// An upstream phase must run before this phase's key is known.
		// Compare with what its upstream phases hold now: their cached
		// outputs, else the workspace copies.
		up := map[string][]cache.OutputFile{}
		var pending []string
		for _, u := range e.spec.Graph.Upstream(d.Phase) {
			if ud := plan[u]; ud != nil && ud.entry != nil {
				up[u] = ud.entry.Outputs
				continue
			}
			tree, _, err := e.out.InWorkspace(e.spec.Phase(u))
			if err != nil {
				return nil, err
			}
			up[u] = tree
			pending = append(pending, u)
		}
		var err error
		if comps, err = e.components(p, up); err != nil {
			return nil, err
		}
		sort.Strings(pending)
		w.Note = fmt.Sprintf("upstream %s will run first, so this key is provisional: it uses %s outputs as the workspace holds them now", strings.Join(pending, ", "), plural(len(pending), "its", "their"))
	}
	key := cache.ComputeKey(comps)
	w.Key = key.String()

	var prev *cache.Entry
	if whole != nil && whole.Key == key {
		prev = whole // read once, not again below
	} else if d.entry != nil && d.entry.Key == key && !d.entry.Lean {
		prev = d.entry
	} else if ent, err := e.cache.GetEntry(key); err == nil {
		prev = ent
	} else if last, ok := e.lastKeys.Get(d.Phase); ok {
		if ent, err := e.cache.GetEntry(last); err == nil {
			prev = ent
		} else {
			w.Note = joinNote(w.Note, fmt.Sprintf("its last result (key %s) is no longer in the cache", last.Short()))
		}
	} else {
		w.Note = joinNote(w.Note, "no earlier result of this phase is known in this workspace")
	}
	var old []cache.Component
	if prev != nil {
		w.Against = &WhyResult{Key: prev.Key.String(), Created: prev.Created, Host: prev.Host, User: prev.User}
		if prev.SignedBy != nil {
			w.Against.SignedBy = prev.SignedBy.String()
		}
		old = prev.Components
	}
	w.Fields = e.fieldDiffs(old, comps, prev != nil)
	return w, nil
}

// fieldDiffs pairs the components by kind and name, in the order of cur
// then the removed ones, with values shown as people read them.
func (e *Engine) fieldDiffs(prev, cur []cache.Component, compare bool) []FieldDiff {
	type nk struct{ kind, name string }
	pm := map[nk]string{}
	for _, c := range prev {
		pm[nk{c.Kind, c.Name}] = c.Value
	}
	seen := map[nk]bool{}
	var out []FieldDiff
	for _, c := range cur {
		k := nk{c.Kind, c.Name}
		seen[k] = true
		f := FieldDiff{Kind: c.Kind, Name: c.Name, New: e.showValue(c.Kind, c.Value)}
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
			f.Old = e.showValue(c.Kind, old)
		}
		out = append(out, f)
	}
	for _, c := range prev {
		k := nk{c.Kind, c.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, FieldDiff{Kind: c.Kind, Name: c.Name, Change: FieldRemoved, Old: e.showValue(c.Kind, c.Value)})
	}
	return e.maskFields(out)
}

// showValue renders a component's value: commands as written, file
// contents by their short digest.
func (e *Engine) showValue(kind, v string) string {
	switch kind {
	case kindCommand:
		return displayCommand(v)
	case kindInput, kindUpstream:
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

// maskFields hides every value that holds a sensitive variable's value.
func (e *Engine) maskFields(fs []FieldDiff) []FieldDiff {
	for i := range fs {
		for _, v := range e.spec.SensitiveValues {
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

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
