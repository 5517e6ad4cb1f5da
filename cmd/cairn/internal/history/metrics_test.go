package history

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/internal/testkit"
	"github.com/cairn-run/cairn/runrec"
)

// fixtureRuns are two runs of a sweep, oldest first: the second changes
// lr for m1 (new metrics), finishes m2 that failed the first time, finds
// m10 cached and skips a phase.
func fixtureRuns() []*runrec.RunState {
	at := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	ended := func(s string) *time.Time { t := at(s); return &t }
	a := &runrec.RunState{
		RunID: "20250301-100000-aaaaaa", Status: runrec.RunFailed,
		Started: at("2025-03-01T10:00:00Z"), Ended: ended("2025-03-01T10:01:30Z"),
		Spent: runrec.Spend{Cost: 1.5, Iterations: 30},
		Phases: map[string]*runrec.PhaseState{
			"prepare": {Status: runrec.StatusSucceeded, DurationMS: 1200},
			`train["m1"]`: {Status: runrec.StatusSucceeded, DurationMS: 30000, Cost: 0.5, Iterations: 10,
				Params:  raws(map[string]string{"model": `"m1"`, "lr": `0.1`, "opt": `{"beta":0.9}`}),
				Metrics: json.RawMessage(`{"out/eval-m1.json":{"acc":0.75,"note":"a, \"quoted\" note"},"out/train-m1.json":{"acc":0.8,"loss":0.25}}`)},
			`train["m10"]`: {Status: runrec.StatusSucceeded, DurationMS: 31000, Cost: 1, Iterations: 20,
				Params:  raws(map[string]string{"model": `"m10"`, "lr": `0.1`}),
				Metrics: json.RawMessage(`{"out/train-m10.json":{"acc":0.6,"loss":0.5}}`)},
			`train["m2"]`: {Status: runrec.StatusFailed, DurationMS: 500, Error: "phase train[\"m2\"] failed: exit status 1",
				Params: raws(map[string]string{"model": `"m2"`, "lr": `0.1`})},
			"report": {Status: runrec.StatusBlocked, Params: raws(map[string]string{"format": `"md"`})},
		},
	}
	b := &runrec.RunState{
		RunID: "20250302-090000-bbbbbb", Status: runrec.RunSucceeded,
		Started: at("2025-03-02T09:00:00Z"), Ended: ended("2025-03-02T09:01:00Z"),
		Spent: runrec.Spend{Cost: 1.25, Iterations: 25},
		Phases: map[string]*runrec.PhaseState{
			"prepare": {Status: runrec.StatusCached, DurationMS: 3},
			`train["m1"]`: {Status: runrec.StatusSucceeded, DurationMS: 29500, Cost: 0.5, Iterations: 10,
				Params:  raws(map[string]string{"model": `"m1"`, "lr": `0.2`, "opt": `{"beta":0.9}`}),
				Metrics: json.RawMessage(`{"out/eval-m1.json":{"acc":0.78,"note":"line one\nline two"},"out/train-m1.json":{"acc":0.85,"loss":0.2}}`)},
			`train["m10"]`: {Status: runrec.StatusCached, DurationMS: 4,
				Params:  raws(map[string]string{"model": `"m10"`, "lr": `0.1`}),
				Metrics: json.RawMessage(`{"out/train-m10.json":{"acc":0.6,"loss":0.5}}`)},
			`train["m2"]`: {Status: runrec.StatusSucceeded, DurationMS: 12000, Cost: 0.75, Iterations: 15,
				Params:  raws(map[string]string{"model": `"m2"`, "lr": `0.1`}),
				Metrics: json.RawMessage(`{"out/train-m2.json":{"acc":0.9123456,"loss":0.125}}`)},
			"report": {Status: runrec.StatusSucceeded, DurationMS: 100, Params: raws(map[string]string{"format": `"md"`})},
		},
	}
	return []*runrec.RunState{a, b}
}

// newestFirst is fixtureRuns as cairn metrics selects them.
func newestFirst() []*runrec.RunState {
	runs := fixtureRuns()
	slices.Reverse(runs)
	return runs
}

// TestMetricsGolden renders the table of the fixture runs as text, JSON
// and CSV, unsorted and sorted.
func TestMetricsGolden(t *testing.T) {
	tests := map[string]struct {
		phases []string
		sort   string
		desc   bool
		render func(*MetricsTable, *bytes.Buffer) error
	}{
		"table":        {render: func(m *MetricsTable, b *bytes.Buffer) error { return m.WriteText(b, 5) }},
		"table-sorted": {sort: "loss", desc: true, render: func(m *MetricsTable, b *bytes.Buffer) error { return m.WriteText(b, 5) }},
		"table-train":  {phases: []string{"train"}, sort: "param.lr", render: func(m *MetricsTable, b *bytes.Buffer) error { return m.WriteText(b, 0) }},
		"json":         {render: func(m *MetricsTable, b *bytes.Buffer) error { return m.WriteJSON(b) }},
		"csv":          {render: func(m *MetricsTable, b *bytes.Buffer) error { return m.WriteCSV(b) }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := BuildMetrics(newestFirst(), tc.phases)
			if err != nil {
				t.Fatal(err)
			}
			if tc.sort != "" {
				if err := m.SortBy(tc.sort, tc.desc); err != nil {
					t.Fatal(err)
				}
			}
			var b bytes.Buffer
			if err := tc.render(m, &b); err != nil {
				t.Fatal(err)
			}
			ext := map[string]string{"json": ".json", "csv": ".csv"}[name]
			if ext == "" {
				ext = ".txt"
			}
			testkit.Golden(t, filepath.Join("testdata", "metrics", name+ext), b.Bytes())
		})
	}
}

