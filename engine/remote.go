package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// RemoteExecutor is an Executor whose jobs run elsewhere (a Slurm
// cluster) and may outlive the cairn process that submitted them. The
// scheduler is the same for every executor; only how one attempt's
// command runs differs.
type RemoteExecutor interface {
	Executor
	// RunRemote runs one attempt like Executor.Run, with what a remote
	// backend needs besides the command. Besides the errors Run may
	// return, it returns a *JobEndedError when the backend ended the job
	// (time limit, cancellation, memory, node failure), or to describe a
	// non-zero exit in the backend's terms.
	RunRemote(ctx context.Context, job *Job, rj *RemoteJob) (exitCode int, err error)
	// Adoptable reports whether a job an earlier cairn submitted is still
	// queued or running, or finished with its exit status recorded: a
	// resumed run then follows it (RemoteJob.Adopt) rather than submit
	// the same work twice.
	Adoptable(ctx context.Context, ref JobRef) bool
	// Cancel ends the given jobs (cairn stop --cancel of a run whose cairn
	// process is gone).
	Cancel(ctx context.Context, refs []JobRef) error
}

// RemoteJob is what a remote executor gets besides the Job.
type RemoteJob struct {
	// Phase is the phase the job runs: its settings (spec.Phase.Slurm,
	// Budget.Timeout) shape the submission.
	Phase *spec.Phase
	// Dir is the directory for the executor's files for this attempt
	// (batch script, job output, exit status): inside the workspace, so
	// on the filesystem the job sees.
	Dir string
	// Name names the job in the backend's queue (unique per attempt).
	Name string
	// Adopt, when set, is a job an earlier run submitted for this same
	// phase and key: follow it instead of submitting.
	Adopt *JobRef
	// Submitted is called when the job is about to be submitted (ID "")
	// and again once it has an id, so that state.json can find it again.
	Submitted func(JobRef)
}

// JobRef names a job a remote executor submitted.
type JobRef struct {
	Executor string `json:"executor"`
	ID       string `json:"id,omitempty"`
	Dir      string `json:"dir"` // absolute
	Name     string `json:"name"`
}

// JobEndedError says how a remote backend ended a job.
type JobEndedError struct {
	// Status is StatusTimedOut or StatusFailed.
	Status string
	// ExitCode is the command's exit code, or -1 when it never exited by
	// itself (killed at a time limit, cancelled).
	ExitCode int
	// Detail is the backend's account: "Slurm job 42 TIMEOUT (TimeLimit)".
	Detail string
}

func (e *JobEndedError) Error() string {
	if e.ExitCode >= 0 {
		return fmt.Sprintf("exit status %d (%s)", e.ExitCode, e.Detail)
	}
	return e.Detail
}

// executorFor returns the executor a phase runs on and its name.
func (r *runner) executorFor(p *spec.Phase) (Executor, string, error) {
	name := r.opts.Executor
	if name == "" {
		name = p.Executor
	}
	if name == "" || name == spec.ExecutorLocal {
		return r.e.exec, spec.ExecutorLocal, nil
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
func (r *runner) remoteJob(ctx context.Context, x RemoteExecutor, name string, ph *phaseRun, attempt int) *RemoteJob {
	addr := ph.p.Addr
	dir := filepath.Join(r.runDir, "jobs", safeName(addr)+"."+strconv.Itoa(attempt))
	rj := &RemoteJob{
		Phase: ph.p,
		Dir:   dir,
		Name:  "cairn-" + r.runID + "-" + safeName(addr) + "-" + strconv.Itoa(attempt),
		Submitted: func(ref JobRef) {
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
		ref := JobRef{Executor: name, ID: prev.JobID, Dir: r.e.ws.Abs(prev.JobDir), Name: prev.JobName}
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
func (w *Workspace) RunningJobs(st *runrec.RunState) []JobRef {
	var refs []JobRef
	for _, ps := range interruptedJobs(st.Phases) {
		refs = append(refs, JobRef{Executor: ps.Executor, ID: ps.JobID, Dir: w.Abs(ps.JobDir), Name: ps.JobName})
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

// remoteJobProcess reports whether a process environment is a Slurm job's.
// Such a process is followed and cancelled through Slurm, never killed by
// the local reaper, even when the cluster's node is this machine: a
// resumed run adopts the job.
func remoteJobProcess(env []byte) bool {
	return bytes.HasPrefix(env, []byte("SLURM_JOB_ID=")) || bytes.Contains(env, []byte("\x00SLURM_JOB_ID="))
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
