package engine

import (
	"os"
	"os/exec"
	"testing"
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
