package engine

import (
	"fmt"
	"github.com/cairn-run/cairn/keydiff"
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
	Note   string          `json:"note,omitempty"`
	Fields []keydiff.Field `json:"fields"`
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
	w.Fields = keydiff.Fields(old, comps, prev != nil, e.spec.SensitiveValues)
	return w, nil
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
