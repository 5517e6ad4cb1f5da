package engine

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The phases of a run record are most of its bytes: 1,000 of them are
// about 130 KB, and encoding/json took 3 ms to write them (reflection,
// then a second pass to indent), at the end of every run, after its last
// phase. appendPhases writes the same bytes directly for the records a
// run usually holds, and leaves any phase it is not sure of (metrics,
// params, a cost, a string needing escapes it does not write itself) to
// encoding/json, so the file is byte for byte what json.MarshalIndent
// gives (TestStateEncoderMatchesJSON, FuzzStateEncoder).

// phasesIndent is the indent of a phase's name inside "phases": a member
// of the top-level object's member.
const phasesIndent = "    "

// appendPhases appends the members of the "phases" object of a record
// indented with two spaces per level (without the braces' own lines):
// "\n    \"a\": {...},\n    \"b\": {...}".
func appendPhases(out []byte, phases map[string]*PhaseState) ([]byte, error) {
	names := make([]string, 0, len(phases))
	for n := range phases {
		names = append(names, n)
	}
	slices.Sort(names) // encoding/json orders map members by key
	for i, n := range names {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '\n')
		out = append(out, phasesIndent...)
		out = appendJSONString(out, n)
		out = append(out, ": "...)
		var err error
		out, err = appendPhase(out, phases[n])
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendPhase appends one phase's object, as a member value at
// phasesIndent.
func appendPhase(out []byte, ps *PhaseState) ([]byte, error) {
	if ps == nil || ps.Cost != 0 || ps.Metrics != nil || ps.Params != nil {
		b, err := json.MarshalIndent(ps, phasesIndent, "  ")
		if err != nil {
			return nil, err
		}
		return append(out, b...), nil
	}
	const in = phasesIndent + "  "
	out = append(out, '{')
	str := func(name, v string) {
		out = append(out, ",\n"+in+`"`...)
		out = append(out, name...)
		out = append(out, `": `...)
		out = appendJSONString(out, v)
	}
	num := func(name string, v int64) {
		out = append(out, ",\n"+in+`"`...)
		out = append(out, name...)
		out = append(out, `": `...)
		out = strconv.AppendInt(out, v, 10)
	}
	tm := func(name string, t *time.Time) error {
		b, err := t.MarshalJSON()
		if err != nil {
			return err
		}
		out = append(out, ",\n"+in+`"`...)
		out = append(out, name...)
		out = append(out, `": `...)
		out = append(out, b...)
		return nil
	}
	out = append(out, "\n"+in+`"status": `...)
	out = appendJSONString(out, ps.Status)
	if ps.Key != "" {
		str("key", ps.Key)
	}
	if len(ps.Reasons) > 0 {
		out = append(out, ",\n"+in+`"reasons": [`...)
		for i, r := range ps.Reasons {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, "\n"+in+"  "...)
			out = appendJSONString(out, r)
		}
		out = append(out, "\n"+in+"]"...)
	}
	if ps.Attempts != 0 {
		num("attempts", int64(ps.Attempts))
	}
	if ps.Started != nil {
		if err := tm("started", ps.Started); err != nil {
			return nil, err
		}
	}
	if ps.Ended != nil {
		if err := tm("ended", ps.Ended); err != nil {
			return nil, err
		}
	}
	if ps.DurationMS != 0 {
		num("duration_ms", ps.DurationMS)
	}
	if ps.ExitCode != nil {
		num("exit_code", int64(*ps.ExitCode))
	}
	if ps.Iterations != 0 {
		num("iterations", ps.Iterations)
	}
	for _, f := range [...]struct{ name, v string }{
		{"error", ps.Error}, {"log_tail", ps.LogTail}, {"stdout", ps.Stdout}, {"stderr", ps.Stderr},
		{"executor", ps.Executor}, {"job_id", ps.JobID}, {"job_dir", ps.JobDir}, {"job_name", ps.JobName},
	} {
		if f.v != "" {
			str(f.name, f.v)
		}
	}
	out = append(out, "\n"+phasesIndent+"}"...)
	return out, nil
}

// appendJSONString appends s quoted as encoding/json writes it (with its
// HTML escaping): printable ASCII without '"', '\\', '<', '>' or '&' is
// copied; any other string is left to encoding/json.
func appendJSONString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}
