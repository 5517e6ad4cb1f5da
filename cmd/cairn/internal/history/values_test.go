package history

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// raws turns a map of JSON texts into raw messages.
func raws(m map[string]string) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = json.RawMessage(v)
	}
	return out
}

func TestFlattenMetrics(t *testing.T) {
	tests := map[string]struct {
		in   string
		want map[string]string
	}{
		"nested keys joined with dots": {
			in:   `{"out/e.json": {"acc": 0.9, "loss": {"train": 0.1, "val": {"mean": 0.2}}}}`,
			want: map[string]string{"acc": "0.9", "loss.train": "0.1", "loss.val.mean": "0.2"},
		},
		"leaves: arrays, strings, bools, null, empty objects": {
			in:   `{"m.json": {"hist": [1, 2], "name": "x", "ok": true, "none": null, "empty": {}}}`,
			want: map[string]string{"hist": "[1,2]", "name": `"x"`, "ok": "true", "none": "null", "empty": "{}"},
		},
		"files without common keys share no prefix": {
			in:   `{"a/train.json": {"loss": 1}, "a/eval.json": {"acc": 2}}`,
			want: map[string]string{"loss": "1", "acc": "2"},
		},
		"a key two files share is prefixed with the base names": {
			in:   `{"out/train.json": {"acc": 1, "loss": 3}, "out/eval.json": {"acc": 2}}`,
			want: map[string]string{"train.json:acc": "1", "eval.json:acc": "2", "loss": "3"},
		},
		"equal base names fall back to the paths": {
			in:   `{"a/m.json": {"acc": 1}, "b/m.json": {"acc": 2}}`,
			want: map[string]string{"a/m.json:acc": "1", "b/m.json:acc": "2"},
		},
		"names of the fixed columns are kept apart": {
			in:   `{"m.json": {"run": 1, "phase": 2, "param": {"lr": 3}}}`,
			want: map[string]string{"metric.run": "1", "metric.phase": "2", "metric.param.lr": "3"},
		},
		"a file that is not an object has no columns": {
			in:   `{"m.json": [1, 2]}`,
			want: map[string]string{},
		},
		"no metrics": {in: ``, want: nil},
		"bad JSON":   {in: `{"m.json": `, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := flattenMetrics(json.RawMessage(tc.in))
			if diff := cmp.Diff(raws(tc.want), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlattenParams(t *testing.T) {
	got := flattenParams(raws(map[string]string{"model": `"m1"`, "lr": `0.1`, "opt": `{"beta": [0.9, 0.99], "eps": 1e-8}`, "tags": `["a"]`}))
	want := raws(map[string]string{"param.model": `"m1"`, "param.lr": `0.1`, "param.opt.beta": `[0.9,0.99]`, "param.opt.eps": `1e-8`, "param.tags": `["a"]`})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCellText(t *testing.T) {
	tests := []struct {
		in        string
		precision int
		want      string
	}{
		{`"m1"`, 5, "m1"},
		{`"two\nlines"`, 5, `"two\nlines"`},
		{`0.912345678`, 5, "0.91235"},
		{`0.912345678`, 0, "0.912345678"},
		{`1e-9`, 5, "1e-09"},
		{`123456789`, 5, "123456789"}, // integers are shown whole
		{`1234567.5`, 5, "1.2346e+06"},
		{`true`, 5, "true"},
		{`[1,2]`, 5, "[1,2]"},
	}
	for _, tc := range tests {
		if got := cellText(json.RawMessage(tc.in), tc.precision); got != tc.want {
			t.Errorf("cellText(%s, %d) = %q, want %q", tc.in, tc.precision, got, tc.want)
		}
	}
	if got := cellText(nil, 5); got != "-" {
		t.Errorf("cellText(nil) = %q, want -", got)
	}
	if got := csvText(nil); got != "" {
		t.Errorf("csvText(nil) = %q, want empty", got)
	}
}

func TestNaturalCompare(t *testing.T) {
	in := []string{`seeds["10"]`, `seeds["2"]`, "b", `seeds["02"]`, "a10", "a9", "a", `seeds["1"]`}
	want := []string{"a", "a9", "a10", "b", `seeds["1"]`, `seeds["02"]`, `seeds["2"]`, `seeds["10"]`}
	got := append([]string(nil), in...)
	sort.Slice(got, func(i, j int) bool { return naturalCompare(got[i], got[j]) < 0 })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCompareValues(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{`2`, `10`, -1},       // numbers by value, not text
		{`0.5`, `5e-1`, 0},    // equal values
		{`-1`, `0`, -1},       // negatives
		{`10`, `"abc"`, -1},   // numbers before strings
		{`"m2"`, `"m10"`, -1}, // strings naturally
		{`"b"`, `"a"`, 1},
		{`true`, `false`, 1}, // other values by text
	}
	for _, tc := range tests {
		if got := compareValues(json.RawMessage(tc.a), json.RawMessage(tc.b)); got != tc.want {
			t.Errorf("compareValues(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestWriteTableColor: colour codes do not count towards column widths.
func TestWriteTableColor(t *testing.T) {
	rows := [][]cell{
		{{text: "a"}, {text: "bb"}, {text: "c"}},
		{{text: "long", color: colorRed}, {text: "x", color: colorGreen}, {text: ""}},
	}
	var plain, colored strings.Builder
	if err := writeTable(&plain, rows, false); err != nil {
		t.Fatal(err)
	}
	if err := writeTable(&colored, rows, true); err != nil {
		t.Fatal(err)
	}
	want := "a     bb  c\nlong  x\n"
	if plain.String() != want {
		t.Errorf("plain:\n%q\nwant:\n%q", plain.String(), want)
	}
	stripped := strings.NewReplacer(colorRed, "", colorGreen, "", colorReset, "").Replace(colored.String())
	if stripped != want {
		t.Errorf("coloured, without its codes:\n%q\nwant:\n%q", stripped, want)
	}
	if !strings.Contains(colored.String(), colorRed+"long"+colorReset) {
		t.Errorf("coloured output %q lacks the red cell", colored.String())
	}
}
