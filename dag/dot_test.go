package dag

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/internal/testkit"
)

// dotSpecs is an experiment-shaped graph whose names need escaping.
var dotSpecs = []string{
	`prepare->harden["gpt-4o-mini"]`,
	`prepare->harden["claude"]`,
	`harden["gpt-4o-mini"]->report`,
	`harden["claude"]->report`,
	`prepare->eval\baseline`,
	`eval\baseline->report`,
	`note "draft"`,
	`trailing\`,
}

var dotCases = map[string]DOTOptions{
	"plain": {},
	"clusters": {
		Name:    "experiment",
		RankDir: "TB",
		Cluster: func(v string) (string, string) {
			if strings.HasPrefix(v, "harden[") {
				return "harden", `harden["*"]`
			}
			if strings.HasPrefix(v, "eval") {
				return `eval "x"`, `eval\ phases`
			}
			return "", ""
		},
	},
	"attrs_legend": {
		NodeAttrs: func(v string) map[string]string {
			switch {
			case v == "prepare":
				return map[string]string{"style": "filled", "fillcolor": "palegreen"}
			case strings.HasPrefix(v, "harden"):
				return map[string]string{"style": "filled", "fillcolor": "lightblue", "tooltip": v}
			case v == "report":
				return map[string]string{"style": "dashed"}
			}
			return nil
		},
		Legend: []LegendItem{
			{Label: "ran", Attrs: map[string]string{"style": "filled", "fillcolor": "palegreen"}},
			{Label: "cached", Attrs: map[string]string{"style": "filled", "fillcolor": "lightblue"}},
			{Label: "skipped", Attrs: map[string]string{"style": "dashed", "label": "ignored"}},
		},
	},
}

func TestWriteDOT(t *testing.T) {
	for name, opts := range dotCases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteDOT(&buf, graphOf(dotSpecs...), opts); err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, filepath.Join("testdata", name+".dot"), buf.Bytes())

			// The same graph built in any order renders the same bytes.
			r := rand.New(rand.NewPCG(9, 10))
			for range 10 {
				var again bytes.Buffer
				if err := WriteDOT(&again, shuffled(r, dotSpecs...), opts); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(buf.String(), again.String()); diff != "" {
					t.Fatalf("output depends on insertion order (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestWriteDOTGraphviz checks that Graphviz accepts every golden file. It
// skips when Graphviz is not installed, unless CAIRN_REQUIRE_SERVICES=1
// (as in CI, which installs it), which makes that a failure.
func TestWriteDOTGraphviz(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CAIRN_REQUIRE_SERVICES") == "1" {
			t.Fatalf("Graphviz dot not found (CAIRN_REQUIRE_SERVICES=1; apt-get install graphviz): %v", err)
		}
		t.Skip("Graphviz dot not installed")
	}
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.dot"))
	if err != nil {
		t.Fatal(err)
	}
	if len(goldens) == 0 {
		t.Fatal("no golden DOT files in testdata")
	}
	for _, path := range goldens {
		t.Run(filepath.Base(path), func(t *testing.T) {
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), dot, "-Tsvg")
			cmd.Stdin = bytes.NewReader(in)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("dot -Tsvg %s: %v\n%s", path, err, stderr.Bytes())
			}
			if !bytes.Contains(out, []byte("<svg")) {
				t.Fatalf("dot -Tsvg %s: output is not SVG", path)
			}
		})
	}
}

func TestWriteDOTLegendAvoidsCollisions(t *testing.T) {
	g := graphOf("legend_0", "a")
	var buf bytes.Buffer
	err := WriteDOT(&buf, g, DOTOptions{
		Cluster: func(v string) (string, string) { return "legend", "mine" },
		Legend:  []LegendItem{{Label: "ok"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`subgraph "cluster_legend" {`, `subgraph "cluster_legend_" {`,
		"\t\t\"legend_0\";\n", `"_legend_0" [label="ok"];`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestQuote(t *testing.T) {
	tests := map[string]string{
		"":                 `""`,
		"prepare":          `"prepare"`,
		`harden["x"]`:      `"harden[\"x\"]"`,
		`a\b`:              `"a\\b"`,
		`end\`:             `"end\\"`,
		"two\nlines\r":     `"two\nlines\r"`,
		"ünïcode → arrows": `"ünïcode → arrows"`,
	}
	for in, want := range tests {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWriteDOTClusterLabelFromSmallestVertex(t *testing.T) {
	var buf bytes.Buffer
	err := WriteDOT(&buf, graphOf("b", "a", "c"), DOTOptions{
		Cluster: func(v string) (string, string) { return "all", "from " + v },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "\t\tlabel=\"from a\";\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, buf.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteDOTError(t *testing.T) {
	err := WriteDOT(failWriter{}, graphOf("a->b"), DOTOptions{})
	if err == nil || err.Error() != "disk full" {
		t.Errorf("WriteDOT to a failing writer = %v, want disk full", err)
	}
}
