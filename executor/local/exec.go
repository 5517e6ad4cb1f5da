// Package local runs phases on this machine: each job a process group of
// its own, a plain shell pipeline without the shell, and every process a
// job leaves behind killed when it ends.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/executor"
)

// Executor runs a job as a child process in its own process group,
// so a terminal's Ctrl-C reaches cairn alone and cairn decides what each
// phase receives. When ctx ends, the whole group gets one SIGTERM, and
// SIGKILL after Grace (or at once when Kill is closed). When the command
// exits, whatever it left running is killed: its process group, and the
// processes that carry the job's marker but left the group. So no
// descendant outlives the phase, and none keeps cairn waiting on a pipe.
//
// A shell line that is a plain pipeline runs without the shell (see
// directPlan). With Job.Pipefail, cairn checks every stage of a pipeline
// it runs itself, and runs other lines that hold a '|' with a shell that
// has pipefail (see pipefailCommand).
//
// The child gets SIGKILL if cairn dies (Pdeathsig); descendants it started
// are killed by the next run in the workspace (KillMarked).
type Executor struct {
	Grace time.Duration // default 5s
	// WaitDelay bounds how long output is still copied from a pipe after
	// the command exited and its processes were killed (default 1s). Only
	// a process that escaped both the group and the marker (it cleared its
	// environment) can hold a pipe that long; its later output is dropped
	// and the log says so. The exit status is the command's.
	WaitDelay time.Duration
	// Kill, when closed, ends every running job with SIGKILL without
	// waiting out the grace period (a third Ctrl-C).
	Kill <-chan struct{}

	reaper markReaper
}

// Plugin makes the local executor known to the registry.
var Plugin = executor.Plugin{
	Name:    executor.Local,
	Summary: "this machine",
	New: func(env executor.Env) (executor.Executor, error) {
		return &Executor{Kill: env.Kill}, nil
	},
}

// Flush waits until every process that escaped a finished job's group
// and carries its marker has been killed. The engine calls it before a
// run ends.
func (x *Executor) Flush() { x.reaper.flush() }

// RunsHere implements executor.Here: a job is a process group of this
// machine.
func (x *Executor) RunsHere() bool { return true }

var _ executor.Here = (*Executor)(nil)
var _ executor.Executor = (*Executor)(nil)

// DefaultGrace is the time between SIGTERM and SIGKILL when a phase is
// ended early.
const DefaultGrace = 5 * time.Second

// Run implements executor.Executor.
func (x *Executor) Run(ctx context.Context, job *executor.Job) (int, error) {
	// Every stream is an *os.File, so Wait returns as soon as the child
	// exits, and cairn, not os/exec, decides how long to wait for output.
	var out outputPipes
	stdout, err := out.file(job.Stdout)
	var stderr *os.File
	if err == nil {
		stderr, err = out.file(job.Stderr)
	}
	if err != nil {
		out.abandon()
		return -1, fmt.Errorf("start %s: output pipe: %w", job.Argv[0], err)
	}
	started := time.Now()
	r, err := startJob(job, stdout, stderr)
	out.started()
	if err != nil {
		out.abandon()
		return -1, fmt.Errorf("start %s: %w", job.Argv[0], err)
	}
	pgid := r.cmds[0].Process.Pid
	w := x.watch(ctx, pgid)
	// The exit status is the last stage's, once every stage has exited
	// (or, with pipefail, the last failed stage's).
	for _, c := range r.cmds {
		err = c.Wait()
	}
	var stageErr *StageFailedError
	if job.Pipefail && len(r.direct) > 1 {
		stageErr = failedStage(r.direct, r.cmds)
	}
	// Reap what the phase left behind: its process group, then whatever
	// left the group but carries the job's marker.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	close(w.done)
	x.reapEscapees(job, pgid, started)
	x.drainOutput(&out, job)
	// sh reports the stages of a pipeline killed by a signal, unless the
	// signal was cairn's, which killed sh too.
	if len(r.direct) > 1 && !w.signalled.Load() && job.Stderr != nil {
		if msg := signalReport(r.cmds); len(msg) > 0 {
			_, _ = job.Stderr.Write(msg)
		}
	}
	if w.killedByCtx.Load() {
		return -1, ctx.Err()
	}
	if stageErr != nil {
		return stageErr.Status, stageErr
	}
	return exitStatus(err)
}

