package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairn-run/cairn/runrec"
)

// maxCell is the longest value a table cell shows, in runes; arrays and
// long strings are cut there with an ellipsis.
const maxCell = 80

// valueTable is a phases-by-keys table of params or metrics: one row per
// phase that has any value, one column per flattened key, sorted.
type valueTable struct {
	Columns []string
	Rows    []valueRow
}

type valueRow struct {
	Phase string
	Cells []string // one per column; "" where the phase has no such key
}

// paramsTable tabulates the phases' params, nested objects flattened to
// name.key.
func paramsTable(addrs []string, phases map[string]*runrec.PhaseState) valueTable {
	values := map[string]map[string]string{}
	for _, a := range addrs {
		ps := phases[a]
		if ps == nil || len(ps.Params) == 0 {
			continue
		}
		out := map[string]string{}
		for name, raw := range ps.Params {
			flatten(name, raw, out)
		}
		values[a] = out
	}
	return tabulate(addrs, values)
}

// metricsTable tabulates the phases' metrics. Each phase's Metrics is an
// object with a member per metrics file; when every phase has at most one
// file the columns are the flattened keys inside it (so instances that
// write train/m.json and eval/m.json line up), otherwise each key is
// prefixed with its file: "eval/m.json: acc".
func metricsTable(addrs []string, phases map[string]*runrec.PhaseState) valueTable {
	files := map[string]map[string]json.RawMessage{}
	prefix := false
	values := map[string]map[string]string{}
	for _, a := range addrs {
		ps := phases[a]
		if ps == nil || len(bytes.TrimSpace(ps.Metrics)) == 0 || string(bytes.TrimSpace(ps.Metrics)) == "null" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(ps.Metrics, &m); err != nil {
			values[a] = map[string]string{"(unreadable)": cut("not a JSON object: " + string(ps.Metrics))}
			continue
		}
		files[a] = m
		if len(m) > 1 {
			prefix = true
		}
	}
	for a, m := range files {
		out := map[string]string{}
		for file, raw := range m {
			one := map[string]string{}
			flatten("", raw, one)
			for k, v := range one {
				switch {
				case k == "":
					k = file // the file holds a bare value
				case prefix:
					k = file + ": " + k
				}
				out[k] = v
			}
		}
		values[a] = out
	}
	return tabulate(addrs, values)
}

func tabulate(addrs []string, values map[string]map[string]string) valueTable {
	var t valueTable
	seen := map[string]bool{}
	for _, vs := range values {
		for k := range vs {
			if !seen[k] {
				seen[k] = true
				t.Columns = append(t.Columns, k)
			}
		}
	}
	slices.Sort(t.Columns)
	for _, a := range addrs {
		vs, ok := values[a]
		if !ok || len(vs) == 0 {
			continue
		}
		row := valueRow{Phase: a, Cells: make([]string, len(t.Columns))}
		for i, c := range t.Columns {
			row.Cells[i] = vs[c]
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// flatten adds to out the leaves of the JSON value raw, keyed by their
// path under prefix: object members become prefix.member, recursively;
// every other value (string, number, bool, null, array) is a leaf shown
// as text, strings without quotes. An empty object is the leaf "{}". A
// value that is not valid JSON is shown as it is, cut.
func flatten(prefix string, raw json.RawMessage, out map[string]string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		out[prefix] = cut(string(raw))
		return
	}
	flattenValue(prefix, v, out)
}

func flattenValue(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			out[prefix] = "{}"
			return
		}
		for k, sub := range v {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flattenValue(key, sub, out)
		}
	case string:
		out[prefix] = cut(v)
	case json.Number:
		out[prefix] = v.String()
	case nil:
		out[prefix] = "null"
	default: // bool, array
		b, err := json.Marshal(v)
		if err != nil {
			out[prefix] = cut(fmt.Sprint(v))
			return
		}
		out[prefix] = cut(string(b))
	}
}

// cut shortens s to maxCell runes, marking the cut with an ellipsis.
func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxCell {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxCell-1 {
			break
		}
		b.WriteRune(r)
		n++
	}
	b.WriteString("…")
	return b.String()
}
