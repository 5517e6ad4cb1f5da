package dag

import (
	"cmp"
	"fmt"
	"slices"
)

// Drawing says how to draw a graph, whatever the format: its name and
// direction, which vertices are drawn together, and the status each vertex
// is coloured by. [Drawing.DOTOptions] (for [WriteDOT]), [WriteMermaid] and
// [WriteJSON] render it; the zero value draws a plain graph named "cairn"
// from left to right.
type Drawing struct {
	// Name names the graph; "" means "cairn".
	Name string
	// Direction is "LR" (left to right, the default when "") or "TB"
	// (top to bottom).
	Direction string
	// Group, if not nil, groups vertices: those with the same non-empty
	// id are drawn together (a DOT cluster, a Mermaid subgraph, a JSON
	// "group") under label. If the vertices of a group disagree on its
	// label, the label of the smallest vertex is used.
	Group func(v string) (id, label string)
	// Instance, if not nil, splits a vertex that is one instance of a
	// repeated phase into that phase and its key, for JSON's "phase" and
	// "instance_key"; ok false means the vertex is a phase of its own.
	Instance func(v string) (phase, key string, ok bool)
	// Status, if not nil, gives each vertex's status ("" for none). A
	// drawing with statuses colours each vertex by its status and has a
	// legend listing the statuses that occur.
	Status func(v string) string
	// Statuses are the known statuses and their colours, in legend order.
	// A status not listed here is drawn white and listed after them, in
	// name order.
	Statuses []StatusStyle
}

// StatusStyle is how the vertices with one status are drawn.
type StatusStyle struct {
	// Name is the status, as Drawing.Status returns it.
	Name string
	// Fill is the background colour: a name both Graphviz and CSS know
	// (such as "lightblue") or "#rrggbb"; "" means white.
	Fill string
}

// defaultFill colours statuses missing from Drawing.Statuses.
const defaultFill = "#ffffff"

func (d Drawing) name() string { return cmp.Or(d.Name, "cairn") }

func (d Drawing) direction() (string, error) {
	switch d.Direction {
	case "", "LR":
		return "LR", nil
	case "TB":
		return "TB", nil
	}
	return "", fmt.Errorf("draw %s: direction %q: want LR or TB", d.name(), d.Direction)
}

// status returns v's status, or "" when the drawing has none.
func (d Drawing) status(v string) string {
	if d.Status == nil {
		return ""
	}
	return d.Status(v)
}

// legend returns the styles of the statuses that occur in g, in legend
// order: those of d.Statuses in their order, then unknown ones by name,
// each with its Fill set.
func (d Drawing) legend(g *Graph) []StatusStyle {
	if d.Status == nil {
		return nil
	}
	used := map[string]bool{}
	for _, v := range g.names {
		if s := d.Status(v); s != "" {
			used[s] = true
		}
	}
	var out []StatusStyle
	for _, st := range d.Statuses {
		if used[st.Name] {
			st.Fill = cmp.Or(st.Fill, defaultFill)
			out = append(out, st)
			delete(used, st.Name)
		}
	}
	var unknown []string
	for s := range used {
		unknown = append(unknown, s)
	}
	slices.Sort(unknown)
	for _, s := range unknown {
		out = append(out, StatusStyle{Name: s, Fill: defaultFill})
	}
	return out
}

// fills maps each status of the legend to its colour.
func fills(legend []StatusStyle) map[string]string {
	m := make(map[string]string, len(legend))
	for _, st := range legend {
		m[st.Name] = st.Fill
	}
	return m
}

// DOTOptions returns the [WriteDOT] options that draw g as d says: each
// vertex with a status filled with its colour, and a legend of the
// statuses that occur in g. An invalid Direction is passed on as is, for
// Graphviz to reject.
func (d Drawing) DOTOptions(g *Graph) DOTOptions {
	legend := d.legend(g)
	fill := fills(legend)
	opts := DOTOptions{
		Name:    d.name(),
		RankDir: cmp.Or(d.Direction, "LR"),
		Cluster: d.Group,
	}
	if d.Status != nil {
		opts.NodeAttrs = func(v string) map[string]string {
			s := d.Status(v)
			if s == "" {
				return nil
			}
			return map[string]string{"style": "filled", "fillcolor": fill[s]}
		}
	}
	for _, st := range legend {
		opts.Legend = append(opts.Legend, LegendItem{
			Label: st.Name,
			Attrs: map[string]string{"style": "filled", "fillcolor": fill[st.Name]},
		})
	}
	return opts
}
