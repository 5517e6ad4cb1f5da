package runrec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStateEncoderReuse: one encoder, reused for records of different
// sizes (a larger one, then a smaller), writes exactly the bytes a fresh
// json.MarshalIndent with its checksum gives, and ReadState reads each
// back.
func TestStateEncoderReuse(t *testing.T) {
	big := &RunState{RunID: "r1", Status: RunRunning, Phases: map[string]*PhaseState{}}
	for _, a := range []string{"a", "b", "c", "d<&>"} {
		big.Phases[a] = &PhaseState{Status: StatusSucceeded, Key: a + "-key", Reasons: []string{"input " + a + " changed"}}
	}
	small := &RunState{RunID: "r2", Status: RunSucceeded, Phases: map[string]*PhaseState{"a": {Status: StatusCached}}}
	var enc Encoder
	dir := t.TempDir()
	for i, st := range []*RunState{big, small, big} {
		got, err := enc.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(referenceState(t, st)), string(got)); diff != "" {
			t.Errorf("record %d (-want +got):\n%s", i, diff)
		}
		p := filepath.Join(dir, "state.json")
		if err := os.WriteFile(p, got, 0o600); err != nil {
			t.Fatal(err)
		}
		back, err := ReadState(p)
		if err != nil {
			t.Fatalf("record %d: ReadState: %v", i, err)
		}
		if back.RunID != st.RunID || len(back.Phases) != len(st.Phases) {
			t.Errorf("record %d read back as run %q with %d phases", i, back.RunID, len(back.Phases))
		}
	}
}

// referenceState is Marshal's format, written the plain way.
func referenceState(t *testing.T, st *RunState) []byte {
	cp := *st
	cp.SchemaVersion = StateSchemaVersion
	b, err := json.MarshalIndent(&cp, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	out := append([]byte{}, b[:len(b)-2]...)
	out = append(out, ",\n  \"checksum\": \"sha256:"+hex.EncodeToString(sum[:])+"\"\n}\n"...)
	return out
}

// filledPhase is a phase with every field set to something other than
// its zero value, by reflection, so that a field added to PhaseState and
// not to appendPhase fails TestStateEncoderMatchesJSON. Cost, Metrics
// and Params stay zero unless all is set: they take encoding/json's path.
func filledPhase(t testing.TB, seed int, all bool) *PhaseState {
	ps := &PhaseState{}
	v := reflect.ValueOf(ps).Elem()
	when := time.Date(2026, 11, 27, 1, 2, 3, 400500600+seed, time.FixedZone("", 3600))
	code := 3 + seed
	for i := range v.NumField() {
		f := v.Field(i)
		name := v.Type().Field(i).Name
		if !all && (name == "Cost" || name == "Metrics" || name == "Params") {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("%s-%d value/with.dots", strings.ToLower(name), seed))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000*i + seed))
		case reflect.Float64:
			f.SetFloat(0.125 * float64(seed+1))
		case reflect.Slice:
			if f.Type() == reflect.TypeOf(json.RawMessage(nil)) {
				f.SetBytes([]byte(`{"m.json": {"acc": 0.5, "n": [1, 2]}}`))
			} else {
				f.Set(reflect.ValueOf([]string{"input in/a changed", "output out/b missing"}))
			}
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]json.RawMessage{"lr": json.RawMessage(`0.001`), "model": json.RawMessage(`"m1"`)}))
		case reflect.Pointer:
			switch f.Type().Elem().Kind() {
			case reflect.Int:
				f.Set(reflect.ValueOf(&code))
			default:
				w := when.Add(time.Duration(i) * time.Second)
				f.Set(reflect.ValueOf(&w))
			}
		default:
			t.Fatalf("PhaseState.%s: kind %s not filled; teach filledPhase and appendPhase", name, f.Kind())
		}
	}
	return ps
}

