package report

import (
	"cmp"
	"slices"
)

// Spacing of the diagram, in pixels.
const (
	margin         = 16 // around the whole drawing
	gapX           = 64 // between layers, where the edges run
	gapY           = 14 // between boxes of a layer
	dummyH         = 6  // the slot a long edge takes in a layer it crosses
	groupPadX      = 10 // a group's frame beyond its column
	groupPadTop    = 22 // room for the group's label
	groupPadBottom = 10
	sweeps         = 8  // barycentre passes, alternately down and up
	maxColumn      = 12 // boxes per column when there are no edges
)

// point is a position in the drawing.
type point struct{ X, Y int }

// box is a placed vertex.
type box struct {
	ID    string
	Group string
	Layer int
	X, Y  int
	W, H  int
}

// route is an edge's path: from the right side of From, through the slot
// it takes in each layer it crosses, to the left side of To.
type route struct {
	From, To string
	Points   []point
}

// groupBox frames the vertices of one group that share a layer.
type groupBox struct {
	Name  string
	Layer int
	X, Y  int
	W, H  int
}

// diagram is a laid-out graph: every box, route and group frame, in a
// deterministic order, and the drawing's size.
type diagram struct {
	Boxes  []box
	Routes []route
	Groups []groupBox
	W, H   int
}

// lnode is a vertex during layout; dummy nodes (id "") carry long edges
// through the layers between their ends.
type lnode struct {
	id       string
	group    string
	layer    int
	w, h     int
	up, down []int
	pos      int
	x, y     int
}

// layoutGraph lays out left to right the vertices names with the edges
// {from, to} between them: each vertex's layer is the length of the
// longest path reaching it from a source, so every edge goes from a lower
// layer to a higher one (without edges, the vertices fill columns of
// maxColumn in name order); the order within layers comes from a few
// barycentre passes that keep the vertices of a group (group(v) != "")
// together, and keeps the one with the fewest crossings. size gives a
// vertex's box and labelW the width a group's label needs.
//
// Edges whose ends are not both in names, self-edges and edges closing a
// cycle are left out: callers pass validated, acyclic spec graphs.
// The result depends only on the arguments, never on map order.
func layoutGraph(names []string, edges [][2]string, group func(string) string, size func(string) (w, h int), labelW func(string) int) *diagram {
	nodes, es := layoutNodes(names, edges, group, size)
	n := len(nodes)
	if len(es) == 0 {
		// Nothing to layer by: wrap into columns rather than draw one
		// endless column.
		for i, v := range nodes {
			v.layer = i / maxColumn
		}
	} else {
		assignLayers(nodes, n, func(yield func(f, t int)) {
			for _, e := range es {
				yield(e.f, e.t)
			}
		})
	}
	nodes, chains := addDummies(nodes, es)
	layers := order(nodes)
	colW, colX, colH := place(nodes, layers, labelW)

	d := &diagram{}
	for _, v := range nodes[:n] {
		d.Boxes = append(d.Boxes, box{ID: v.id, Group: v.group, Layer: v.layer, X: v.x, Y: v.y, W: v.w, H: v.h})
	}
	d.Routes = routes(nodes, chains, colX, colW)
	d.Groups = groupBoxes(nodes, layers, colX, colW)
	if l := len(layers); l > 0 {
		d.W = colX[l-1] + colW[l-1] + groupPadX + margin
	} else {
		d.W = 2 * margin
	}
	d.H = 2*margin + slices.Max(append(colH, 0))
	return d
}

// ledge is an edge between two vertices, by index.
type ledge struct{ f, t int }

// chain is an edge as drawn: from, to and the dummy vertices between.
type chain struct {
	from, to int
	via      []int
}

// layoutNodes makes a vertex of each name (sorted, once each) and returns
// the edges between them, sorted, without duplicates or self-edges.
func layoutNodes(names []string, edges [][2]string, group func(string) string, size func(string) (w, h int)) ([]*lnode, []ledge) {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	index := make(map[string]int, len(names))
	nodes := make([]*lnode, len(names))
	for i, n := range names {
		index[n] = i
		w, h := size(n)
		nodes[i] = &lnode{id: n, group: group(n), w: w, h: h}
	}
	var es []ledge
	for _, e := range edges {
		f, okf := index[e[0]]
		t, okt := index[e[1]]
		if okf && okt && f != t {
			es = append(es, ledge{f, t})
		}
	}
	slices.SortFunc(es, func(a, b ledge) int { return cmp.Or(cmp.Compare(a.f, b.f), cmp.Compare(a.t, b.t)) })
	return nodes, slices.Compact(es)
}

