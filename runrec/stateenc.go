package runrec

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/cairn-run/cairn/internal/jsonx"
)

// The phases of a run record are most of its bytes, and encoding/json
// writes them by reflection, then a second pass to indent, at the end of
// every run, after its last phase. appendPhases writes the same bytes
// directly for the records a run usually holds, and leaves any phase it is
// not sure of (metrics, params, a cost, a string needing escapes it does
// not write itself) to encoding/json, so the file is byte for byte what
// json.MarshalIndent gives (TestStateEncoderMatchesJSON,
// FuzzStateEncoder).

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
		out = jsonx.AppendString(out, n)
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
	if ps != nil && finiteCost(ps.Cost) != ps.Cost {
		cp := *ps
		cp.Cost = finiteCost(cp.Cost)
		ps = &cp
	}
	if ps == nil || ps.Cost != 0 || ps.Metrics != nil || ps.Params != nil {
		b, err := json.MarshalIndent(ps, phasesIndent, "  ")
		if err != nil {
			return nil, err
		}
		return append(out, b...), nil
	}
	const in = "\n" + phasesIndent + "  "
	str := func(name, v string) { out = jsonx.AppendString(appendMember(out, in, name), v) }
	num := func(name string, v int64) { out = strconv.AppendInt(appendMember(out, in, name), v, 10) }
	tm := func(name string, t *time.Time) error {
		b, err := t.MarshalJSON()
		if err != nil {
			return err
		}
		out = append(appendMember(out, in, name), b...)
		return nil
	}
	out = append(out, "{"+in+`"status": `...)
	out = jsonx.AppendString(out, ps.Status)
	if ps.Key != "" {
		str("key", ps.Key)
	}
	if len(ps.Reasons) > 0 {
		out = appendStrings(appendMember(out, in, "reasons"), ps.Reasons, in)
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
		{"error", ps.Error}, {"warning", ps.Warning}, {"log_tail", ps.LogTail}, {"stdout", ps.Stdout}, {"stderr", ps.Stderr},
		{"executor", ps.Executor}, {"job_id", ps.JobID}, {"job_dir", ps.JobDir}, {"job_name", ps.JobName},
	} {
		if f.v != "" {
			str(f.name, f.v)
		}
	}
	out = append(out, "\n"+phasesIndent+"}"...)
	return out, nil
}

// appendHeader appends the record's members before "phases", and the
// name of that last member: "{\n  \"schema_version\": 2, ..., \"phases\": "
// as json.MarshalIndent writes them, sparing a no-op run the first use
// of encoding/json's reflection on RunState.
func appendHeader(out []byte, st *RunState) ([]byte, error) {
	const in = "\n  "
	str := func(name, v string) { out = jsonx.AppendString(appendMember(out, in, name), v) }
	var err error
	tm := func(name string, t time.Time) {
		b, e := t.MarshalJSON()
		if e != nil && err == nil {
			err = e
		}
		out = append(appendMember(out, in, name), b...)
	}
	out = append(out, "{"+in+`"schema_version": `...)
	out = strconv.AppendInt(out, int64(st.SchemaVersion), 10)
	str("run_id", st.RunID)
	str("spec", st.Spec)
	str("spec_hash", st.SpecHash)

	r := &st.Request
	const rin = in + "  "
	out = append(out, ","+in+`"request": {`+rin+`"targets": `...)
	out = appendStrings(out, r.Targets, rin)
	for _, l := range [...]struct {
		name string
		v    []string
	}{{"force", r.Force}, {"from", r.From}, {"until", r.Until}, {"only", r.Only}} {
		if len(l.v) > 0 {
			out = appendStrings(appendMember(out, rin, l.name), l.v, rin)
		}
	}
	if r.Jobs != 0 {
		out = append(out, ","+rin+`"jobs": `...)
		out = strconv.AppendInt(out, int64(r.Jobs), 10)
	}
	if r.KeepGoing {
		out = append(out, ","+rin+`"keep_going": true`...)
	}
	if len(r.Vars) > 0 {
		out = append(out, ","+rin+`"vars": `...)
		out = appendStrings(out, r.Vars, rin)
	}
	if len(r.VarFiles) > 0 {
		out = append(out, ","+rin+`"var_files": `...)
		out = appendStrings(out, r.VarFiles, rin)
	}
	if r.Executor != "" {
		out = append(out, ","+rin+`"executor": `...)
		out = jsonx.AppendString(out, r.Executor)
	}
	out = append(out, in+"}"...)

	if st.ResumeOf != "" {
		str("resume_of", st.ResumeOf)
	}
	if st.MaxCost != nil {
		out = append(out, ","+in+`"max_cost": `...)
		if out, err = appendFloat(out, *st.MaxCost); err != nil {
			return nil, err
		}
	}
	for _, s := range [...]struct {
		name string
		v    Spend
	}{{"spent_before", st.SpentBefore}, {"spent", st.Spent}} {
		out = append(appendMember(out, in, s.name), "{"+rin+`"cost": `...)
		if out, err = appendFloat(out, s.v.Cost); err != nil {
			return nil, err
		}
		out = append(out, ","+rin+`"iterations": `...)
		out = strconv.AppendInt(out, s.v.Iterations, 10)
		out = append(out, in+"}"...)
	}
	if st.StopReason != "" {
		str("stop_reason", st.StopReason)
	}
	str("host", st.Host)
	out = append(out, ","+in+`"pid": `...)
	out = strconv.AppendInt(out, int64(st.PID), 10)
	tm("started", st.Started)
	tm("heartbeat", st.Heartbeat)
	if st.Ended != nil {
		tm("ended", *st.Ended)
	}
	str("status", st.Status)
	out = append(out, ","+in+`"phases": `...)
	return out, err
}

// appendMember appends the start of a member that follows another: the
// comma, the line start in (a newline and the member's indent) and
// "name": .
func appendMember(out []byte, in, name string) []byte {
	out = append(out, ',')
	out = append(out, in...)
	out = append(out, '"')
	out = append(out, name...)
	return append(out, `": `...)
}

// appendStrings appends a list of strings as a member value whose line
// starts with in (a newline and the member's indent): null, [], or one
// string per line.
func appendStrings(out []byte, l []string, in string) []byte {
	switch {
	case l == nil:
		return append(out, "null"...)
	case len(l) == 0:
		return append(out, "[]"...)
	}
	out = append(out, '[')
	for i, s := range l {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, in+"  "...)
		out = jsonx.AppendString(out, s)
	}
	out = append(out, in...)
	return append(out, ']')
}

// appendFloat appends f as encoding/json writes a float64: 0 directly,
// anything else through encoding/json (its format has special cases).
// A value JSON cannot hold is written as finiteCost makes it, so that a
// run record is always saved.
func appendFloat(out []byte, f float64) ([]byte, error) {
	f = finiteCost(f)
	if f == 0 && !math.Signbit(f) {
		return append(out, '0'), nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append(out, b...), nil
}

// finiteCost is f if it is finite; else 0 for NaN and CostBound (or its
// negative) for an infinity. Report lines and sums never give such a
// value (see ParseReportLine, Spend.Add); this keeps the run record
// writable should one get through.
func finiteCost(f float64) float64 {
	switch {
	case math.IsNaN(f):
		return 0
	case math.IsInf(f, 1):
		return CostBound
	case math.IsInf(f, -1):
		return -CostBound
	}
	return f
}
