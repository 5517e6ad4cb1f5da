package testkit

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestCensus: a process carrying the marker is found, one whose variable
// only ends like the marker is not; once killed it counts as gone while
// still a zombie (not yet reaped).
func TestCensus(t *testing.T) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	entry := "CAIRN_TESTKIT_MARK=" + hex.EncodeToString(b[:])
	start := func(env string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), env)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	start("X" + entry)
	if got := Procs(entry); len(got) != 0 {
		t.Fatalf("Procs = %v before any marked process started", got)
	}
	marked := start(entry)
	want := strconv.Itoa(marked.Process.Pid) + " (sleep 60)"
	if got := Procs(entry); len(got) != 1 || got[0] != want {
		t.Fatalf("Procs = %q, want [%q]", got, want)
	}
	KillProcs(entry)
	if left := WaitGone(entry, 5*time.Second); len(left) != 0 {
		t.Errorf("still alive after KillProcs: %v", left)
	}
	_ = marked.Wait()
	if ws, ok := marked.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the marked process ended with %v, want killed by SIGKILL", marked.ProcessState)
	}
}