// TestMetricsJSONValid: the JSON is an array of objects whose values keep
// their JSON types.
func TestMetricsJSONValid(t *testing.T) {
	m, err := BuildMetrics(newestFirst(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := m.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil {
		t.Fatalf("not a JSON array of objects: %v\n%s", err, b.String())
	}
	if len(rows) != len(m.rows) {
		t.Fatalf("%d objects, want %d", len(rows), len(m.rows))
	}
	if v, ok := rows[1]["param.lr"].(float64); !ok || v != 0.2 {
		t.Errorf(`rows[1]["param.lr"] = %#v, want the number 0.2`, rows[1]["param.lr"])
	}
	if _, ok := rows[0]["param.lr"]; ok {
		t.Errorf("rows[0] (report) has a param.lr member; missing values are left out")
	}
}

// TestMetricsCSVQuoting: commas, quotes and newlines survive a round trip
// through a CSV reader.
func TestMetricsCSVQuoting(t *testing.T) {
	m := &MetricsTable{
		metricCols: []string{"note", "acc"},
		rows: []metricsRow{
			{run: "r1", phase: `train["m1"]`, values: raws(map[string]string{"note": `"a, \"quoted\" note"`, "acc": `0.5`})},
			{run: "r1", phase: "p,2", values: raws(map[string]string{"note": `"line one\nline two"`})},
			{run: "r1", phase: "p3", values: raws(map[string]string{"note": `" leading space"`, "acc": `[1,2]`})},
		},
	}
	var b bytes.Buffer
	if err := m.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	got, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatalf("output is not CSV: %v\n%s", err, b.String())
	}
	want := [][]string{
		{"run", "phase", "note", "acc"},
		{"r1", `train["m1"]`, `a, "quoted" note`, "0.5"},
		{"r1", "p,2", "line one\nline two", ""},
		{"r1", "p3", " leading space", "[1,2]"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s\n%s", diff, b.String())
	}
}

func TestMetricsSort(t *testing.T) {
	table := func() *MetricsTable {
		return &MetricsTable{
			paramCols:  []string{"param.model"},
			metricCols: []string{"acc"},
			rows: []metricsRow{
				{run: "r2", phase: "a", values: raws(map[string]string{"param.model": `"m10"`, "acc": `10`})},
				{run: "r2", phase: "b", values: raws(map[string]string{"param.model": `"m2"`})},
				{run: "r1", phase: "c", values: raws(map[string]string{"param.model": `"m1"`, "acc": `9.5`})},
				{run: "r1", phase: "d", values: raws(map[string]string{"param.model": `"m3"`, "acc": `10`})},
				{run: "r1", phase: "e", values: raws(map[string]string{"acc": `-1`})},
			},
		}
	}
	tests := map[string]struct {
		col  string
		desc bool
		want []string // phases in order
	}{
		"numbers by value, ties keep their order, missing last": {"acc", false, []string{"e", "c", "a", "d", "b"}},
		"descending, missing still last":                        {"acc", true, []string{"a", "d", "c", "e", "b"}},
		"strings naturally":                                     {"param.model", false, []string{"c", "b", "d", "a", "e"}},
		"fixed columns":                                         {"run", false, []string{"c", "d", "e", "a", "b"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := table()
			if err := m.SortBy(tc.col, tc.desc); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range m.rows {
				got = append(got, r.phase)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	err := table().SortBy("accuracy", false)
	if err == nil || !strings.Contains(err.Error(), "--sort accuracy: no such column; columns: run, phase, param.model, acc") {
		t.Errorf("unknown column: error %v", err)
	}
}

func TestMetricsPhaseFilter(t *testing.T) {
	m, err := BuildMetrics(newestFirst(), []string{`train["m2"]`, "prepare"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.rows {
		got = append(got, r.run+" "+r.phase)
	}
	// prepare has neither params nor metrics; m2 failed in the older run
	// but did run, so its params are shown.
	want := []string{`20250302-090000-bbbbbb train["m2"]`, `20250301-100000-aaaaaa train["m2"]`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, err = BuildMetrics(newestFirst(), []string{"trian"})
	if err == nil || !strings.Contains(err.Error(), `unknown phase "trian"; did you mean "train"?`) {
		t.Errorf("unknown phase: error %v", err)
	}
}
