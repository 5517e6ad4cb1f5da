package dag

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteMermaid writes g to w as a Mermaid flowchart, drawn as d says:
//
//   - a front matter whose title is the graph's name;
//   - each group as a `subgraph` labelled with the group's label, groups
//     sorted by id and their vertices by name, then the loose vertices
//     sorted by name, then every edge sorted by its ends' names;
//   - with statuses, a `Legend` subgraph with one node per status that
//     occurs, a `classDef` per such status (named status_<name>) and one
//     `class` line per status assigning it to its vertices.
//
// Mermaid IDs cannot hold arbitrary text, so every vertex gets a generated
// ID, n0, n1, ... in name order, with its name as quoted label; groups are
// g0, g1, ... in id order. Labels are escaped with Mermaid's entity codes
// (#quot; for `"`, #35; for #, and so on), so any vertex name shows as
// written and nothing in it is read as markup. The same graph and drawing
// always give the same bytes. WriteMermaid returns an error if the
// drawing's direction or a colour is not one it can write, else the first
// error from w.
func WriteMermaid(w io.Writer, g *Graph, d Drawing) error {
	dir, err := d.direction()
	if err != nil {
		return err
	}
	legend := d.legend(g)
	for _, st := range legend {
		if !isMermaidColor(st.Fill) {
			return fmt.Errorf("draw %s as mermaid: status %q: fill %q is not a colour name or #rrggbb", d.name(), st.Name, st.Fill)
		}
	}
	classOf := mermaidClasses(legend)

	bw := bufio.NewWriter(w)
	m := lineWriter{w: bw}
	title, _ := json.Marshal(d.name()) // JSON strings are YAML strings
	m.line(0, "---")
	m.line(0, "title: ", string(title))
	m.line(0, "---")
	m.line(0, "flowchart ", dir)

	_, rank := g.order()
	id := func(i int) string { return "n" + strconv.Itoa(rank[i]) }
	grouped, loose := groups(g, d.Group)
	for k, c := range grouped {
		m.line(1, "subgraph g", strconv.Itoa(k), mermaidLabel(c.label))
		for _, i := range c.members {
			m.line(2, id(i), mermaidLabel(g.names[i]))
		}
		m.line(1, "end")
	}
	for _, i := range loose {
		m.line(1, id(i), mermaidLabel(g.names[i]))
	}
	for _, e := range g.Edges() {
		m.line(1, id(g.index[e[0]]), " --> ", id(g.index[e[1]]))
	}
	if len(legend) == 0 {
		return bw.Flush()
	}

	m.line(1, `subgraph legend["Legend"]`)
	for k, st := range legend {
		m.line(2, "legend", strconv.Itoa(k), mermaidLabel(st.Name), ":::", classOf[st.Name])
	}
	m.line(1, "end")
	members := map[string][]string{}
	byName, _ := g.order()
	for _, i := range byName {
		if s := d.Status(g.names[i]); s != "" {
			members[s] = append(members[s], id(i))
		}
	}
	for _, st := range legend {
		m.line(1, "classDef ", classOf[st.Name], " fill:", st.Fill, ",stroke:#333,color:#000")
	}
	for _, st := range legend {
		m.line(1, "class ", strings.Join(members[st.Name], ","), " ", classOf[st.Name])
	}
	return bw.Flush()
}

// mermaidClasses names a Mermaid class for each status of the legend:
// status_<name> when the name is a plain identifier, else status_<k> by
// legend position, suffixed until it is unique.
func mermaidClasses(legend []StatusStyle) map[string]string {
	classOf := make(map[string]string, len(legend))
	taken := map[string]bool{}
	for k, st := range legend {
		name := "status_" + st.Name
		if !isIdent(st.Name) {
			name = "status_" + strconv.Itoa(k)
		}
		for taken[name] {
			name += "_"
		}
		taken[name] = true
		classOf[st.Name] = name
	}
	return classOf
}

// isIdent reports whether s is non-empty and only ASCII letters, digits
// and underscores.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r != '_' && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && !('0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// isMermaidColor reports whether c can be written bare in a classDef: a
// colour name or a #-prefixed hex colour, nothing that could end the
// style (comma, semicolon, space).
func isMermaidColor(c string) bool {
	return isIdent(strings.TrimPrefix(c, "#"))
}

// mermaidLabel returns s as a Mermaid node text in square brackets and
// double quotes, `["..."]`. Mermaid has no backslash escapes inside
// quotes; it reads #name; and #123; as entity codes instead. So `"` and #
// itself are written as entity codes, and so are the characters Mermaid
// or a renderer could read as something else: % (Mermaid strips
// %%{...}%% directives anywhere in the text, even inside quotes), <, >
// and & (HTML), a backtick (it starts a Markdown string) and control
// characters (line breaks), so that the text shows as written. An empty
// name becomes a blank label, since Mermaid rejects an empty one.
func mermaidLabel(s string) string {
	if s == "" {
		return `[" "]` // Mermaid rejects an empty string
	}
	var b strings.Builder
	b.Grow(len(s) + 4)
	b.WriteString(`["`)
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString("#quot;")
		case r == '#' || r == '%' || r == '<' || r == '>' || r == '&' || r == '`' || r < ' ' || r == 0x7f:
			b.WriteByte('#')
			b.WriteString(strconv.Itoa(int(r)))
			b.WriteByte(';')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(`"]`)
	return b.String()
}
