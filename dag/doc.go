// Package dag holds cairn's dependency graph: building it, ordering it,
// finding cycles, scheduling it and drawing it (Graphviz DOT, Mermaid,
// JSON).
//
// Vertices are plain string IDs (phase names such as "prepare" or
// `harden["gpt-4o-mini"]`). An edge from -> to means "to depends on from":
// from is upstream and must finish first. The package knows nothing about
// HCL, processes or goroutines: spec builds the Graph from phase
// references, and engine runs it.
//
// The main entry points are:
//
//   - [Graph] (graph.go): the graph itself, with neighbour and reachability
//     queries, [Graph.Induced] subgraphs and a stable [Graph.String] for tests.
//   - [Graph.TopoOrder] (order.go): a deterministic topological order.
//   - [Graph.Cycles] and [Graph.Validate] (cycles.go): cycle reporting
//     through [CycleError].
//   - [Plan] (plan.go): pure scheduling state in the style of ninja's Plan.
//     It hands out ready vertices and, on failure, reports the dependents
//     that are skipped; engine owns the concurrency.
//   - [Drawing] (draw.go): how to draw a graph in any format: its groups
//     (for_each instances) and the status each vertex is coloured by.
//   - [WriteDOT] (dot.go, through [Drawing.DOTOptions]), [WriteMermaid]
//     (mermaid.go) and [WriteJSON] (json.go): the formats of `cairn graph`.
//
// Every result is deterministic: it depends only on the set of vertices and
// edges, never on insertion order. Vertex lists are sorted by name (byte
// order, as with [strings.Compare]). All operations are O(V+E) or
// O((V+E) log V), use integer indices internally and never recurse, so
// graphs of 100,000 vertices and deep chains are fine.
package dag