// addDummies links the layered vertices by es, giving a long edge a dummy
// vertex in each layer it crosses; an edge closing a cycle is left out.
func addDummies(nodes []*lnode, es []ledge) ([]*lnode, []chain) {
	var chains []chain
	for _, e := range es {
		f, t := nodes[e.f], nodes[e.t]
		if f.layer >= t.layer {
			continue // closes a cycle
		}
		c := chain{from: e.f, to: e.t}
		prev := e.f
		for l := f.layer + 1; l < t.layer; l++ {
			d := len(nodes)
			nodes = append(nodes, &lnode{layer: l, h: dummyH})
			link(nodes, prev, d)
			c.via = append(c.via, d)
			prev = d
		}
		link(nodes, prev, e.t)
		chains = append(chains, c)
	}
	return nodes, chains
}

// routes draws each chain from its source's right side, through its
// dummies' columns, to its target's left side.
func routes(nodes []*lnode, chains []chain, colX, colW []int) []route {
	var rs []route
	for _, c := range chains {
		f, t := nodes[c.from], nodes[c.to]
		r := route{From: f.id, To: t.id}
		r.Points = append(r.Points, point{f.x + f.w, f.y + f.h/2})
		for _, v := range c.via {
			n := nodes[v]
			r.Points = append(r.Points, point{colX[n.layer], n.y + n.h/2}, point{colX[n.layer] + colW[n.layer], n.y + n.h/2})
		}
		r.Points = append(r.Points, point{t.x, t.y + t.h/2})
		rs = append(rs, r)
	}
	return rs
}

// groupBoxes frames each run of vertices of one group within a layer.
func groupBoxes(nodes []*lnode, layers [][]int, colX, colW []int) []groupBox {
	var gs []groupBox
	for l, layer := range layers {
		for i := 0; i < len(layer); {
			g := nodes[layer[i]].group
			j := i + 1
			for j < len(layer) && g != "" && nodes[layer[j]].group == g {
				j++
			}
			if g != "" {
				first, last := nodes[layer[i]], nodes[layer[j-1]]
				gs = append(gs, groupBox{
					Name: g, Layer: l,
					X: colX[l] - groupPadX, Y: first.y - groupPadTop,
					W: colW[l] + 2*groupPadX, H: last.y + last.h + groupPadBottom - (first.y - groupPadTop),
				})
			}
			i = j
		}
	}
	return gs
}

func link(nodes []*lnode, f, t int) {
	nodes[f].down = append(nodes[f].down, t)
	nodes[t].up = append(nodes[t].up, f)
}

