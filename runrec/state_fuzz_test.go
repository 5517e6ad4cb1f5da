package runrec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadState: ReadState never panics, and a state it accepts survives
// being written back and read again unchanged. A record on disk may have
// been damaged by a crash, a disk or a teammate. Seeds are in
// testdata/fuzz/FuzzReadState; `make fuzz` fuzzes it.
func FuzzReadState(f *testing.F) {
	f.Add([]byte(`{"run_id":"20260101-000000-abcdef","status":"succeeded","phases":{"a":{"status":"cached","key":"` + strings.Repeat("ab", 32) + `"}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "state.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := ReadState(p)
		if err != nil {
			return
		}
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("an accepted state does not encode: %v", err)
		}
		if err := os.WriteFile(p, again, 0o644); err != nil {
			t.Fatal(err)
		}
		st2, err := ReadState(p)
		if err != nil {
			t.Fatalf("a re-encoded state does not read: %v\n%s", err, again)
		}
		third, err := json.Marshal(st2)
		if err != nil || !bytes.Equal(again, third) {
			t.Fatalf("state round trip not stable:\n%s\n%s", again, third)
		}
	})
}
