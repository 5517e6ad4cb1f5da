package testkit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Procs returns the live processes, other than this one, whose environment
// holds entry (KEY=VALUE), each as "pid (cmdline)". Zombies are dead and
// left out: a killed process lingers as one until its parent reaps it.
func Procs(entry string) []string {
	var alive []string
	scan(entry, func(pid int, dir string) {
		if st, err := os.ReadFile(filepath.Join(dir, "stat")); err != nil || bytes.Contains(st, []byte(") Z ")) {
			return
		}
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		alive = append(alive, fmt.Sprintf("%d (%s)", pid, bytes.TrimSpace(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
	})
	return alive
}

// KillProcs SIGKILLs every process, other than this one, whose environment
// holds entry, so that a failing test leaves nothing running behind it.
func KillProcs(entry string) {
	scan(entry, func(pid int, _ string) { _ = syscall.Kill(pid, syscall.SIGKILL) })
}

// WaitGone waits up to d for the processes carrying entry to be gone (a
// SIGKILLed process takes a moment to exit) and returns those alive then.
func WaitGone(entry string, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		alive := Procs(entry)
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scan calls fn for each process, other than this one, whose environment
// holds entry as one of its NUL-separated strings.
func scan(entry string, fn func(pid int, dir string)) {
	marker := []byte("\x00" + entry + "\x00")
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", ent.Name())
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(append(append([]byte{0}, env...), 0), marker) {
			continue
		}
		fn(pid, dir)
	}
}
