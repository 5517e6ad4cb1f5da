package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/phasefile"
	"github.com/cairn-run/cairn/spec"
)

// readMetrics reads the metrics files of a phase whose outputs are in the
// workspace into one JSON object, {"<path>": <the file's JSON object>},
// with sorted members. A file that is missing, too large, not JSON or not
// a JSON object is reported as a warning and left out: metrics never fail
// a phase. It returns nil when no file could be used.
func (e *Engine) readMetrics(p *spec.Phase) json.RawMessage {
	if len(p.Metrics) == 0 {
		return nil
	}
	m := make(map[string]json.RawMessage, len(p.Metrics))
	for _, path := range p.Metrics {
		v, err := phasefile.ReadMetrics(e.ws.Abs(path))
		if err != nil {
			e.rep.Report(Event{Kind: EventWarning, Phase: p.Addr, Time: e.now(),
				Message: fmt.Sprintf("phase %s: metrics file %s not recorded: %v", p.Addr, path, err)})
			continue
		}
		m[path] = v
	}
	return phasefile.MetricsObject(m)
}

// cachedMetrics returns the metrics of a phase whose result comes from
// entry (cached or restored): those recorded in the entry for the files
// the phase names. An entry recorded before the spec named one of them
// lacks it; then the files are read from the workspace, where the outputs
// now equal the entry's.
func (e *Engine) cachedMetrics(p *spec.Phase, entry *cache.Entry) json.RawMessage {
	if len(p.Metrics) == 0 {
		return nil
	}
	var recorded map[string]json.RawMessage
	if len(entry.Metrics) > 0 && json.Unmarshal(entry.Metrics, &recorded) == nil {
		m := make(map[string]json.RawMessage, len(p.Metrics))
		for _, path := range p.Metrics {
			v, ok := recorded[path]
			if !ok {
				m = nil
				break
			}
			m[path] = v
		}
		if m != nil {
			return phasefile.MetricsObject(m)
		}
	}
	return e.readMetrics(p)
}

// stateParams returns a phase's params for its record in state.json. A
// param holding the value of a sensitive variable is recorded as
// "(sensitive)": state.json never holds those values.
func (e *Engine) stateParams(p *spec.Phase) map[string]json.RawMessage {
	if len(p.Params) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(p.Params))
	for k, v := range p.Params {
		switch {
		case e.holdsSensitive(v):
			out[k] = json.RawMessage(`"(sensitive)"`)
		case json.Valid([]byte(v)):
			out[k] = json.RawMessage(v)
		default:
			b, _ := json.Marshal(v)
			out[k] = b
		}
	}
	return out
}

// holdsSensitive reports whether a JSON text contains the value of a
// sensitive variable, as it appears inside a JSON string.
func (e *Engine) holdsSensitive(js string) bool {
	for _, s := range e.spec.SensitiveValues {
		if s == "" {
			continue
		}
		enc, _ := json.Marshal(s)
		if strings.Contains(js, s) || strings.Contains(js, string(enc[1:len(enc)-1])) {
			return true
		}
	}
	return false
}
