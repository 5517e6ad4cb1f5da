package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/internal/testkit"
	"github.com/cairn-run/cairn/runrec"
)

// fixtureGraph is the spec graph of testdata/ws/state.json's run, as the
// spec stands now: "plot" was added since (not in the run), "legacy" and
// "escape" were removed.
func fixtureGraph() *dag.Graph {
	var g dag.Graph
	for _, e := range [][2]string{
		{"prepare", `train["small"]`}, {"prepare", `train["large"]`},
		{`train["small"]`, "evaluate"}, {`train["large"]`, "evaluate"},
		{"evaluate", "report"}, {"prepare", "report"}, {"report", "plot"},
	} {
		g.Connect(e[0], e[1])
	}
	return &g
}

func readFixture(t *testing.T) *runrec.RunState {
	t.Helper()
	st, err := runrec.ReadState(filepath.Join("testdata", "ws", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// fixtureInput is the report of the fixture run: every kind of phase
// status, params and metrics, logs read, cut, missing, cached and outside
// the workspace.
func fixtureInput(t *testing.T) Input {
	return Input{
		Run:         readFixture(t),
		Experiment:  "golden",
		Graph:       fixtureGraph(),
		SpecChanged: true,
		Root:        filepath.Join("testdata", "ws"),
		CachedLogs: func(addr string, ps *runrec.PhaseState) ([]byte, []byte, error) {
			if addr != "prepare" {
				return nil, nil, fmt.Errorf("no cached logs for %s", addr)
			}
			return []byte("prepared 3 files\n"), nil, nil
		},
		Version: "v0.0.0-test",
	}
}

func render(t *testing.T, in Input) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	got := render(t, fixtureInput(t))
	testkit.Golden(t, filepath.Join("testdata", "report.golden.html"), []byte(got))
	if again := render(t, fixtureInput(t)); again != got {
		t.Error("two renderings of the same input differ")
	}
}

// What the golden page must show, checked apart from its exact bytes so
// that an -update cannot silently lose it.
func TestPageContent(t *testing.T) {
	page := render(t, fixtureInput(t))
	text := html.UnescapeString(page)
	for _, want := range []string{
		"<title>golden: run 20260105-093000-abc123 (failed)</title>",
		"gpu-box (pid 4242)",
		"12m6s", // duration: 09:30:00 to 09:42:05.5, rounded
		"cost 1.75, 310 iterations of budget 5 (this run: cost 1.25, 300 iterations)",
		"Resumes", "20260105-090000-fff000",
		"8: 3 succeeded, 1 cached, 1 failed, 1 blocked, 1 skipped, 1 not in run",
		"The spec has changed since this run",
		"2 phase(s) of the run are no longer in it",
		// Every phase, in the graph with its status.
		`data-phase="prepare" data-status="cached"`,
		`data-phase="train["small"]" data-status="succeeded"`,
		`data-phase="evaluate" data-status="failed"`,
		`data-phase="report" data-status="blocked"`,
		`data-phase="plot" data-status="not in run"`,
		`data-phase="legacy" data-status="succeeded"`,
		`data-phase="escape" data-status="skipped"`,
		`class="edge" data-from="prepare" data-to="report"`,
		"train (for_each)",
		// Table cells.
		`<td class="num">6m0s</td>`, `<td class="num">2</td>`, `<td class="num">0.75</td>`,
		"<li>param lr 0.1 → 0.01</li>",
		"phase evaluate failed: exit status 2",
		// Params and metrics, flattened.
		`<th class="mono">eval.acc</th>`, `<th class="mono">eval.f1</th>`, `<th class="mono">curve</th>`,
		`<td class="mono">0.91</td>`, `<td class="mono">[1,0.5,0.42]</td>`,
		`<th class="mono">opt.betas</th>`, `<td class="mono">adam</td>`, `<td class="mono">small</td>`,
		// Logs: tails, cut, escaped, cached, missing, refused.
		"step 55 loss 0.45", "stdout (last 40 lines)",
		`warning: <b>bold</b> & "quoted"`,
		"ValueError: shapes (3,) and (4,) not aligned",
		"prepared 3 files", "from the run that produced the cached result",
		"not readable: open testdata/ws/logs/missing.stderr",
		`not read: the log path "../../outside.log" is outside the workspace`,
		"Made by cairn report v0.0.0-test.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"step 15 loss", "ZgotmplZ"} {
		if strings.Contains(text, bad) {
			t.Errorf("page has %q", bad)
		}
	}
	// The failed phase's logs are unfolded, the others folded.
	if !regexp.MustCompile(`<details id="logs-\d+" open>\n<summary><span class="mono">evaluate</span>`).MatchString(page) {
		t.Error("the failed phase's logs are not open")
	}
	if n := strings.Count(page, " open>"); n != 1 {
		t.Errorf("%d log blocks open, want 1", n)
	}
}

// externalRef finds anything that would make the page load a resource.
var externalRef = regexp.MustCompile(`(?i)<script|<link|<img|<iframe|<object|<embed|@import|\b(src|href|xlink:href|action)\s*=\s*["']?\s*[^"'#\s>]|url\(\s*["']?[^#)]`)

func TestSelfContained(t *testing.T) {
	page := render(t, fixtureInput(t))
	if m := externalRef.FindAllString(page, -1); m != nil {
		t.Errorf("page refers outside itself: %q", m)
	}
	if strings.Contains(page, "http") {
		t.Error("page mentions http")
	}
	// The check itself catches what it must.
	for _, s := range []string{`<img src="x">`, `<a href="https://example.com">`, `<script>`, `fill="url(http://x)"`, `<link rel=stylesheet href=a.css>`} {
		if !externalRef.MatchString(s) {
			t.Errorf("externalRef misses %q", s)
		}
	}
}

// Names, logs, errors, params and metrics come from users' specs and
// programs: none of them may become markup.
func TestHostileContentEscaped(t *testing.T) {
	dir := t.TempDir()
	evil := `<script>alert("x")</script>`
	if err := os.WriteFile(filepath.Join(dir, "out.log"), []byte("ok\n"+evil+"\n<img src=x onerror=alert(1)>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := 1
	phase := `p["` + evil + `"]`
	st := &runrec.RunState{
		RunID: `r<script>`, Status: runrec.RunFailed, Host: evil, Spec: evil,
		Request: runrec.Request{Targets: []string{evil}},
		Phases: map[string]*runrec.PhaseState{
			phase: {
				Status: runrec.StatusFailed, ExitCode: &code, Error: "</td>" + evil, Reasons: []string{evil},
				Stdout: "out.log", Stderr: "out.log", LogTail: evil,
				Metrics: json.RawMessage(`{"<script>m.json": {"<script>k": "` + strings.ReplaceAll(evil, `"`, `\"`) + `"}}`),
				Params:  map[string]json.RawMessage{"<script>": json.RawMessage(`"` + strings.ReplaceAll(evil, `"`, `\"`) + `"`)},
			},
			evil: {Status: evil},
		},
	}
	var g dag.Graph
	g.Connect(phase, evil)
	g.Add("</svg><script>")
	page := render(t, Input{Run: st, Experiment: evil, Graph: &g, Root: dir, SpecError: errors.New(evil)})
	for _, bad := range []string{"<script", "<img", "</svg><", `"x")`} {
		if strings.Contains(strings.ToLower(page), strings.ToLower(bad)) {
			t.Errorf("page contains %q unescaped", bad)
		}
	}
	if n := strings.Count(page, "&lt;script&gt;"); n < 10 {
		t.Errorf("page shows the hostile text escaped %d times, want it everywhere it appears (10 or more)", n)
	}
}

func TestNoSpecGraph(t *testing.T) {
	in := fixtureInput(t)
	in.Graph, in.SpecChanged = nil, false
	in.SpecError = errors.New("experiment.hcl:3,1-2: Unclosed configuration block")
	page := html.UnescapeString(render(t, in))
	if !strings.Contains(page, "The spec could not be loaded (experiment.hcl:3,1-2: Unclosed configuration block), so the phases are drawn from the run record alone, without their dependencies.") {
		t.Error("page does not say why the graph has no edges")
	}
	if strings.Contains(page, `class="edge"`) {
		t.Error("edges drawn without a spec")
	}
	if strings.Contains(page, "plot") {
		t.Error("a phase of no spec drawn")
	}
	for a := range in.Run.Phases {
		if !strings.Contains(page, `data-phase="`+a+`"`) {
			t.Errorf("phase %s of the record not drawn", a)
		}
	}
	// Instances are still framed together, by their address.
	if !strings.Contains(page, "train (for_each)") {
		t.Error("instances not grouped by address")
	}
}

func TestMetricsTable(t *testing.T) {
	st := readFixture(t)
	addrs := []string{"prepare", `train["small"]`, `train["large"]`, "evaluate"}
	got := metricsTable(addrs, st.Phases)
	want := valueTable{
		Columns: []string{"curve", "eval.acc", "eval.f1", "loss"},
		Rows: []valueRow{
			{Phase: `train["small"]`, Cells: []string{"[1,0.5,0.42]", "0.91", "0.88", "0.42"}},
			{Phase: `train["large"]`, Cells: []string{"", "0.95", "", "0.31"}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	gotP := paramsTable(addrs, st.Phases)
	wantP := valueTable{
		Columns: []string{"lr", "model", "opt.betas", "opt.name"},
		Rows: []valueRow{
			{Phase: `train["small"]`, Cells: []string{"0.01", "small", "[0.9,0.999]", "adam"}},
			{Phase: `train["large"]`, Cells: []string{"0.01", "large", "", ""}},
		},
	}
	if diff := cmp.Diff(wantP, gotP); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
}

func TestMetricsTableShapes(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := map[string]struct {
		metrics map[string]string // phase -> Metrics JSON
		want    valueTable
	}{
		"several files are prefixed": {
			metrics: map[string]string{
				"a": `{"m.json": {"acc": 1}, "extra/n.json": {"x": {"y": true}}}`,
				"b": `{"m.json": {"acc": 2}}`,
			},
			want: valueTable{
				Columns: []string{"extra/n.json: x.y", "m.json: acc"},
				Rows:    []valueRow{{"a", []string{"true", "1"}}, {"b", []string{"", "2"}}},
			},
		},
		"bare values, null, empty object, long string": {
			metrics: map[string]string{
				"a": `{"score.json": 0.5}`,
				"b": `{"m.json": {"n": null, "e": {}, "s": "` + long + `", "big": 12345678901234567890}}`,
			},
			want: valueTable{
				Columns: []string{"big", "e", "n", "s", "score.json"},
				Rows: []valueRow{
					{"a", []string{"", "", "", "", "0.5"}},
					{"b", []string{"12345678901234567890", "{}", "null", strings.Repeat("x", maxCell-1) + "…", ""}},
				},
			},
		},
		"not an object": {
			metrics: map[string]string{"a": `[1,2]`, "b": `null`, "c": ``},
			want: valueTable{
				Columns: []string{"(unreadable)"},
				Rows:    []valueRow{{"a", []string{"not a JSON object: [1,2]"}}},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			phases := map[string]*runrec.PhaseState{}
			var addrs []string
			for _, a := range []string{"a", "b", "c"} {
				if m, ok := tt.metrics[a]; ok {
					phases[a] = &runrec.PhaseState{Metrics: json.RawMessage(m)}
					addrs = append(addrs, a)
				}
			}
			got := metricsTable(addrs, phases)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTailOf(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"", 3, "", false},
		{"a\n", 3, "a", false},
		{"a\nb\nc", 3, "a\nb\nc", false},
		{"a\nb\nc\n", 3, "a\nb\nc", false},
		{"a\nb\nc\nd\n", 3, "b\nc\nd", true},
		{"\n\n\n\n", 2, "\n", true},
	}
	for _, tt := range tests {
		got, cut := tailOf([]byte(tt.in), tt.n)
		if got != tt.want || cut != tt.cut {
			t.Errorf("tailOf(%q, %d) = %q, %v; want %q, %v", tt.in, tt.n, got, cut, tt.want, tt.cut)
		}
	}
}

func TestReadTailLargeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.log")
	var b bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	text, cut, err := readTail(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text, "\n")
	if len(lines) != tailLines || lines[0] != "line 19960" || lines[len(lines)-1] != "line 19999" || !cut {
		t.Errorf("tail of a big log: %d lines from %q to %q (cut %v), want %d lines from line 19960 to line 19999, cut", len(lines), lines[0], lines[len(lines)-1], cut, tailLines)
	}
	// One line longer than the read window: its end is shown, cut.
	long := strings.Repeat("y", 2*tailBytes)
	if err := os.WriteFile(path, []byte("first\n"+long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, cut, err = readTail(path)
	if err != nil || len(text) != tailBytes-1 || !cut {
		t.Errorf("tail of one huge line: %d bytes, cut %v, err %v; want %d bytes, cut", len(text), cut, err, tailBytes-1)
	}
}