// running holds a job's started processes: the stages of a pipeline cairn
// runs itself (direct), or the one command.
type running struct {
	cmds   []*exec.Cmd
	direct pipeline
}

// startJob starts job's command with the given output streams (nil:
// /dev/null): a plain pipeline without the shell, else through sh.
func startJob(job *executor.Job, stdout, stderr *os.File) (running, error) {
	var r running
	var err error
	if p, ok := directPlan(job.Argv, job.Env, job.Dir); ok {
		// sh exports PWD to what it runs; so does the direct path.
		r.cmds, err = p.start(job.Dir, withPWD(job.Env, job.Dir), devNull(), stdout, stderr)
		if r.cmds != nil {
			r.direct = p
		}
	}
	if r.cmds != nil || err != nil {
		return r, err
	}
	// Not a plain pipeline, or nothing of it started (a file that cannot
	// be opened, a single program the kernel refuses, such as a script
	// without #!, which sh runs itself): let sh have the line, as it
	// would have.
	c := command(job.Argv)
	if job.Pipefail {
		var ok bool
		if c, ok = pipefailCommand(job.Argv); !ok && job.Warn != nil {
			job.Warn(noPipefailWarning)
		}
	}
	c.Dir = job.Dir
	c.Env = job.Env
	// One /dev/null for every phase's stdin, instead of os/exec opening
	// it for each.
	if f := devNull(); f != nil {
		c.Stdin = f
	}
	if stdout != nil {
		c.Stdout = stdout
	}
	if stderr != nil {
		c.Stderr = stderr
	}
	c.SysProcAttr = procAttr()
	_, err = startOnLockedThread([]*exec.Cmd{c}, nil)
	r.cmds = []*exec.Cmd{c}
	return r, err
}

// watchdog ends a job's process group when its context ends or Kill is
// closed: SIGTERM, then SIGKILL after the grace period (at once on Kill).
type watchdog struct {
	done                   chan struct{} // closed once the job's processes exited
	killedByCtx, signalled atomic.Bool
}

func (x *Executor) watch(ctx context.Context, pgid int) *watchdog {
	grace := x.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	w := &watchdog{done: make(chan struct{})}
	go func() {
		select {
		case <-w.done:
			return
		case <-ctx.Done():
			w.killedByCtx.Store(true)
			w.signalled.Store(true)
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
		case <-x.Kill:
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-w.done:
			return
		case <-t.C:
		case <-x.Kill:
		}
		w.signalled.Store(true)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}()
	return w
}

// reapEscapees has the processes that left the job's group but carry its
// marker killed. They are found by scanning /proc, which costs about as
// much as starting a phase: one background scan serves every job that
// ended since the last, off the phase's path. A short job's descendants
// hold pids above its own (pids wrapping around since is checked); a long
// one's are looked for among every process.
func (x *Executor) reapEscapees(job *executor.Job, pgid int, started time.Time) {
	if job.Marker == "" {
		return
	}
	minPID := pgid
	if time.Since(started) > 10*time.Second {
		minPID = 0
	}
	x.reaper.add("CAIRN_JOB="+job.Marker, minPID)
}

// drainOutput waits up to WaitDelay for the copies of the job's output to
// end, and says in the job's log when later output was dropped.
func (x *Executor) drainOutput(out *outputPipes, job *executor.Job) {
	waitDelay := x.WaitDelay
	if waitDelay == 0 {
		waitDelay = time.Second
	}
	if out.wait(waitDelay) {
		return
	}
	out.abandon()
	if w := job.Stderr; w != nil {
		fmt.Fprintf(w, "\ncairn: output written more than %s after the command exited was dropped: a process outside its process group, without CAIRN_JOB in its environment, still held the output open\n", waitDelay)
	}
}

