package workspace

import (
	"encoding/json"
	"os"
	"testing"
)

// FuzzLockInfo: a lock file of any content decodes into a LockInfo or is
// ignored, and judging its holder never panics.
func FuzzLockInfo(f *testing.F) {
	f.Add([]byte(`{"pid":123,"run_id":"r","host":"h"}`))
	f.Add([]byte(`{"pid":-1,"host":""}`))
	host, _ := os.Hostname()
	f.Fuzz(func(t *testing.T, b []byte) {
		var h LockInfo
		if json.Unmarshal(b, &h) != nil {
			return
		}
		if h.PID == os.Getpid() && holderGone(h, host) {
			t.Fatal("this process judged gone")
		}
		holderGone(h, host)
		_ = (&LockedError{Path: "lock", Holder: h}).Error()
	})
}