// TestStateEncoderMatchesJSON: the direct encoding of phases writes the
// bytes json.MarshalIndent writes, for every field, for strings that need
// escaping, and for the phases it leaves to encoding/json.
func TestStateEncoderMatchesJSON(t *testing.T) {
	zero := 0
	tests := []struct {
		name   string
		phases map[string]*PhaseState
	}{
		{"nil phases", nil},
		{"no phases", map[string]*PhaseState{}},
		{"cached", map[string]*PhaseState{"a": {Status: StatusCached, Key: "k1"}, "b": {Status: StatusCached, Key: "k2"}}},
		{"every field", map[string]*PhaseState{"p": filledPhase(t, 1, false), "q": filledPhase(t, 2, false)}},
		{"every field, with cost, metrics and params", map[string]*PhaseState{"p": filledPhase(t, 3, true), "q": filledPhase(t, 4, false)}},
		{"exit code 0", map[string]*PhaseState{"p": {Status: StatusSucceeded, ExitCode: &zero}}},
		{"nil phase", map[string]*PhaseState{"p": nil, "q": {Status: StatusPending}}},
		{"escapes", map[string]*PhaseState{
			`train["gpt-4"]`: {Status: StatusFailed, Error: "exit 1: <stderr> & \"quotes\"\n\ttab \\ back", LogTail: "bad utf-8 \xff\xfe end\u2028\x00\x1f"},
			"é/ü":            {Status: StatusCached, Reasons: []string{"input données/α changed", ""}},
			"empty reasons":  {Status: StatusCached, Reasons: []string{}},
		}},
	}
	for _, tt := range tests {
		st := &RunState{RunID: "20261127-010203-abcdef", Spec: "experiment.hcl", Status: RunSucceeded, Host: "vm", PID: 42,
			Started: time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC), Phases: tt.phases}
		var enc Encoder
		got, err := enc.Marshal(st)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(string(referenceState(t, st)), string(got)); diff != "" {
			t.Errorf("%s (-encoding/json +direct):\n%s", tt.name, diff)
		}
	}
}

// FuzzStateEncoder: for any strings and numbers in a phase's record, the
// direct encoding is what encoding/json writes.
func FuzzStateEncoder(f *testing.F) {
	f.Add("p", "cached", "k", "reason", "error text", "tail\n", int64(3), int64(0), 0.0)
	f.Add(`a["<b>"]`, "failed", "", "\xff", "\u2028", "\x00", int64(-1), int64(1)<<62, 0.1)
	f.Fuzz(func(t *testing.T, name, status, key, reason, errText, tail string, n, dur int64, cost float64) {
		ps := &PhaseState{Status: status, Key: key, Reasons: []string{reason, errText}, Attempts: int(n), DurationMS: dur,
			Iterations: n ^ dur, Error: errText, LogTail: tail, Stdout: name, Stderr: reason, Executor: status, JobID: key, JobDir: tail, JobName: name}
		if !math.IsNaN(cost) && !math.IsInf(cost, 0) {
			ps.Cost = cost
		}
		if n%2 == 0 {
			ps.ExitCode = new(int(n))
			w := time.Unix(dur%(1<<40), n%1e9).UTC()
			ps.Started, ps.Ended = &w, &w
		}
		st := &RunState{RunID: name, Spec: errText, Host: tail, Status: status, StopReason: reason, Request: Request{Targets: []string{key, reason}, Vars: []string{tail}}, Phases: map[string]*PhaseState{name: ps, name + "2": {Status: status}}}
		sameAsJSON(t, st)
	})
}

// BenchmarkStateEncode1000: the record a no-op of 1,000 phases writes at
// its end (every phase cached, with its key).
func BenchmarkStateEncode1000(b *testing.B) {
	st := &RunState{RunID: "r", Status: RunSucceeded, Phases: map[string]*PhaseState{}}
	for i := range 1000 {
		st.Phases[fmt.Sprintf("p%05d", i)] = &PhaseState{Status: StatusCached, Key: strings.Repeat("ab", 32)}
	}
	var enc Encoder
	b.ReportAllocs()
	for b.Loop() {
		if _, err := enc.Marshal(st); err != nil {
			b.Fatal(err)
		}
	}
}

