package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
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
	dir := filepath.Join(r.runDir, "jobs", workspace.SafeName(addr)+"."+strconv.Itoa(attempt))
	rj := &executor.RemoteJob{
		Timeout: ph.p.Budget.Timeout,
		Dir:     dir,
		Name:    "cairn-" + r.runID + "-" + workspace.SafeName(addr) + "-" + strconv.Itoa(attempt),
		Submitted: func(ref executor.JobRef) {
			r.state.Phase(addr, func(ps *runrec.PhaseState) {
				ps.Executor = ref.Executor
				ps.JobID = ref.ID
				ps.JobDir = r.e.ws.Rel(ref.Dir)
				ps.JobName = ref.Name
			})
			// A job id must reach state.json before cairn can die
			// without a trace of it: resume adopts the job by it.
			_ = r.state.Flush()
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
