package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// currentFile names the run in progress; it outlives a run only when the
// run's process died without cleaning up.
func (w *Workspace) currentFile() string { return filepath.Join(w.StateDir(), "current") }

// recoverStaleRun is called with the workspace lock held. A "current" run
// left behind belongs to a cairn process that died (the lock proves it is
// gone): its phases' processes may still be running, orphaned, and would
// race with this run over the same outputs. Kill every process that
// carries that run's id in its environment, and mark the run interrupted.
func (e *Engine) recoverStaleRun() {
	b, err := os.ReadFile(e.ws.currentFile())
	if err != nil {
		return
	}
	runID := string(bytes.TrimSpace(b))
	if runID == "" {
		return
	}
	killMarked("CAIRN_RUN_ID=" + runID)
	path := e.ws.StatePath(runID)
	if st, err := ReadState(path); err == nil && st.Status == RunRunning {
		st.Status = RunInterrupted
		for _, ps := range st.Phases {
			if ps.Status == StatusRunning {
				ps.Status = StatusStopped
				ps.Error = "interrupted: the cairn process running it died"
			}
		}
		if data, err := marshalState(st); err == nil {
			_ = writeFileAtomic(path, data, 0o600, true)
		}
	}
	_ = os.Remove(e.ws.currentFile())
}

// killMarked sends SIGKILL to every process whose environment holds the
// entry (such as CAIRN_RUN_ID=<run>), and waits briefly for them to go.
// Phases always get CAIRN_RUN_ID and CAIRN_JOB, and descendants inherit
// them even when they leave the phase's process group.
func killMarked(entry string) {
	marker := []byte(entry + "\x00")
	self := os.Getpid()
	var pids []int
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), marker) || remoteJobProcess(env) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			pids = append(pids, pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if syscall.Kill(pid, 0) != nil {
				break
			}
			// A killed process lingers as a zombie until its parent (init,
			// for orphans) reaps it; /proc shows its state.
			if st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
