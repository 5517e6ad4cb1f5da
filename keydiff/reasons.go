package keydiff

import (
	"fmt"
	"strings"

	"github.com/cairn-run/cairn/cache"
)

// Reasons describes, one line each, how the components cur differ from
// prev (producer names the phase of each upstream output path). It is the single place that turns key components into
// reasons, so an explanation cannot drift from what is hashed.
func Reasons(prev, cur []cache.Component, producer map[string]string) []string {
	type nk struct{ kind, name string }
	index := func(cs []cache.Component) (map[nk]string, []nk) {
		m := map[nk]string{}
		var order []nk
		for _, c := range cs {
			k := nk{c.Kind, c.Name}
			if _, ok := m[k]; !ok {
				order = append(order, k)
			}
			m[k] = c.Value
		}
		return m, order
	}
	pm, porder := index(prev)
	cm, corder := index(cur)
	var reasons []string
	outputsChanged := false
	say := func(k nk, old, new string, hadOld, hasNew bool) {
		switch k.kind {
		case KindCommand:
			reasons = append(reasons, fmt.Sprintf("command changed: %s → %s", DisplayCommand(old), DisplayCommand(new)))
		case KindWorkdir:
			reasons = append(reasons, fmt.Sprintf("workdir %s → %s", old, new))
		case KindOutput:
			outputsChanged = true
		case KindParam:
			switch {
			case !hadOld:
				reasons = append(reasons, fmt.Sprintf("param %s added (%s)", k.name, new))
			case !hasNew:
				reasons = append(reasons, fmt.Sprintf("param %s removed", k.name))
			default:
				reasons = append(reasons, fmt.Sprintf("param %s %s → %s", k.name, old, new))
			}
		case KindBudget:
			reasons = append(reasons, fmt.Sprintf("budget %s %s → %s", k.name, orNone(old, hadOld), orNone(new, hasNew)))
		case KindEnvFn:
			reasons = append(reasons, fmt.Sprintf("env(%q) changed", k.name))
		case KindEnv:
			verb := "changed"
			if !hadOld {
				verb = "added"
			} else if !hasNew {
				verb = "removed"
			}
			reasons = append(reasons, fmt.Sprintf("env %s %s", k.name, verb))
		case KindInput:
			verb := "changed"
			if !hadOld {
				verb = "added"
			} else if !hasNew {
				verb = "removed"
			}
			reasons = append(reasons, fmt.Sprintf("input %s %s", k.name, verb))
		case KindUpstream:
			who := producer[k.name]
			if who == "" {
				for dir := k.name; dir != "." && dir != "/" && who == ""; {
					i := strings.LastIndex(dir, "/")
					if i < 0 {
						break
					}
					dir = dir[:i]
					who = producer[dir]
				}
			}
			verb := "changed"
			if !hadOld {
				verb = "added"
			} else if !hasNew {
				verb = "removed"
			}
			if who != "" {
				reasons = append(reasons, fmt.Sprintf("upstream %s output %s %s", who, k.name, verb))
			} else {
				reasons = append(reasons, fmt.Sprintf("upstream output %s %s", k.name, verb))
			}
		default:
			reasons = append(reasons, fmt.Sprintf("%s %s changed", k.kind, k.name))
		}
	}
	for _, k := range corder {
		old, had := pm[k]
		if !had || old != cm[k] {
			say(k, old, cm[k], had, true)
		}
	}
	for _, k := range porder {
		if _, has := cm[k]; !has {
			say(k, pm[k], "", true, false)
		}
	}
	if outputsChanged {
		reasons = append(reasons, "declared outputs changed")
	}
	return reasons
}

// Mask hides the sensitive values in lines of text meant for people
// (reasons shown by plan and run).
func Mask(lines []string, sensitive []string) []string {
	if len(sensitive) == 0 {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		masked := l
		for _, v := range sensitive {
			masked = strings.ReplaceAll(masked, v, "(sensitive)")
		}
		if masked != l {
			// The old side may hold an earlier sensitive value that is
			// no longer known: show neither side.
			head, _, ok := strings.Cut(l, ":")
			if !ok {
				f := strings.Fields(l)
				head = strings.Join(f[:min(2, len(f))], " ") + " changed"
			}
			masked = head + " (values hidden: a sensitive variable is involved)"
		}
		out[i] = masked
	}
	return out
}

func orNone(v string, ok bool) string {
	if !ok {
		return "none"
	}
	return v
}
