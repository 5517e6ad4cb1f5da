package phasefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxMetricsFileSize bounds a metrics file: a larger one is not recorded
// (metrics are numbers for a table, not data).
const MaxMetricsFileSize = 1 << 20

// MetricsObject encodes the metrics by path as one compact JSON object
// with sorted keys, or nil when there are none.
func MetricsObject(m map[string]json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil // every value was checked to be valid JSON
	}
	return b
}

// ReadMetrics reads one metrics file: a regular file of at most
// MaxMetricsFileSize bytes holding one JSON object. It returns the object
// compacted.
func ReadMetrics(abs string) (json.RawMessage, error) {
	f, err := os.Open(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("no such file")
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", strings.TrimPrefix(fi.Mode().Type().String(), "-"))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxMetricsFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMetricsFileSize {
		return nil, fmt.Errorf("larger than the %d KiB limit for metrics files", MaxMetricsFileSize>>10)
	}
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if v[0] != '{' {
		return nil, fmt.Errorf("holds a JSON %s, not an object such as {\"accuracy\": 0.9}", jsonKind(v[0]))
	}
	var c bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return c.Bytes(), nil
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// CollectMetrics reads the metrics files paths (workspace paths, made
// absolute by abs) into one JSON object, {"<path>": <the file's JSON
// object>}, with sorted members. A file that is missing, too large, not
// JSON or not a JSON object goes to warn and is left out: metrics never
// fail a phase. It returns nil when no file could be used.
func CollectMetrics(paths []string, abs func(string) string, warn func(path string, err error)) json.RawMessage {
	if len(paths) == 0 {
		return nil
	}
	m := make(map[string]json.RawMessage, len(paths))
	for _, path := range paths {
		v, err := ReadMetrics(abs(path))
		if err != nil {
			warn(path, err)
			continue
		}
		m[path] = v
	}
	return MetricsObject(m)
}

// RecordedMetrics returns the metrics a cache entry recorded (recorded)
// for the files paths, and false when it lacks one of them (an entry
// recorded before the spec named it) or there are none to return.
func RecordedMetrics(paths []string, recorded json.RawMessage) (json.RawMessage, bool) {
	if len(paths) == 0 {
		return nil, true
	}
	var all map[string]json.RawMessage
	if len(recorded) == 0 || json.Unmarshal(recorded, &all) != nil {
		return nil, false
	}
	m := make(map[string]json.RawMessage, len(paths))
	for _, path := range paths {
		v, ok := all[path]
		if !ok {
			return nil, false
		}
		m[path] = v
	}
	return MetricsObject(m), true
}
