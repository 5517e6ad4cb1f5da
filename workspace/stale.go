package workspace

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/cairn-run/cairn/executor/local"
	"github.com/cairn-run/cairn/runrec"
)

// CurrentFile names the run in progress; it outlives a run only when the
// run's process died without cleaning up.
func (w *Workspace) CurrentFile() string { return filepath.Join(w.StateDir(), "current") }

// RecoverStaleRun is called with the workspace lock held. A "current" run
// left behind belongs to a cairn process that died (the lock proves it is
// gone): its phases' processes may still be running, orphaned, and would
// race with this run over the same outputs. Kill every process that
// carries that run's id in its environment, and mark the run interrupted.
func (w *Workspace) RecoverStaleRun() {
	b, err := os.ReadFile(w.CurrentFile())
	if err != nil {
		return
	}
	runID := string(bytes.TrimSpace(b))
	if runID == "" {
		return
	}
	local.KillMarked("CAIRN_RUN_ID=" + runID)
	path := w.Records().StatePath(runID)
	if st, err := runrec.ReadState(path); err == nil && st.Status == runrec.RunRunning {
		st.Status = runrec.RunInterrupted
		for _, ps := range st.Phases {
			if ps.Status == runrec.StatusRunning {
				ps.Status = runrec.StatusStopped
				ps.Error = "interrupted: the cairn process running it died"
			}
		}
		if data, err := runrec.Marshal(st); err == nil {
			_ = WriteFileAtomic(path, data, 0o600, true)
		}
	}
	_ = os.Remove(w.CurrentFile())
}
