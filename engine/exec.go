package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

// Job is one execution of a phase's command.
type Job struct {
	Phase string
	Argv  []string
	Dir   string   // absolute working directory
	Env   []string // complete environment, KEY=VALUE
	// Stdout and Stderr receive the command's output. When they are
	// *os.File the child writes to them directly.
	Stdout, Stderr io.Writer
	// Marker is the value of CAIRN_JOB in Env. When the job is ended
	// early, every process carrying it is killed too, so a descendant
	// that left the process group (setsid, a daemon) does not survive.
	Marker string
}

// Executor runs jobs. Implementations must be safe for concurrent use.
// Run returns the command's exit code; err is non-nil only when the
// command could not be started or was ended by ctx (the code is then -1).
type Executor interface {
	Run(ctx context.Context, job *Job) (exitCode int, err error)
}

// LocalExecutor runs a job as a child process in its own process group,
// so a terminal's Ctrl-C reaches cairn alone and cairn decides what each
// phase receives. When ctx ends, the whole group gets SIGTERM, and SIGKILL
// after Grace. When the command exits, whatever it left running in its
// group is killed, so no descendant outlives the phase or holds its pipes.
type LocalExecutor struct {
	Grace time.Duration // default 5s
}

var _ Executor = (*LocalExecutor)(nil)

// Run implements Executor.
func (x *LocalExecutor) Run(ctx context.Context, job *Job) (int, error) {
	grace := x.Grace
	if grace == 0 {
		grace = 5 * time.Second
	}
	cmd := exec.Command(job.Argv[0], job.Argv[1:]...)
	cmd.Dir = job.Dir
	cmd.Env = job.Env
	cmd.Stdout = job.Stdout
	cmd.Stderr = job.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// WaitDelay bounds how long Wait waits for pipes held by descendants
	// after the child itself exited.
	cmd.WaitDelay = grace
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("start %s: %w", job.Argv[0], err)
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	var killedByCtx atomic.Bool
	go func() {
		select {
		case <-ctx.Done():
			killedByCtx.Store(true)
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(grace):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		case <-done:
		}
	}()
	err := cmd.Wait()
	// Reap what the phase left behind in its process group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	close(done)
	if killedByCtx.Load() {
		if job.Marker != "" {
			killMarked("CAIRN_JOB=" + job.Marker)
		}
		return -1, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		return 0, nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}
