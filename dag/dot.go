package dag

import (
	"bufio"
	"cmp"
	"io"
	"slices"
	"strconv"
	"strings"
)

// DOTOptions controls [WriteDOT]. The zero value draws a plain graph.
type DOTOptions struct {
	// Name is the digraph's name; "" means "cairn".
	Name string
	// NodeAttrs, if not nil, returns extra Graphviz attributes for a vertex
	// (such as color, fillcolor or style). They are written sorted by key.
	NodeAttrs func(v string) map[string]string
	// Cluster, if not nil, groups vertices: those with the same non-empty
	// id are drawn in `subgraph "cluster_<id>"` labelled label. If the
	// vertices of a cluster disagree on its label, the label of the
	// smallest vertex is used. An empty id leaves the vertex unclustered.
	Cluster func(v string) (id, label string)
	// Legend, if not empty, adds a `subgraph "cluster_legend"` labelled
	// "Legend" with one node per item, in order.
	Legend []LegendItem
	// RankDir is the Graphviz rankdir; "" means "LR".
	RankDir string
}

// LegendItem is one node of a DOT legend: its label and attributes (for
// example the color used for cached phases). Label overrides any "label"
// in Attrs.
type LegendItem struct {
	Label string
	Attrs map[string]string
}

// WriteDOT writes g to w in Graphviz DOT format: clusters sorted by id, each
// with its vertices sorted, then the unclustered vertices sorted, then the
// legend, then every edge sorted, so the same graph always gives the same
// bytes. Every ID and attribute value is a quoted string with `"`, `\`
// and line breaks escaped, so any vertex name is safe. Nodes are boxes
// unless NodeAttrs says otherwise. WriteDOT returns the first error from w.
func WriteDOT(w io.Writer, g *Graph, opts DOTOptions) error {
	name := cmp.Or(opts.Name, "cairn")
	rankDir := cmp.Or(opts.RankDir, "LR")

	bw := bufio.NewWriter(w)
	d := lineWriter{w: bw}
	d.line(0, "digraph ", quote(name), " {")
	d.line(1, "rankdir=", quote(rankDir), ";")
	d.line(1, `node [shape="box"];`)

	clusters, loose := groups(g, opts.Cluster)

	node := func(depth, i int) {
		var attrs map[string]string
		if opts.NodeAttrs != nil {
			attrs = opts.NodeAttrs(g.names[i])
		}
		d.line(depth, quote(g.names[i]), formatAttrs(attrs), ";")
	}
	byID := map[string]bool{}
	for _, c := range clusters {
		byID[c.id] = true
		d.line(1, "subgraph ", quote("cluster_"+c.id), " {")
		d.line(2, "label=", quote(c.label), ";")
		for _, i := range c.members {
			node(2, i)
		}
		d.line(1, "}")
	}
	for _, i := range loose {
		node(1, i)
	}

	if len(opts.Legend) > 0 {
		// The legend's subgraph and node IDs must not collide with the
		// user's clusters or vertices, or Graphviz would merge them.
		legendID := "legend"
		for byID[legendID] {
			legendID += "_"
		}
		d.line(1, "subgraph ", quote("cluster_"+legendID), " {")
		d.line(2, `label="Legend";`)
		for k, item := range opts.Legend {
			id := "legend_" + strconv.Itoa(k)
			for g.Has(id) {
				id = "_" + id
			}
			attrs := make(map[string]string, len(item.Attrs)+1)
			for key, v := range item.Attrs {
				attrs[key] = v
			}
			attrs["label"] = item.Label
			d.line(2, quote(id), formatAttrs(attrs), ";")
		}
		d.line(1, "}")
	}

	for _, e := range g.Edges() {
		d.line(1, quote(e[0]), " -> ", quote(e[1]), ";")
	}
	d.line(0, "}")
	return bw.Flush()
}

// group is a set of vertices drawn together.
type group struct {
	id, label string
	members   []int // vertex indices, sorted by name
}

// groups sorts g's vertices into the groups groupOf gives them (nil: no
// groups), sorted by id, and the loose vertices, which have none. A
// group's label is that of its smallest vertex.
func groups(g *Graph, groupOf func(v string) (id, label string)) (groups []*group, loose []int) {
	byName, _ := g.order()
	byID := map[string]*group{}
	for _, i := range byName {
		var id, label string
		if groupOf != nil {
			id, label = groupOf(g.names[i])
		}
		if id == "" {
			loose = append(loose, i)
			continue
		}
		c := byID[id]
		if c == nil {
			c = &group{id: id, label: label}
			byID[id] = c
			groups = append(groups, c)
		}
		c.members = append(c.members, i)
	}
	slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.id, b.id) })
	return groups, loose
}

// lineWriter writes indented lines of DOT or Mermaid; bufio.Writer keeps
// the first error, which the writer returns from Flush.
type lineWriter struct{ w *bufio.Writer }

func (d lineWriter) line(depth int, parts ...string) {
	for range depth {
		d.w.WriteByte('\t')
	}
	for _, p := range parts {
		d.w.WriteString(p)
	}
	d.w.WriteByte('\n')
}

// formatAttrs renders attrs as ` [a="x", b="y"]` sorted by key, or "" if
// attrs is empty.
func formatAttrs(attrs map[string]string) string {
	if len(attrs) == 0 {
		return ""
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(" [")
	for n, k := range keys {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(attrName(k))
		b.WriteByte('=')
		b.WriteString(quote(attrs[k]))
	}
	b.WriteByte(']')
	return b.String()
}

// attrName returns an attribute name bare if DOT accepts it as an
// identifier (as all of Graphviz's own names are), and quoted otherwise.
func attrName(k string) string {
	switch strings.ToLower(k) {
	case "", "node", "edge", "graph", "digraph", "subgraph", "strict":
		return quote(k)
	}
	for n, r := range k {
		if r != '_' && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && (n == 0 || !('0' <= r && r <= '9')) {
			return quote(k)
		}
	}
	return k
}

// quote returns s as a DOT double-quoted string. DOT itself only unescapes
// \" inside quotes; escaping \ as well keeps the mapping one-to-one (a
// name ending in \ cannot swallow the closing quote) and makes labels,
// which Graphviz reads as escString, show the name as written. Line breaks
// become \n and \r so each statement stays on one line.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
