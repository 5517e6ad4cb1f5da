package engine

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/cairn-run/cairn/executor/local"
	"github.com/cairn-run/cairn/runrec"
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
	local.KillMarked("CAIRN_RUN_ID=" + runID)
	path := e.ws.Records().StatePath(runID)
	if st, err := runrec.ReadState(path); err == nil && st.Status == runrec.RunRunning {
		st.Status = runrec.RunInterrupted
		for _, ps := range st.Phases {
			if ps.Status == runrec.StatusRunning {
				ps.Status = runrec.StatusStopped
				ps.Error = "interrupted: the cairn process running it died"
			}
		}
		if data, err := runrec.Marshal(st); err == nil {
			_ = writeFileAtomic(path, data, 0o600, true)
		}
	}
	_ = os.Remove(e.ws.currentFile())
}
