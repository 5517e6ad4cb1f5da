package workspace

import (
	"encoding/json"
	"testing"
)

// TestLockInfoJSON: the lock holder is written as json.Marshal writes it.
func TestLockInfoJSON(t *testing.T) {
	for _, li := range []LockInfo{{}, {PID: 4242, RunID: "20261127-010203-abcdef", Host: "vm"}, {PID: -1, RunID: `a"<b>`, Host: "hôte\x00"}} {
		want, err := json.Marshal(li)
		if err != nil {
			t.Fatal(err)
		}
		if got := li.appendJSON(nil); string(got) != string(want) {
			t.Errorf("%+v: appendJSON = %s, json.Marshal = %s", li, got, want)
		}
	}
}

// FuzzLockInfoJSON: the lock holder is written as json.Marshal writes it.
func FuzzLockInfoJSON(f *testing.F) {
	f.Add(4242, "20261127-010203-abcdef", "vm")
	f.Add(-1, "a\"<b>\u2028", "hôte\x00\xff")
	f.Fuzz(func(t *testing.T, pid int, runID, host string) {
		li := LockInfo{PID: pid, RunID: runID, Host: host}
		want, err := json.Marshal(li)
		if err != nil {
			t.Fatal(err)
		}
		if got := li.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON = %s, json.Marshal = %s", got, want)
		}
	})
}