// exitStatus turns what Wait returned into an exit code as sh reports it
// (128+N for a command killed by signal N).
func exitStatus(err error) (int, error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// outputPipes gives a child *os.File streams for a job's writers: the
// writer itself when it is a file, else the write end of a pipe that a
// goroutine copies to the writer. One writer given twice shares one pipe.
type outputPipes struct {
	pipes []*outputPipe
}

type outputPipe struct {
	dst  io.Writer
	r, w *os.File
	done chan struct{}
}

func (o *outputPipes) file(w io.Writer) (*os.File, error) {
	if w == nil {
		return nil, nil // os/exec gives the child /dev/null
	}
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	for _, p := range o.pipes {
		if p.dst == w {
			return p.w, nil
		}
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &outputPipe{dst: w, r: r, w: pw, done: make(chan struct{})}
	o.pipes = append(o.pipes, p)
	go func() {
		defer close(p.done)
		bp := pipeBufs.Get().(*[]byte)
		defer pipeBufs.Put(bp)
		// A failing writer must not block the child: drain the rest.
		if _, err := io.CopyBuffer(w, readerOnly{r}, *bp); err != nil {
			_, _ = io.CopyBuffer(io.Discard, readerOnly{r}, *bp)
		}
	}()
	return pw, nil
}

// pipeBufs holds the buffers of the copies from the children's pipes: a
// copy of its own (io.Copy's 32 KiB for each stream of each job) made a
// cold run of 1,000 phases allocate 60 MiB, and collect it.
var pipeBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readerOnly hides the pipe's WriteTo, which would copy through a buffer
// of its own.
type readerOnly struct{ r io.Reader }

func (r readerOnly) Read(p []byte) (int, error) { return r.r.Read(p) }

// started closes cairn's copies of the write ends: only the child's
// processes hold them now, so the copies end when those are gone.
func (o *outputPipes) started() {
	for _, p := range o.pipes {
		p.w.Close()
	}
}

// wait waits up to d for every copy to reach the end of its pipe.
func (o *outputPipes) wait(d time.Duration) bool {
	if len(o.pipes) == 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for _, p := range o.pipes {
		select {
		case <-p.done:
		case <-t.C:
			return false
		}
	}
	return true
}

// abandon closes the read ends, ending the copies, and waits for them.
func (o *outputPipes) abandon() {
	for _, p := range o.pipes {
		p.w.Close()
		p.r.Close()
	}
	for _, p := range o.pipes {
		<-p.done
	}
}

// startOnLockedThread starts cmds, in order, from an OS thread that never
// exits, and returns how many it started: all of them, or those before
// the one whose error it returns. prep, if not nil, is called with a
// stage's index just before that stage starts (a later stage of a
// pipeline joins the process group its first stage leads).
//
// Pdeathsig is delivered when the thread that forked the child ends, not
// the process (go.dev/issue/27505): forked from an arbitrary thread, a
// phase would be killed if the Go runtime ever retired that thread.
// A fork blocks its thread until the child has called exec (os/exec uses
// vfork), which takes a millisecond or more on a busy machine, so a few
// such threads start jobs, one more whenever all are busy, up to
// maxStarters: jobs ending together do not queue for one thread. Every
// stage of a pipeline is started by one request: each handing over to a
// starter thread and back wakes threads on a busy machine, a cost of the
// order of the fork and exec themselves.
func startOnLockedThread(cmds []*exec.Cmd, prep func(i int)) (int, error) {
	starter.mu.Lock()
	if starter.reqs == nil {
		starter.reqs = make(chan startReq)
	}
	if starter.idle == 0 && starter.n < maxStarters {
		starter.n++
		starter.idle++
		go func(reqs <-chan startReq) {
			runtime.LockOSThread() // never unlocked: the thread lives as long as cairn
			for r := range reqs {
				r.done <- r.start()
			}
		}(starter.reqs)
	}
	starter.idle--
	reqs := starter.reqs
	starter.mu.Unlock()
	req := startReq{cmds: cmds, prep: prep, done: make(chan startResult, 1)}
	reqs <- req
	res := <-req.done
	starter.mu.Lock()
	starter.idle++
	starter.mu.Unlock()
	return res.n, res.err
}

// maxStarters bounds the threads that start jobs.
const maxStarters = 4

var starter struct {
	mu   sync.Mutex
	reqs chan startReq
	n    int // threads started
	idle int // of which not starting a job (may go below 0: callers wait)
}

type startReq struct {
	cmds []*exec.Cmd
	prep func(i int)
	done chan startResult
}

type startResult struct {
	n   int
	err error
}

// start starts r's commands in order, up to the first that fails.
func (r startReq) start() startResult {
	for i, cmd := range r.cmds {
		if r.prep != nil {
			r.prep(i)
		}
		if err := cmd.Start(); err != nil {
			return startResult{i, err}
		}
	}
	return startResult{len(r.cmds), nil}
}

// devNull returns /dev/null open for reading, opened once and kept open,
// or nil if it cannot be opened (os/exec then tries itself and reports
// the failure).
var devNull = sync.OnceValue(func() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	return f
})

// command is exec.Command, except that "sh", which every phase written as
// a string runs through, is looked up in cairn's PATH once rather than
// once per phase (a stat in each PATH directory before the one holding
// it). Other names are looked up every time: a phase may install a tool
// that a later one runs.
func command(argv []string) *exec.Cmd {
	if argv[0] == "sh" {
		if p, err := shPath(); err == nil {
			return &exec.Cmd{Path: p, Args: argv}
		}
	}
	return exec.Command(argv[0], argv[1:]...)
}

var shPath = sync.OnceValues(func() (string, error) { return exec.LookPath("sh") })

// StageFailedError says that a stage of a pipeline cairn ran itself
// failed while the last stage succeeded: with pipefail, the phase fails
// with that stage's status.
type StageFailedError struct {
	Stage, Stages int    // 1-based
	Prog          string // the stage's program, as written
	Status        int    // its exit status; 128+N when killed by signal N, as sh reports it
}

func (e *StageFailedError) Error() string {
	return fmt.Sprintf("stage %d of %d of the pipeline (%s) exited with status %d while the last stage succeeded (pipefail; pipefail = false in the phase ignores this)",
		e.Stage, e.Stages, e.Prog, e.Status)
}

// failedStage returns the last stage of p (run as cmds) that failed,
// when the last stage itself did not: what sh -o pipefail makes the
// pipeline's status. It returns nil when the pipeline's status is its
// last stage's.
func failedStage(p pipeline, cmds []*exec.Cmd) *StageFailedError {
	status := func(i int) int {
		ps := cmds[i].ProcessState
		if ps == nil {
			return -1
		}
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ps.ExitCode()
	}
	if status(len(p)-1) != 0 {
		return nil
	}
	for i := len(p) - 2; i >= 0; i-- {
		if s := status(i); s != 0 {
			return &StageFailedError{Stage: i + 1, Stages: len(p), Prog: p[i].Args[0], Status: s}
		}
	}
	return nil
}

// noPipefailWarning is what a job's Warn receives when a pipeline runs
// through a shell without pipefail.
const noPipefailWarning = "no shell with pipefail was found (sh has no -o pipefail and bash is not on PATH): " +
	"a shell pipeline's status is its last stage's, so a failure of an earlier stage goes unnoticed; " +
	"install bash (or an sh with pipefail), or set pipefail = false in the phases that accept this"

// pipefailCommand returns the command that runs argv, ["sh", "-c", LINE]
// with a '|' in LINE, with pipefail: sh -o pipefail where sh has it
// (POSIX.1-2024; bash, busybox, dash from 0.5.13), else bash invoked as
// sh, which puts it in POSIX mode so that a line written for sh keeps its
// meaning, and $0 and sh's messages stay "sh". Other argv, and lines
// without a '|' (they hold no pipeline), run as they are, through plain
// sh and its speed. ok is false when a pipeline runs without pipefail,
// for want of a shell that has it.
func pipefailCommand(argv []string) (cmd *exec.Cmd, ok bool) {
	if len(argv) != 3 || argv[0] != "sh" || argv[1] != "-c" || !strings.Contains(argv[2], "|") {
		return command(argv), true
	}
	path := pipefailShell()
	if path == "" {
		return command(argv), false
	}
	return &exec.Cmd{Path: path, Args: []string{"sh", "-o", "pipefail", "-c", argv[2]}}, true
}

// pipefailShell returns the program to run as "sh -o pipefail", or "":
// sh if it has the option, else bash. Each is tried once per process on
// a pipeline whose first stage fails, which must fail.
var pipefailShell = sync.OnceValue(func() string {
	for _, name := range []string{"sh", "bash"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		c := &exec.Cmd{Path: p, Args: []string{"sh", "-o", "pipefail", "-c", "(exit 3) | :"}}
		err = c.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			return p
		}
	}
	return ""
})
