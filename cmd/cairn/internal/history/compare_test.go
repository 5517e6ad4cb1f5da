package history

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/internal/testkit"
)

// TestCompareGolden renders the comparison of the fixture runs: changes
// only, everything, JSON.
func TestCompareGolden(t *testing.T) {
	runs := fixtureRuns()
	c := Compare(runs[0], runs[1])
	tests := map[string]func(*bytes.Buffer) error{
		"compare.txt":      func(b *bytes.Buffer) error { return c.WriteText(b, false, 5, false) },
		"compare-all.txt":  func(b *bytes.Buffer) error { return c.WriteText(b, true, 5, false) },
		"compare.json":     func(b *bytes.Buffer) error { return c.WriteJSON(b, false) },
		"compare-same.txt": func(b *bytes.Buffer) error { return Compare(runs[1], runs[1]).WriteText(b, false, 5, false) },
	}
	for name, render := range tests {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := render(&b); err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, filepath.Join("testdata", "metrics", name), b.Bytes())
		})
	}
}

// TestCompareColor: on a terminal the marker and the changed values are
// coloured, and only those.
func TestCompareColor(t *testing.T) {
	runs := fixtureRuns()
	c := Compare(runs[0], runs[1])
	var plain, colored bytes.Buffer
	if err := c.WriteText(&plain, true, 5, false); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteText(&colored, true, 5, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("plain output holds colour codes:\n%s", plain.String())
	}
	stripped := strings.NewReplacer(colorYellow, "", colorRed, "", colorGreen, "", colorReset, "").Replace(colored.String())
	if stripped != plain.String() {
		t.Errorf("coloured output without its codes differs from the plain one:\n%s", colored.String())
	}
	for _, line := range strings.Split(colored.String(), "\n") {
		marked := strings.HasPrefix(line, colorYellow+"*")
		if strings.Contains(line, "\x1b[") != marked {
			t.Errorf("line %q: colour without the change marker, or the reverse", line)
		}
	}
	if !strings.Contains(colored.String(), colorRed+"0.1"+colorReset) || !strings.Contains(colored.String(), colorGreen+"0.2"+colorReset) {
		t.Errorf("the changed lr is not coloured:\n%s", colored.String())
	}
}

func TestCompareRows(t *testing.T) {
	runs := fixtureRuns()
	c := Compare(runs[0], runs[1])
	type row struct {
		phase, field, a, b string
		changed            bool
	}
	got := map[string]row{}
	for _, r := range c.rows {
		got[r.phase+" "+r.field] = row{r.phase, r.field, cellText(r.a, 0), cellText(r.b, 0), r.changed}
	}
	want := map[string]row{
		// A change in value, one by number only in form, one missing on a side.
		`train["m1"] param.lr`:  {`train["m1"]`, "param.lr", "0.1", "0.2", true},
		`train["m10"] loss`:     {`train["m10"]`, "loss", "0.5", "0.5", false},
		`train["m2"] loss`:      {`train["m2"]`, "loss", "-", "0.125", true},
		`train["m2"] status`:    {`train["m2"]`, "status", "failed", "succeeded", true},
		`train["m10"] duration`: {`train["m10"]`, "duration", "31000", "4", true},
		// Durations within a second or 10% are the same.
		`train["m1"] duration`: {`train["m1"]`, "duration", "30000", "29500", false},
		`prepare duration`:     {"prepare", "duration", "1200", "3", true},
		`(run) cost`:           {"(run)", "cost", "1.5", "1.25", true},
	}
	for k, w := range want {
		if diff := cmp.Diff(w, got[k], cmp.AllowUnexported(row{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	// A phase without spending has no cost rows.
	if _, ok := got["report cost"]; ok {
		t.Error("report has a cost row, though neither run spent anything on it")
	}
}

func TestCompareJSONShape(t *testing.T) {
	runs := fixtureRuns()
	var b bytes.Buffer
	if err := Compare(runs[0], runs[1]).WriteJSON(&b, true); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		A, B        string
		Differences int
		Rows        []struct {
			Phase, Field string
			A, B         any
			Changed      bool
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.A != runs[0].RunID || doc.B != runs[1].RunID {
		t.Errorf("runs %s, %s", doc.A, doc.B)
	}
	for _, r := range doc.Rows {
		if r.Field == "duration" {
			t.Errorf("a duration row is named duration, want duration_ms")
		}
		if r.Phase == `train["m2"]` && r.Field == "acc" && (r.A != nil || r.B != 0.9123456) {
			t.Errorf("m2 acc: a=%v b=%v, want null and 0.9123456", r.A, r.B)
		}
	}
}
