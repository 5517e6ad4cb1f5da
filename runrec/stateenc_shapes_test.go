package runrec

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// FuzzStateEncoderShapes: for any times (any instant, any zone offset,
// years outside 0-9999 included), nil or empty reasons, any cost, metrics
// and params bytes, and nil phases, the run record is byte for byte what
// encoding/json writes, or both fail.
func FuzzStateEncoderShapes(f *testing.F) {
	f.Add(int64(0), int64(0), 0, uint8(0), 0.0, []byte(nil), "")
	f.Add(int64(-62135596800), int64(999999999), -36000, uint8(1), -2.5, []byte(`{"a":[1,2,{"b":"<&>"}]}`), `"x"`)
	f.Add(int64(253402300800), int64(1), 50400+59, uint8(2), 1e300, []byte(`not json`), `{}`)
	f.Add(int64(1764205323), int64(-5), 3600*24, uint8(7), math.Copysign(0, -1), []byte("{\"m\": \"\u2028\"}"), "")
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int, shape uint8, cost float64, metrics []byte, param string) {
		when := time.Unix(sec, nsec).In(time.FixedZone("", offset))
		ps := &PhaseState{Status: StatusSucceeded, Started: &when}
		if shape&1 != 0 {
			ps.Ended = &when
		}
		switch shape >> 1 & 3 {
		case 1:
			ps.Reasons = []string{}
		case 2:
			ps.Reasons = []string{""}
		case 3:
			ps.Reasons = []string{"a", "<b>"}
		}
		if !math.IsNaN(cost) && !math.IsInf(cost, 0) {
			ps.Cost = cost
		}
		if shape&8 != 0 {
			ps.Metrics = metrics
		}
		if shape&16 != 0 {
			ps.Params = map[string]json.RawMessage{"p": json.RawMessage(param)}
		}
		phases := map[string]*PhaseState{"p": ps, "q": {Status: StatusCached}}
		if shape&32 != 0 {
			phases["n"] = nil
		}
		st := &RunState{RunID: "r", Status: RunSucceeded, Started: when, Phases: phases}
		sameAsJSON(t, st)
	})
}