// assignLayers sets each of the first n nodes' layer to the length of the
// longest path reaching it from a source (Kahn's algorithm). Nodes on a
// cycle keep the layer their other predecessors give them.
func assignLayers(nodes []*lnode, n int, edges func(yield func(f, t int))) {
	out := make([][]int, n)
	indeg := make([]int, n)
	edges(func(f, t int) {
		out[f] = append(out[f], t)
		indeg[t]++
	})
	var queue []int
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for head := 0; head < len(queue); head++ {
		f := queue[head]
		for _, t := range out[f] {
			nodes[t].layer = max(nodes[t].layer, nodes[f].layer+1)
			if indeg[t]--; indeg[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
}

// order returns the layers, each a list of node indices top to bottom,
// after barycentre sweeps: the ordering with the fewest crossings seen.
func order(nodes []*lnode) [][]int {
	nl := 0
	for _, n := range nodes {
		nl = max(nl, n.layer+1)
	}
	layers := make([][]int, nl)
	// Initial order: connected vertices by name (so the instances of a
	// group are together), then vertices without edges, which the sweeps
	// do not move, so that they end up out of the way at the bottom;
	// dummies come last, in the order their edges were sorted.
	for _, isolated := range []bool{false, true} {
		for i, n := range nodes {
			if (n.id != "" && len(n.up)+len(n.down) == 0) == isolated {
				n.pos = len(layers[n.layer])
				layers[n.layer] = append(layers[n.layer], i)
			}
		}
	}
	best, bestX := cloneLayers(layers), crossings(nodes, layers)
	for s := range sweeps {
		down := s%2 == 0
		for k := range nl {
			l := k
			if !down {
				l = nl - 1 - k
			}
			sortLayer(nodes, layers[l], down)
		}
		if x := crossings(nodes, layers); x < bestX {
			best, bestX = cloneLayers(layers), x
		}
	}
	for _, layer := range best {
		for p, i := range layer {
			nodes[i].pos = p
		}
	}
	return best
}

// sortLayer orders one layer by the mean position of each node's
// neighbours in the previous layer (down) or the next one (up). A node
// without such neighbours keeps its position. The nodes of a group move
// as one unit, placed by their mean, so they stay contiguous; ties keep
// the current order, so the sort is deterministic.
func sortLayer(nodes []*lnode, layer []int, down bool) {
	bary := make(map[int]float64, len(layer))
	for _, i := range layer {
		n := nodes[i]
		adj := n.up
		if !down {
			adj = n.down
		}
		if len(adj) == 0 {
			bary[i] = float64(n.pos)
			continue
		}
		sum := 0
		for _, a := range adj {
			sum += nodes[a].pos
		}
		bary[i] = float64(sum) / float64(len(adj))
	}
	type unit struct {
		members []int
		bary    float64
		first   int // current position of the first member
	}
	var units []*unit
	byGroup := map[string]*unit{}
	for _, i := range layer {
		g := nodes[i].group
		u := byGroup[g]
		if u == nil || g == "" {
			u = &unit{first: nodes[i].pos}
			units = append(units, u)
			if g != "" {
				byGroup[g] = u
			}
		}
		u.members = append(u.members, i)
	}
	for _, u := range units {
		sum := 0.0
		for _, i := range u.members {
			sum += bary[i]
		}
		u.bary = sum / float64(len(u.members))
		slices.SortStableFunc(u.members, func(a, b int) int {
			return cmp.Or(cmp.Compare(bary[a], bary[b]), cmp.Compare(nodes[a].pos, nodes[b].pos))
		})
	}
	slices.SortStableFunc(units, func(a, b *unit) int {
		return cmp.Or(cmp.Compare(a.bary, b.bary), cmp.Compare(a.first, b.first))
	})
	k := 0
	for _, u := range units {
		for _, i := range u.members {
			layer[k] = i
			nodes[i].pos = k
			k++
		}
	}
}

// crossings counts the pairs of edges that cross between adjacent layers
// in the current order.
func crossings(nodes []*lnode, layers [][]int) int {
	total := 0
	for _, layer := range layers {
		var es [][2]int
		for _, i := range layer {
			for _, t := range nodes[i].down {
				es = append(es, [2]int{nodes[i].pos, nodes[t].pos})
			}
		}
		for a := range es {
			for b := a + 1; b < len(es); b++ {
				if (es[a][0]-es[b][0])*(es[a][1]-es[b][1]) < 0 {
					total++
				}
			}
		}
	}
	return total
}

func cloneLayers(layers [][]int) [][]int {
	out := make([][]int, len(layers))
	for i, l := range layers {
		out[i] = slices.Clone(l)
	}
	return out
}

// place gives every node its coordinates: layers are columns as wide as
// their widest box (or group label), boxes are centred in their column
// and stacked top to bottom with room for group frames, and each column
// is centred vertically in the tallest one. It returns each column's
// width, left edge and height.
func place(nodes []*lnode, layers [][]int, labelW func(string) int) (colW, colX, colH []int) {
	nl := len(layers)
	colW, colX, colH = make([]int, nl), make([]int, nl), make([]int, nl)
	for l, layer := range layers {
		for _, i := range layer {
			n := nodes[i]
			colW[l] = max(colW[l], n.w)
			if n.group != "" {
				colW[l] = max(colW[l], labelW(n.group)-2*groupPadX)
			}
		}
	}
	x := margin + groupPadX
	for l := range layers {
		colX[l] = x
		x += colW[l] + gapX
	}
	for l, layer := range layers {
		y := 0
		for k, i := range layer {
			n := nodes[i]
			if k > 0 {
				if prev := nodes[layer[k-1]].group; prev != "" && prev != n.group {
					y += groupPadBottom
				}
				y += gapY
			}
			if n.group != "" && (k == 0 || nodes[layer[k-1]].group != n.group) {
				y += groupPadTop
			}
			n.y = y
			y += n.h
		}
		if len(layer) > 0 && nodes[layer[len(layer)-1]].group != "" {
			y += groupPadBottom
		}
		colH[l] = y
	}
	tallest := slices.Max(append(slices.Clone(colH), 0))
	for l, layer := range layers {
		off := margin + (tallest-colH[l])/2
		for _, i := range layer {
			n := nodes[i]
			n.y += off
			if n.id == "" {
				n.x, n.w = colX[l], colW[l]
			} else {
				n.x = colX[l] + (colW[l]-n.w)/2
			}
		}
	}
	return colW, colX, colH
}