// fillValue sets v, and every field of it, to something other than its
// zero value, so that a field added to RunState (or to Request, Gates,
// Spend) and not to appendHeader fails TestStateHeaderMatchesJSON.
func fillValue(t testing.TB, v reflect.Value, seed int, path string) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 27, 2, 3, 4, 500600700+seed, time.FixedZone("", -7200))))
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Name == "Phases" {
				continue // appendPhases' part
			}
			fillValue(t, v.Field(i), seed+i, path+"."+f.Name)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", strings.ToLower(path), seed))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(7 + seed))
	case reflect.Float64:
		v.SetFloat(0.25 * float64(seed+1))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.ValueOf([]string{path + "-a", path + "-b"}))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(t, p.Elem(), seed, path)
		v.Set(p)
	default:
		t.Fatalf("%s: kind %s not filled; teach fillValue and appendHeader", path, v.Kind())
	}
}

// TestStateHeaderMatchesJSON: the members before "phases", written
// directly, are what json.MarshalIndent writes: every field set, every
// field zero, nil and empty lists, costs of every form.
func TestStateHeaderMatchesJSON(t *testing.T) {
	full := &RunState{}
	fillValue(t, reflect.ValueOf(full).Elem(), 1, "run")
	full.Phases = map[string]*PhaseState{"p": {Status: StatusCached}}
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name string
		st   *RunState
	}{
		{"every field", full},
		{"zero", &RunState{}},
		{"empty targets", &RunState{Request: Request{Targets: []string{}}, Phases: map[string]*PhaseState{}}},
		{"one target, gates, vars", &RunState{Request: Request{Targets: []string{`eval["m<1>"]`}, Gates: Gates{Only: []string{"a"}}, Vars: []string{"x=é"}}}},
		{"costs", &RunState{MaxCost: &negZero, SpentBefore: Spend{Cost: 1e-7, Iterations: -3}, Spent: Spend{Cost: 1e21}}},
		{"small and large costs", &RunState{SpentBefore: Spend{Cost: 0.1 + 0.2}, Spent: Spend{Cost: 123456789.125}}},
	}
	for _, tt := range tests {
		var enc Encoder
		got, err := enc.Marshal(tt.st)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(string(referenceState(t, tt.st)), string(got)); diff != "" {
			t.Errorf("%s (-encoding/json +direct):\n%s", tt.name, diff)
		}
	}
	// A cost JSON cannot hold is written as finiteCost makes it: a run
	// record is always saved.
	bound := float64(CostBound)
	for _, c := range []struct{ st, want *RunState }{
		{&RunState{MaxCost: new(math.NaN())}, &RunState{MaxCost: new(0.0)}},
		{&RunState{Spent: Spend{Cost: math.Inf(1)}}, &RunState{Spent: Spend{Cost: bound}}},
		{&RunState{SpentBefore: Spend{Cost: math.Inf(-1)}}, &RunState{SpentBefore: Spend{Cost: -bound}}},
	} {
		var enc Encoder
		got, err := enc.Marshal(c.st)
		if err != nil {
			t.Fatalf("%+v: %v", c.st, err)
		}
		if diff := cmp.Diff(string(referenceState(t, c.want)), string(got)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", c.st, diff)
		}
	}
	// Other values encoding/json refuses, the direct encoding refuses too.
	bad := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, st := range []*RunState{{Started: bad}, {Ended: &bad}} {
		if _, err := json.MarshalIndent(st, "", "  "); err == nil {
			t.Fatalf("encoding/json took %+v", st)
		}
		var enc Encoder
		if _, err := enc.Marshal(st); err == nil {
			t.Errorf("the direct encoding took %+v, which encoding/json refuses", st)
		}
	}
}

// sameAsJSON checks that the direct encoding of st is what
// json.MarshalIndent (with the checksum) writes, or that both refuse it.
func sameAsJSON(t *testing.T, st *RunState) {
	t.Helper()
	cp := *st
	cp.SchemaVersion = StateSchemaVersion
	_, err := json.MarshalIndent(&cp, "", "  ")
	var enc Encoder
	got, gerr := enc.Marshal(st)
	if (err == nil) != (gerr == nil) {
		t.Fatalf("encoding/json error %v, direct error %v", err, gerr)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(string(referenceState(t, st)), string(got)); diff != "" {
		t.Errorf("(-encoding/json +direct):\n%s", diff)
	}
}
