package dag

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/internal/testkit"
)

// drawSpecs is an experiment with a three-instance sweep; names need
// escaping in every format.
var drawSpecs = []string{
	`prepare->harden["m1"]`,
	`prepare->harden["m#2"]`,
	`prepare->harden["<b>&'x'"]`,
	`harden["m1"]->report`,
	`harden["m#2"]->report`,
	`harden["<b>&'x'"]->report`,
	"prepare->eval\\`raw`",
	"eval\\`raw`->report",
	"note\nline two",
}

// harden splits an instance address harden["KEY"] as spec would.
func harden(v string) (phase, key string, ok bool) {
	if rest, found := strings.CutPrefix(v, `harden["`); found {
		return "harden", strings.TrimSuffix(rest, `"]`), true
	}
	return "", "", false
}

var drawStatuses = []StatusStyle{
	{Name: "run", Fill: "#ffe08a"},
	{Name: "cached", Fill: "#c3ecc3"},
	{Name: "failed", Fill: "lightcoral"},
	{Name: "restore", Fill: "#a8d8ff"}, // occurs nowhere: not in the legend
}

var drawCases = map[string]Drawing{
	"plain": {},
	"groups": {
		Name:      `sweep "v2"`,
		Direction: "TB",
		Group: func(v string) (string, string) {
			if _, _, ok := harden(v); ok {
				return "harden", "harden (for_each)"
			}
			return "", ""
		},
		Instance: harden,
	},
	"status": {
		Name: "sweep",
		Group: func(v string) (string, string) {
			if _, _, ok := harden(v); ok {
				return "harden", "harden (for_each)"
			}
			return "", ""
		},
		Instance: harden,
		Status: func(v string) string {
			switch {
			case v == "prepare", v == `harden["m1"]`:
				return "cached"
			case v == `harden["m#2"]`:
				return "failed"
			case v == "report":
				return "blocked" // not in Statuses: white, listed last
			case strings.HasPrefix(v, "harden"), strings.HasPrefix(v, "eval"):
				return "run"
			}
			return "" // the note: no status, no colour
		},
		Statuses: drawStatuses,
	},
}

var drawFormats = map[string]func(io.Writer, *Graph, Drawing) error{
	"dot":  func(w io.Writer, g *Graph, d Drawing) error { return WriteDOT(w, g, d.DOTOptions(g)) },
	"mmd":  WriteMermaid,
	"json": WriteJSON,
}

// TestDrawing renders every drawing in every format against the goldens
// testdata/draw_<case>.<format> (TestWriteDOTGraphviz also feeds the DOT
// ones to Graphviz), and checks the bytes do not depend on the order the
// graph was built in.
func TestDrawing(t *testing.T) {
	for name, d := range drawCases {
		for ext, write := range drawFormats {
			t.Run(name+"."+ext, func(t *testing.T) {
				var buf bytes.Buffer
				if err := write(&buf, graphOf(drawSpecs...), d); err != nil {
					t.Fatal(err)
				}
				testkit.Golden(t, filepath.Join("testdata", "draw_"+name+"."+ext), buf.Bytes())

				r := rand.New(rand.NewPCG(3, 4))
				for range 10 {
					var again bytes.Buffer
					if err := write(&again, shuffled(r, drawSpecs...), d); err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(buf.String(), again.String()); diff != "" {
						t.Fatalf("output depends on insertion order (-want +got):\n%s", diff)
					}
				}
			})
		}
	}
}

