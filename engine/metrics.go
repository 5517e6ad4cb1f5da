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
// workspace (phasefile.CollectMetrics); a file that cannot be used is a
// warning, never a failure.
func (e *Engine) readMetrics(p *spec.Phase) json.RawMessage {
	return phasefile.CollectMetrics(p.Metrics, e.ws.Abs, func(path string, err error) {
		e.rep.Report(Event{Kind: EventWarning, Phase: p.Addr, Time: e.now(),
			Message: fmt.Sprintf("phase %s: metrics file %s not recorded: %v", p.Addr, path, err)})
	})
}

// cachedMetrics returns the metrics of a phase whose result comes from
// entry: those the entry recorded (phasefile.RecordedMetrics), else the
// files in the workspace, where the outputs now equal the entry's.
func (e *Engine) cachedMetrics(p *spec.Phase, entry *cache.Entry) json.RawMessage {
	if m, ok := phasefile.RecordedMetrics(p.Metrics, entry.Metrics); ok {
		return m
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
