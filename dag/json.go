package dag

import (
	"encoding/json"
	"io"
)

// JSONGraph is the document [WriteJSON] writes:
//
//	{
//	  "name": "demo",
//	  "nodes": [
//	    {"id": "harden[\"m1\"]", "phase": "harden", "instance_key": "m1", "group": "harden", "status": "run"},
//	    {"id": "prepare", "phase": "prepare", "status": "cached"}
//	  ],
//	  "edges": [{"from": "prepare", "to": "harden[\"m1\"]"}]
//	}
//
// Nodes are sorted by id, edges by from and then to; both are [] when
// empty, never null.
type JSONGraph struct {
	Name  string     `json:"name"`
	Nodes []JSONNode `json:"nodes"`
	Edges []JSONEdge `json:"edges"`
}

// JSONNode is one vertex of a [JSONGraph].
type JSONNode struct {
	// ID is the vertex's name (a phase address).
	ID string `json:"id"`
	// Phase is the phase the vertex is an instance of, or ID itself.
	Phase string `json:"phase"`
	// InstanceKey is the instance's key; present only for instances of a
	// repeated phase (it may then be "").
	InstanceKey *string `json:"instance_key,omitempty"`
	// Group is the id of the group the vertex is drawn in, if any.
	Group string `json:"group,omitempty"`
	// Status is the vertex's status, if the drawing has one for it.
	Status string `json:"status,omitempty"`
}

// JSONEdge is one edge of a [JSONGraph]: To depends on From.
type JSONEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// MarshalGraph returns g as d draws it, in the shape WriteJSON writes.
func MarshalGraph(g *Graph, d Drawing) JSONGraph {
	out := JSONGraph{Name: d.name(), Nodes: make([]JSONNode, 0, g.Len()), Edges: []JSONEdge{}}
	for _, v := range g.Vertices() {
		n := JSONNode{ID: v, Phase: v, Status: d.status(v)}
		if d.Instance != nil {
			if phase, key, ok := d.Instance(v); ok {
				n.Phase, n.InstanceKey = phase, &key
			}
		}
		if d.Group != nil {
			n.Group, _ = d.Group(v)
		}
		out.Nodes = append(out.Nodes, n)
	}
	for _, e := range g.Edges() {
		out.Edges = append(out.Edges, JSONEdge{From: e[0], To: e[1]})
	}
	return out
}

// WriteJSON writes g to w as an indented [JSONGraph] followed by a
// newline. The same graph and drawing always give the same bytes.
// WriteJSON returns the first error from w.
func WriteJSON(w io.Writer, g *Graph, d Drawing) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(MarshalGraph(g, d))
}
