package workspace

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHolderGone(t *testing.T) {
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	tests := []struct {
		name string
		h    LockInfo
		want bool
	}{
		{"exited process of this host", LockInfo{PID: dead.Process.Pid, Host: host}, true},
		{"running process", LockInfo{PID: live.Process.Pid, Host: host}, false},
		{"this process", LockInfo{PID: os.Getpid(), Host: host}, false},
		{"another host", LockInfo{PID: dead.Process.Pid, Host: host + "-elsewhere"}, false},
		{"no record", LockInfo{}, false},
	}
	for _, tt := range tests {
		if got := holderGone(tt.h, host); got != tt.want {
			t.Errorf("%s: holderGone = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestLockRecordsHolder: the lock file itself says who holds the lock,
// a second taker is refused with that holder's pid and run, and the
// record is emptied when the lock is released.
func TestLockRecordsHolder(t *testing.T) {
	w := &Workspace{Root: t.TempDir()}
	l, err := w.TryLock("run-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.TryLock("run-2")
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second TryLock: %v, want a *LockedError", err)
	}
	host, _ := os.Hostname()
	if diff := cmp.Diff(LockInfo{PID: os.Getpid(), RunID: "run-1", Host: host}, le.Holder); diff != "" {
		t.Errorf("holder (-want +got):\n%s", diff)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(w.StateDir(), "lock")); err != nil || len(b) != 0 {
		t.Errorf("lock file after Unlock: %q, %v; want empty", b, err)
	}
	if _, err := os.Stat(filepath.Join(w.StateDir(), "lock.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock.json was written: %v", err)
	}
	l, err = w.TryLock("run-3")
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	l.Unlock()
}