func TestWriteJSONShape(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, graphOf(drawSpecs...), drawCases["status"]); err != nil {
		t.Fatal(err)
	}
	var got JSONGraph
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.Bytes())
	}
	key := "m#2"
	want := JSONNode{ID: `harden["m#2"]`, Phase: "harden", InstanceKey: &key, Group: "harden", Status: "failed"}
	var found bool
	for _, n := range got.Nodes {
		if n.ID == want.ID {
			found = true
			if diff := cmp.Diff(want, n); diff != "" {
				t.Errorf("node %s (-want +got):\n%s", want.ID, diff)
			}
		}
		if _, _, ok := harden(n.ID); !ok && (n.InstanceKey != nil || n.Group != "" || n.Phase != n.ID) {
			t.Errorf("node %q is no instance, yet has %+v", n.ID, n)
		}
	}
	if !found {
		t.Errorf("no node %s in %+v", want.ID, got.Nodes)
	}
	if got.Name != "sweep" || len(got.Nodes) != 7 || len(got.Edges) != 8 {
		t.Errorf("got name %q, %d nodes, %d edges; want sweep, 7, 8", got.Name, len(got.Nodes), len(got.Edges))
	}
}

// TestWriteJSONEmpty: an empty graph has [] nodes and edges, never null.
func TestWriteJSONEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &Graph{}, Drawing{}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"name\": \"cairn\",\n  \"nodes\": [],\n  \"edges\": []\n}\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMermaidLabel(t *testing.T) {
	tests := map[string]string{
		"prepare":           `["prepare"]`,
		`harden["m1"]`:      `["harden[#quot;m1#quot;]"]`,
		"#quot;":            `["#35;quot;"]`,
		"a<b>&c":            `["a#60;b#62;#38;c"]`,
		"`md`":              `["#96;md#96;"]`,
		"two\nlines\r\tend": `["two#10;lines#13;#9;end"]`,
		"ünïcode → (x)":     `["ünïcode → (x)"]`,
		"end":               `["end"]`,
		"%%{init: {}}%%":    `["#37;#37;{init: {}}#37;#37;"]`,
		"":                  `[" "]`,
	}
	for in, want := range tests {
		if got := mermaidLabel(in); got != want {
			t.Errorf("mermaidLabel(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestMermaidClasses(t *testing.T) {
	got := mermaidClasses([]StatusStyle{{Name: "timed_out"}, {Name: "odd name"}, {Name: "0"}, {Name: "x"}})
	want := map[string]string{"timed_out": "status_timed_out", "odd name": "status_1", "0": "status_0", "x": "status_x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A generated name that a real status already took gets a suffix.
	got = mermaidClasses([]StatusStyle{{Name: "1"}, {Name: "a b"}})
	want = map[string]string{"1": "status_1", "a b": "status_1_"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestWriteMermaidRejects(t *testing.T) {
	status := func(string) string { return "run" }
	tests := map[string]struct {
		d    Drawing
		want string
	}{
		"direction": {Drawing{Direction: "up"}, `direction "up": want LR or TB`},
		"fill": {
			Drawing{Status: status, Statuses: []StatusStyle{{Name: "run", Fill: "red;stroke:blue"}}},
			`status "run": fill "red;stroke:blue" is not a colour name or #rrggbb`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteMermaid(&buf, graphOf("a"), tt.d)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if buf.Len() > 0 {
				t.Errorf("wrote %q before failing", buf.String())
			}
		})
	}
}

func TestDrawingWriteErrors(t *testing.T) {
	for ext, write := range drawFormats {
		err := write(failWriter{}, graphOf("a->b"), drawCases["status"])
		if err == nil || err.Error() != "disk full" {
			t.Errorf("%s to a failing writer = %v, want disk full", ext, err)
		}
	}
}

// TestDrawingDefaultFill: a status without a colour is drawn white in
// every format that draws colours.
func TestDrawingDefaultFill(t *testing.T) {
	d := Drawing{Status: func(string) string { return "run" }, Statuses: []StatusStyle{{Name: "run"}}}
	wants := map[string]string{
		"dot": `"a" [fillcolor="#ffffff", style="filled"];`,
		"mmd": "classDef status_run fill:#ffffff,stroke:#333,color:#000\n",
	}
	for ext, want := range wants {
		var buf bytes.Buffer
		if err := drawFormats[ext](&buf, graphOf("a"), d); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("%s output lacks %q:\n%s", ext, want, buf.String())
		}
	}
}
