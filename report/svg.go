package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Text metrics of the drawing. The SVG uses a monospace font, whose
// advance is 0.6em in every common face, so widths can be computed
// without fonts.
const (
	nameSize  = 12 // px, phase names
	smallSize = 11 // px, status lines, group and legend labels
	charW     = 0.6
	boxPadX   = 12
	boxH      = 40
	minBoxW   = 90
	maxLabel  = 36 // runes of a name shown in its box; the whole name is in its tooltip
	swatch    = 14
)

// graphView is the drawing as the template writes it.
type graphView struct {
	W, H   int
	Nodes  []nodeView
	Edges  []edgeView
	Groups []groupView
	Legend []legendView
}

type nodeView struct {
	Name   string // the phase address, whole
	Label  string // the name as shown, maybe cut
	Sub    string // status, and duration when there is one
	Status string
	Layer  int
	X, Y   int
	W, H   int
	TextX  int
	NameY  int
	SubY   int
	Style  style
	Dash   string // stroke-dasharray, "" for a solid border
}

type edgeView struct {
	From, To string
	D        string // SVG path data
}

type groupView struct {
	Label        string
	X, Y, W, H   int
	LabelX, LabY int
}

type legendView struct {
	Label        string
	X, Y         int
	TextX, TextY int
	Style        style
	Dash         string
	Group        bool // the swatch of a for_each frame
}

// textW is the width of s in the drawing's monospace font of size px.
func textW(s string, px int) int {
	return int(math.Ceil(float64(utf8.RuneCountInString(s)) * float64(px) * charW))
}

// shortLabel cuts a long phase name for its box.
func shortLabel(name string) string {
	if utf8.RuneCountInString(name) <= maxLabel {
		return name
	}
	r := []rune(name)
	return string(r[:maxLabel-1]) + "…"
}

func groupLabel(g string) string { return g + " (for_each)" }

// drawGraph lays out and styles the phases: names are every phase to draw,
// edges the spec's edges between them, status and sub what each box says.
func drawGraph(names []string, edges [][2]string, group func(string) string, status func(string) string, sub func(string) string) graphView {
	size := func(n string) (int, int) {
		w := max(textW(shortLabel(n), nameSize), textW(sub(n), smallSize)) + 2*boxPadX
		return max(w, minBoxW), boxH
	}
	labelW := func(g string) int { return textW(groupLabel(g), smallSize) + 2*groupPadX + 8 }
	d := layoutGraph(names, edges, group, size, labelW)

	v := graphView{W: d.W, H: d.H}
	for _, b := range d.Boxes {
		st := status(b.ID)
		n := nodeView{
			Name: b.ID, Label: shortLabel(b.ID), Sub: sub(b.ID), Status: st, Layer: b.Layer,
			X: b.X, Y: b.Y, W: b.W, H: b.H,
			TextX: b.X + b.W/2, NameY: b.Y + 17, SubY: b.Y + 32,
			Style: styleOf(st),
		}
		if n.Style.Dashed {
			n.Dash = "4 3"
		}
		v.Nodes = append(v.Nodes, n)
	}
	for _, r := range d.Routes {
		v.Edges = append(v.Edges, edgeView{From: r.From, To: r.To, D: pathData(r.Points)})
	}
	for _, g := range d.Groups {
		v.Groups = append(v.Groups, groupView{Label: groupLabel(g.Name), X: g.X, Y: g.Y, W: g.W, H: g.H, LabelX: g.X + 8, LabY: g.Y + 15})
	}

	// The legend: the statuses drawn, in a fixed order, then the group
	// frame if there is one, in rows under the graph.
	present := map[string]bool{}
	for _, n := range v.Nodes {
		present[n.Status] = true
	}
	var items []legendView
	for _, s := range statusOrder {
		if present[s] {
			items = append(items, legendView{Label: statusLabel(s), Style: styleOf(s)})
			delete(present, s)
		}
	}
	var unknown []string
	for s := range present {
		unknown = append(unknown, s)
	}
	slices.Sort(unknown)
	for _, s := range unknown {
		items = append(items, legendView{Label: statusLabel(s), Style: styleOf(s)})
	}
	if len(v.Groups) > 0 {
		items = append(items, legendView{Label: "for_each instances", Group: true})
	}
	width := max(v.W, 640)
	x, y := margin, v.H
	for _, it := range items {
		w := swatch + 6 + textW(it.Label, smallSize) + 18
		if x > margin && x+w > width-margin {
			x, y = margin, y+swatch+10
		}
		it.X, it.Y = x, y
		it.TextX, it.TextY = x+swatch+6, y+11
		if it.Style.Dashed {
			it.Dash = "3 2"
		}
		v.Legend = append(v.Legend, it)
		x += w
		v.W = max(v.W, x)
	}
	if len(items) > 0 {
		v.H = y + swatch + margin
	}
	return v
}

// pathData draws a route: curves with horizontal tangents between
// layers, straight lines through the layers a long edge crosses (the
// route's points come in pairs there).
func pathData(pts []point) string {
	var b strings.Builder
	fmt.Fprintf(&b, "M%d %d", pts[0].X, pts[0].Y)
	for i := 1; i < len(pts); i++ {
		p, q := pts[i-1], pts[i]
		if i%2 == 0 {
			fmt.Fprintf(&b, " L%d %d", q.X, q.Y)
			continue
		}
		mx := (p.X + q.X) / 2
		fmt.Fprintf(&b, " C%d %d %d %d %d %d", mx, p.Y, mx, q.Y, q.X, q.Y)
	}
	return b.String()
}
