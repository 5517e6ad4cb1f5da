package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/runrec"
)

// InterruptedJobs returns the phases of st whose remote job may still be
// queued or running: cairn died (or was stopped) while following it.
func InterruptedJobs(phases map[string]*runrec.PhaseState) map[string]*runrec.PhaseState {
	out := map[string]*runrec.PhaseState{}
	for addr, ps := range phases {
		if ps.JobDir == "" || ps.Ended != nil {
			continue
		}
		switch ps.Status {
		case runrec.StatusRunning, runrec.StatusStopped:
			out[addr] = ps
		}
	}
	return out
}

// RunningJobs returns the remote jobs of a run that may still be queued or
// running, for cairn stop --cancel when the run's cairn process is gone.
func (w *Workspace) RunningJobs(st *runrec.RunState) []executor.JobRef {
	var refs []executor.JobRef
	for _, ps := range InterruptedJobs(st.Phases) {
		refs = append(refs, executor.JobRef{Executor: ps.Executor, ID: ps.JobID, Dir: w.Abs(ps.JobDir), Name: ps.JobName})
	}
	return refs
}

// RequestCancel asks a running run to stop and end its running phases at
// once, as a second Ctrl-C does: remote jobs are cancelled in their
// backend (scancel).
func (w *Workspace) RequestCancel(id string) error {
	st, err := runrec.ReadState(w.Records().StatePath(id))
	if err != nil {
		return err
	}
	runrec.Settle(st)
	if st.Status != runrec.RunRunning {
		return fmt.Errorf("run %s is not running (status %s)", id, st.Status)
	}
	return WriteFileAtomic(filepath.Join(w.RunsDir(), id, "stop"), []byte(StopCancelMark+" "+time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644, false)
}

// IsRunning reports whether a run's cairn process is still running it.
func (w *Workspace) IsRunning(id string) bool {
	st, err := runrec.ReadState(w.Records().StatePath(id))
	if err != nil {
		return false
	}
	runrec.Settle(st)
	return st.Status == runrec.RunRunning
}

// StaleJobs returns the remote jobs of the run a crashed cairn left
// current in the workspace, which a new run adopts as a resumed one does.
func (w *Workspace) StaleJobs() map[string]*runrec.PhaseState {
	b, err := os.ReadFile(w.CurrentFile())
	if err != nil {
		return nil
	}
	st, err := runrec.ReadState(w.Records().StatePath(strings.TrimSpace(string(b))))
	if err != nil || st.Status != runrec.RunRunning {
		return nil
	}
	return InterruptedJobs(st.Phases)
}

// StopCancelMark starts the content of a stop file that asks for the
// running phases to be ended too (cairn stop --cancel).
const StopCancelMark = "cancel"
