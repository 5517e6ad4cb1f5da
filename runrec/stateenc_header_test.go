package runrec

import (
	"math"
	"testing"
	"time"
)

// FuzzStateHeader: for any strings, numbers, times (any instant, any
// zone offset) and lists (nil, empty or not) in the members before
// "phases", the direct encoding is byte for byte json.MarshalIndent's, and
// it refuses exactly what encoding/json refuses.
func FuzzStateHeader(f *testing.F) {
	f.Add("r", "experiment.hcl", "<&>", "\u2028\xff", int64(0), int64(3600), 0.0, math.Copysign(0, -1), 1e21, uint8(0))
	f.Add("", "", "", "", int64(-62135596800), int64(-86399), math.Copysign(0, -1), 1e-7, 123456789.125, uint8(0xff))
	f.Add("a\"b", "\\", "\x00", "é", int64(253402300800), int64(86400*2), 0.1, math.Inf(1), math.NaN(), uint8(0x5a))
	f.Fuzz(func(t *testing.T, s1, s2, s3, s4 string, sec, zone int64, c1, c2, c3 float64, flags uint8) {
		list := func(bit uint8, v ...string) []string {
			switch {
			case flags&bit == 0:
				return nil
			case flags&(bit<<1) == 0:
				return []string{}
			}
			return v
		}
		when := time.Unix(sec, int64(zone%1e9)).In(time.FixedZone(s4, int(zone%(1<<31))))
		st := &RunState{
			RunID: s1, Spec: s2, SpecHash: s3,
			Request: Request{
				Targets: list(1, s1, s2), Gates: Gates{Force: list(2, s3), From: list(4, s4), Until: list(8, s1), Only: list(16, s2, s3)},
				Jobs: int(sec), KeepGoing: flags&32 != 0, Vars: list(64, s4, s1), VarFiles: list(128, s2), Executor: s3,
			},
			ResumeOf: s4, SpentBefore: Spend{Cost: c1, Iterations: sec}, Spent: Spend{Cost: c2, Iterations: zone},
			StopReason: s1, Host: s2, PID: int(zone), Started: when, Heartbeat: when.Add(time.Duration(zone)), Status: s3,
		}
		if flags&1 != 0 {
			st.MaxCost = &c3
		}
		if flags&4 != 0 {
			st.Ended = &when
		}
		if flags&8 != 0 {
			st.Phases = map[string]*PhaseState{}
		}
		sameAsJSON(t, st)
	})
}
