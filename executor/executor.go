// Package executor is the contract between the engine and the programs
// that run a phase's command: a Job, the Executor that runs it, the
// RemoteExecutor whose jobs may outlive cairn, and the registry through
// which each executor makes itself known (its name, its configuration
// block and its factory). The engine schedules every phase the same way;
// only how one attempt's command runs differs from one executor to the
// next.
package executor

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Job is one execution of a phase's command.
type Job struct {
	Phase string
	Argv  []string
	Dir   string   // absolute working directory
	Env   []string // complete environment, KEY=VALUE
	// Stdout and Stderr receive the command's output. When they are
	// *os.File the child writes to them directly; otherwise the executor
	// copies from a pipe.
	Stdout, Stderr io.Writer
	// Marker is the value of CAIRN_JOB in Env. When the job ends, every
	// process carrying it is killed too, so a descendant that left the
	// process group (setsid, a daemon) does not survive its phase.
	Marker string
	// Config is the phase's settings for the executor that runs the job:
	// what its Decode made of its blocks in the spec.
	Config Config
	// Pipefail makes a shell line (["sh", "-c", LINE]) fail when any
	// stage of a pipeline fails, not only the last.
	Pipefail bool
	// Warn, if not nil, receives warnings about how the job ran (a
	// pipeline run without pipefail, for want of a shell that has it).
	Warn func(msg string)
}

// Executor runs jobs. Implementations must be safe for concurrent use.
// Run returns the command's exit code; err is non-nil only when the
// command could not be started or was ended by ctx (the code is then -1),
// or, with an exit code, when the executor has more to say about a
// failure than the code (a failed stage of a pipeline).
type Executor interface {
	Run(ctx context.Context, job *Job) (exitCode int, err error)
}

// Here is implemented by an executor whose commands run on this
// machine's kernel, on the workspace's own filesystem: every file they
// write raises this kernel's file events, so a directory watch started
// before the command vouches for what it did not change. An executor that
// does not implement it (or says false) is assumed to run elsewhere.
type Here interface {
	RunsHere() bool
}

// RunsHere reports whether x says its commands run on this kernel (see
// Here).
func RunsHere(x Executor) bool {
	h, ok := x.(Here)
	return ok && h.RunsHere()
}

// RemoteExecutor is an Executor whose jobs run elsewhere (a cluster) and
// may outlive the cairn process that submitted them.
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
	// Timeout is the phase's budget timeout (0: none): the backend counts
	// it, not cairn, since the time a job waits in a queue is not the
	// phase's.
	Timeout time.Duration
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
	// and again once it has an id, so that the run's record can find it
	// again.
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
	// TimedOut: the backend ended the job at its time limit. Otherwise
	// the phase failed.
	TimedOut bool
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
