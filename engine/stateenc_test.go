package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
	var enc stateEncoder
	dir := t.TempDir()
	for i, st := range []*RunState{big, small, big} {
		got, err := enc.marshal(st)
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

// referenceState is marshalState's format, written the plain way.
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
