package history

// Params and metrics as table cells: flattening nested JSON into named
// columns, rendering, comparing and sorting values, and a padded text
// table that can colour cells without breaking the alignment.

import (
	"bytes"
	"encoding/json"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// flattenJSON adds the leaves of raw to out: the members of objects are
// named prefix.key (key alone at the top), recursively; anything else
// (numbers, strings, booleans, null, arrays, empty objects) is a leaf,
// kept as compact JSON.
func flattenJSON(prefix string, raw json.RawMessage, out map[string]json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil && len(m) > 0 {
			for k, v := range m {
				name := k
				if prefix != "" {
					name = prefix + "." + k
				}
				flattenJSON(name, v, out)
			}
			return
		}
	}
	if prefix == "" {
		return // a top-level leaf has no name
	}
	var c bytes.Buffer
	if json.Compact(&c, raw) != nil {
		return
	}
	out[prefix] = c.Bytes()
}

// flattenParams names a phase's params param.KEY (param.KEY.SUB for
// object values).
func flattenParams(params map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range params {
		flattenJSON("param."+k, v, out)
	}
	return out
}

// flattenMetrics turns a phase's recorded metrics, {"<path>": {...}, ...},
// into named values: nested keys are joined with dots. A name that two of
// the phase's files both produce is prefixed with each file's base name
// and a colon ("train.json:loss"), or with the whole path when the base
// names are equal too. A name that would clash with the run, phase or
// param columns is prefixed with "metric.".
func flattenMetrics(raw json.RawMessage) map[string]json.RawMessage {
	var files map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &files) != nil {
		return nil
	}
	perFile := map[string]map[string]json.RawMessage{}
	names := map[string]int{}
	bases := map[string]int{}
	for p, v := range files {
		m := map[string]json.RawMessage{}
		flattenJSON("", v, m)
		perFile[p] = m
		for k := range m {
			names[k]++
		}
		bases[path.Base(p)]++
	}
	out := map[string]json.RawMessage{}
	for p, m := range perFile {
		for k, v := range m {
			name := k
			if names[k] > 1 {
				prefix := path.Base(p)
				if bases[prefix] > 1 {
					prefix = p
				}
				name = prefix + ":" + k
			}
			if name == "run" || name == "phase" || strings.HasPrefix(name, "param.") {
				name = "metric." + name
			}
			out[name] = v
		}
	}
	return out
}

// cellText renders a JSON value for a table: strings bare (quoted when
// they hold control characters, which would break the line), numbers
// with a fraction or exponent to precision significant digits (0: as
// written), anything else as compact JSON. nil is "-".
func cellText(v json.RawMessage, precision int) string {
	if v == nil {
		return "-"
	}
	if isNumber(v) && precision > 0 && bytes.ContainsAny(v, ".eE") {
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return strconv.FormatFloat(f, 'g', precision, 64)
		}
	}
	s := jsonText(v)
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

// csvText renders a JSON value for CSV: strings bare, anything else as
// compact JSON at full precision; a missing value is empty.
func csvText(v json.RawMessage) string {
	if v == nil {
		return ""
	}
	return jsonText(v)
}

// jsonText is a JSON string's text, or any other value's JSON.
func jsonText(v json.RawMessage) string {
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	return string(v)
}

func isNumber(v json.RawMessage) bool {
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}

// compareValues orders two present JSON values: numbers numerically and
// before anything else, then the rest by their text, digit runs by
// value.
func compareValues(a, b json.RawMessage) int {
	an, bn := isNumber(a), isNumber(b)
	switch {
	case an && bn:
		fa, errA := strconv.ParseFloat(string(a), 64)
		fb, errB := strconv.ParseFloat(string(b), 64)
		if errA == nil && errB == nil {
			switch {
			case fa < fb:
				return -1
			case fa > fb:
				return 1
			}
			return 0
		}
	case an:
		return -1
	case bn:
		return 1
	}
	return naturalCompare(jsonText(a), jsonText(b))
}

// naturalCompare compares strings with runs of digits compared by value,
// so that seeds["2"] sorts before seeds["10"]; strings equal that way
// ("02" and "2") are ordered by their bytes.
func naturalCompare(a, b string) int {
	if c := naturalCompareValues(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func naturalCompareValues(a, b string) int {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return cmpInt(len(na), len(nb))
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		ra, sa := utf8.DecodeRuneInString(a)
		rb, sb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmpInt(int(ra), int(rb))
		}
		a, b = a[sa:], b[sb:]
	}
	return cmpInt(len(a), len(b))
}

func digitPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortedNames returns a set's names in natural order.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return naturalCompare(out[i], out[j]) < 0 })
	return out
}

// ANSI colours for table cells.
const (
	colorNone   = ""
	colorRed    = "\x1b[31m"
	colorGreen  = "\x1b[32m"
	colorYellow = "\x1b[33;1m"
	colorReset  = "\x1b[0m"
)

// cell is one table cell: its text and, on a terminal, its colour.
type cell struct {
	text  string
	color string
}

// writeTable writes rows of cells in columns two spaces apart, padded by
// the cells' plain text so that colours do not shift the columns, with
// no trailing spaces.
func writeTable(w io.Writer, rows [][]cell, color bool) error {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			if color && c.color != colorNone && c.text != "" {
				line.WriteString(c.color + c.text + colorReset)
			} else {
				line.WriteString(c.text)
			}
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
