package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// executorFor returns the executor a phase runs on and its name.
func (r *runner) executorFor(p *spec.Phase) (executor.Executor, string, error) {
	name := r.opts.Executor
	if name == "" {
		name = p.Executor
	}
	if name == "" || name == executor.Local {
		return r.e.exec, executor.Local, nil
	}
	x, ok := r.e.executors[name]
	if !ok {
		return nil, name, fmt.Errorf("executor %q is not available in this cairn", name)
	}
	return x, name, nil
}

// remoteJob prepares the remote side of one attempt: its directory, its
// queue name, and the job of the interrupted run it resumes, if that job
// can be adopted.
func (r *runner) remoteJob(ctx context.Context, x executor.RemoteExecutor, name string, ph *phaseRun, attempt int) *executor.RemoteJob {
	addr := ph.p.Addr
	dir := filepath.Join(r.runDir, "jobs", safeName(addr)+"."+strconv.Itoa(attempt))
	rj := &executor.RemoteJob{
		Timeout: ph.p.Budget.Timeout,
		Dir:     dir,
		Name:    "cairn-" + r.runID + "-" + safeName(addr) + "-" + strconv.Itoa(attempt),
		Submitted: func(ref executor.JobRef) {
			r.state.phase(addr, func(ps *runrec.PhaseState) {
				ps.Executor = ref.Executor
				ps.JobID = ref.ID
				ps.JobDir = r.e.ws.Rel(ref.Dir)
				ps.JobName = ref.Name
			})
			// A job id must reach state.json before cairn can die
			// without a trace of it: resume adopts the job by it.
			_ = r.state.write(syncFile)
		},
	}
	if prev, ok := r.prevJobs[addr]; ok && attempt == 1 && prev.Key == ph.d.Key && prev.Executor == name {
		ref := executor.JobRef{Executor: name, ID: prev.JobID, Dir: r.e.ws.Abs(prev.JobDir), Name: prev.JobName}
		if x.Adoptable(ctx, ref) {
			rj.Adopt = &ref
		}
	}
	return rj
}

// interruptedJobs returns the phases of st whose remote job may still be
// queued or running: cairn died (or was stopped) while following it.
func interruptedJobs(phases map[string]*runrec.PhaseState) map[string]*runrec.PhaseState {
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
	for _, ps := range interruptedJobs(st.Phases) {
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
	return writeFileAtomic(filepath.Join(w.RunsDir(), id, "stop"), []byte(StopCancelMark+" "+time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644, false)
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

// staleJobs returns the remote jobs of the run a crashed cairn left
// current in the workspace, which a new run adopts as a resumed one does.
func (e *Engine) staleJobs() map[string]*runrec.PhaseState {
	b, err := os.ReadFile(e.ws.currentFile())
	if err != nil {
		return nil
	}
	st, err := runrec.ReadState(e.ws.Records().StatePath(strings.TrimSpace(string(b))))
	if err != nil || st.Status != runrec.RunRunning {
		return nil
	}
	return interruptedJobs(st.Phases)
}
