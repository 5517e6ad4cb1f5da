// Package slurm runs phases as Slurm batch jobs: it submits each attempt
// with sbatch, follows all of cairn's jobs with one batched status query
// per interval, cancels them with scancel, and hands the job's output and
// exit status back to the engine as the local executor does.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/executor"
)

// Options tune the executor. Zero values take the defaults.
type Options struct {
	// Commands; default: looked up on PATH.
	Sbatch, Squeue, Scancel, Scontrol string
	// PollMin and PollMax bound the interval between two status queries
	// (default 2s and 30s). The interval halves when a query finds a job
	// ended and doubles when it finds nothing new. Jobs that end normally
	// are seen through their exit file, which costs the controller
	// nothing, so the queries mostly find what ended abnormally.
	PollMin, PollMax time.Duration
	// FileTick is how often the jobs' exit files are looked at (250ms).
	FileTick time.Duration
	// SubmitRate bounds sbatch calls per second (default 5), with bursts
	// of SubmitBurst (default 10).
	SubmitRate  float64
	SubmitBurst int
	// SubmitRetries is how many more times a transient sbatch failure is
	// retried (default 5), with a backoff from RetryBackoff (1s) doubling
	// up to 30s.
	SubmitRetries int
	RetryBackoff  time.Duration
	// ExitFileWait is how long after Slurm reports a job ended cairn still
	// waits for its exit file (a shared filesystem may show it late);
	// default 10s.
	ExitFileWait time.Duration
	// CancelWait bounds the wait for a cancelled job to leave the queue
	// (default 60s).
	CancelWait time.Duration
	// Warn receives one-line warnings (status queries failing); nil
	// discards them.
	Warn func(string)
}

// OptionsFromEnv returns Options with the knobs users may set through the
// environment: CAIRN_SLURM_POLL_MIN, CAIRN_SLURM_POLL_MAX (durations) and
// CAIRN_SLURM_SUBMIT_RATE (sbatch calls per second).
func OptionsFromEnv() (Options, error) {
	var o Options
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{"CAIRN_SLURM_POLL_MIN", &o.PollMin}, {"CAIRN_SLURM_POLL_MAX", &o.PollMax}} {
		if s := os.Getenv(v.name); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				return o, fmt.Errorf("%s=%q is not a positive duration such as 2s", v.name, s)
			}
			*v.dst = d
		}
	}
	if s := os.Getenv("CAIRN_SLURM_SUBMIT_RATE"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			return o, fmt.Errorf("CAIRN_SLURM_SUBMIT_RATE=%q is not a positive number of submissions per second", s)
		}
		o.SubmitRate = f
	}
	return o, nil
}

// Stats counts the executor's calls to Slurm.
type Stats struct {
	Submissions   int64 // sbatch calls
	StatusQueries int64 // squeue and scontrol calls
	Cancels       int64 // scancel calls
}

// Executor runs jobs on Slurm. It implements executor.RemoteExecutor and is
// safe for concurrent use.
type Executor struct {
	o Options

	lookOnce sync.Once
	lookErr  error

	limiter *limiter

	mu      sync.Mutex
	jobs    map[*job]bool
	cancels []*job
	started bool
	wake    chan struct{}

	submits, queries, scancels atomic.Int64
}

var _ executor.RemoteExecutor = (*Executor)(nil)

// New returns a Slurm executor. Nothing is asked of Slurm until a job runs.
func New(o Options) *Executor {
	if o.PollMin <= 0 {
		o.PollMin = 2 * time.Second
	}
	if o.PollMax < o.PollMin {
		o.PollMax = max(30*time.Second, o.PollMin)
	}
	if o.FileTick <= 0 {
		o.FileTick = 250 * time.Millisecond
	}
	if o.SubmitRate <= 0 {
		o.SubmitRate = 5
	}
	if o.SubmitBurst <= 0 {
		o.SubmitBurst = 10
	}
	if o.SubmitRetries == 0 {
		o.SubmitRetries = 5
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = time.Second
	}
	if o.ExitFileWait <= 0 {
		o.ExitFileWait = 10 * time.Second
	}
	if o.CancelWait <= 0 {
		o.CancelWait = 60 * time.Second
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	return &Executor{
		o:       o,
		limiter: newLimiter(o.SubmitRate, o.SubmitBurst),
		jobs:    map[*job]bool{},
		wake:    make(chan struct{}, 1),
	}
}

// Stats returns the counts of Slurm calls so far.
func (x *Executor) Stats() Stats {
	return Stats{Submissions: x.submits.Load(), StatusQueries: x.queries.Load(), Cancels: x.scancels.Load()}
}

// lookPath finds the Slurm commands once.
func (x *Executor) lookPath() error {
	x.lookOnce.Do(func() {
		for _, c := range []struct {
			dst  *string
			name string
		}{{&x.o.Sbatch, "sbatch"}, {&x.o.Squeue, "squeue"}, {&x.o.Scancel, "scancel"}, {&x.o.Scontrol, "scontrol"}} {
			if *c.dst != "" {
				continue
			}
			p, err := exec.LookPath(c.name)
			if err != nil {
				x.lookErr = fmt.Errorf("executor slurm: %s is not on PATH: install Slurm's client commands (Debian: slurm-client) or run with --executor local", c.name)
				return
			}
			*c.dst = p
		}
	})
	return x.lookErr
}

// job is one job being followed.
type job struct {
	id   string
	dir  string
	done chan struct{}
	end  ending // set before done is closed

	// poller-owned:
	endedAt   time.Time // when Slurm first showed it ended (or gone) with no exit file yet
	signalled bool      // its exit file says the command died of a signal
	state     string
	reason    string
	canceled  bool
}

// ending is how a job ended.
type ending struct {
	code     int    // exit status from the exit file, or from Slurm
	fromFile bool   // code came from the exit file
	state    string // Slurm's state, when known
	reason   string
	exitCode string // Slurm's ExitCode=exit:signal, when asked
	gone     bool   // the controller no longer knows the job
}

// Run implements executor.Executor for a job without phase settings: its
// files go to a temporary directory in the job's working directory.
func (x *Executor) Run(ctx context.Context, j *executor.Job) (int, error) {
	dir, err := os.MkdirTemp(j.Dir, ".cairn-slurm-")
	if err != nil {
		return -1, err
	}
	defer os.RemoveAll(dir)
	return x.RunRemote(ctx, j, &executor.RemoteJob{Dir: dir, Name: "cairn-" + JobName(j.Phase)})
}

// RunRemote implements executor.RemoteExecutor.
func (x *Executor) RunRemote(ctx context.Context, j *executor.Job, rj *executor.RemoteJob) (int, error) {
	if err := x.lookPath(); err != nil {
		return -1, err
	}
	submitted := rj.Submitted
	if submitted == nil {
		submitted = func(executor.JobRef) {}
	}
	ref := executor.JobRef{Executor: Plugin.Name, Dir: rj.Dir, Name: JobName(rj.Name)}
	if rj.Adopt != nil {
		ref = *rj.Adopt
		if ref.ID == "" {
			ref.ID = x.findID(ctx, ref)
		}
		submitted(ref)
	} else {
		id, err := x.submit(ctx, j, rj, ref, submitted)
		if err != nil {
			return -1, err
		}
		ref.ID = id
	}

	jb := x.follow(ref)
	logs := []*tailer{
		{path: filepath.Join(ref.Dir, stdoutFile), w: j.Stdout},
		{path: filepath.Join(ref.Dir, stderrFile), w: j.Stderr},
	}
	copyLogs := func() error {
		for _, t := range logs {
			if err := t.copy(); err != nil {
				return err
			}
		}
		return nil
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var logErr error
	for {
		select {
		case <-tick.C:
			if logErr == nil {
				logErr = copyLogs()
			}
			continue
		case <-jb.done:
		case <-ctx.Done():
			x.cancel(jb)
			t := time.NewTimer(x.o.CancelWait)
			select {
			case <-jb.done:
			case <-t.C:
				x.unfollow(jb)
			}
			t.Stop()
			_ = copyLogs()
			return -1, ctx.Err()
		}
		break
	}
	if logErr == nil {
		logErr = copyLogs()
	}
	if logErr == nil {
		// The raw output may hold a secret the command printed; the logs
		// cairn keeps went through its masking.
		for _, t := range logs {
			_ = os.Remove(t.path)
		}
	}
	code, err := jb.end.result(ref.ID, ref.Dir)
	if err == nil && logErr != nil {
		return -1, fmt.Errorf("copy the output of Slurm job %s: %w", ref.ID, logErr)
	}
	return code, err
}

// result turns how a job ended into an exit code and a JobEndedError.
func (e ending) result(id, dir string) (int, error) {
	what := "Slurm job " + id
	if e.fromFile {
		if e.code == 0 {
			return 0, nil
		}
		return e.code, &executor.JobEndedError{ExitCode: e.code, Detail: what}
	}
	detail := what + " " + e.state
	if e.reason != "" && e.reason != "None" {
		detail += " (" + e.reason + ")"
	}
	if e.exitCode != "" {
		detail += ", ExitCode=" + e.exitCode
	}
	switch e.state {
	case "TIMEOUT", "DEADLINE":
		return -1, &executor.JobEndedError{TimedOut: true, ExitCode: -1,
			Detail: detail + ": Slurm ended it at its time limit; raise slurm.time or budget.timeout"}
	case "CANCELLED":
		return -1, &executor.JobEndedError{ExitCode: -1, Detail: detail + ": cancelled outside cairn (scancel, or an administrator)"}
	case "OUT_OF_MEMORY":
		return -1, &executor.JobEndedError{ExitCode: -1, Detail: detail + ": out of memory; raise slurm.mem"}
	case "NODE_FAIL", "BOOT_FAIL":
		return -1, &executor.JobEndedError{ExitCode: -1, Detail: detail + ": the node failed; cairn resume runs the phase again"}
	case "PREEMPTED", "REVOKED":
		return -1, &executor.JobEndedError{ExitCode: -1, Detail: detail + ": preempted; cairn resume runs the phase again"}
	}
	if e.gone {
		return -1, &executor.JobEndedError{ExitCode: -1,
			Detail: fmt.Sprintf("%s left Slurm's queue without recording an exit status in %s", what, filepath.Join(dir, exitFile))}
	}
	code := -1
	if c, _, ok := strings.Cut(e.exitCode, ":"); ok {
		if n, err := strconv.Atoi(c); err == nil && n != 0 {
			code = n
		}
	}
	return code, &executor.JobEndedError{ExitCode: code,
		Detail: fmt.Sprintf("%s: the batch script recorded no exit status in %s", detail, filepath.Join(dir, exitFile))}
}

// submit writes the batch script and submits it, returning the job id.
func (x *Executor) submit(ctx context.Context, j *executor.Job, rj *executor.RemoteJob, ref executor.JobRef, submitted func(executor.JobRef)) (string, error) {
	settings, err := settingsOf(j.Config)
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(rj.Dir); err != nil {
		return "", fmt.Errorf("clear the job directory %s: %w", rj.Dir, err)
	}
	// Private: the job's raw output lands here before cairn masks it.
	if err := os.MkdirAll(rj.Dir, 0o700); err != nil {
		return "", fmt.Errorf("create the job directory: %w", err)
	}
	script := filepath.Join(rj.Dir, scriptFile)
	if err := os.WriteFile(script, []byte(batchScript(j.Phase, rj.Dir)), 0o755); err != nil {
		return "", fmt.Errorf("write the batch script: %w", err)
	}
	args := sbatchArgs(ref.Name, j.Dir, rj.Dir, settings, rj.Timeout)
	env := append(append([]string{}, j.Env...), commandEnv(j.Argv, j.Pipefail)...)
	// sbatch itself may need to find the cluster's configuration.
	if v, ok := os.LookupEnv("SLURM_CONF"); ok {
		env = append(env, "SLURM_CONF="+v)
	}
	submitted(ref)
	backoff := x.o.RetryBackoff
	for attempt := 0; ; attempt++ {
		if err := x.limiter.wait(ctx); err != nil {
			return "", err
		}
		cmd := exec.Command(x.o.Sbatch, args...)
		cmd.Env = env
		cmd.Dir = j.Dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		x.submits.Add(1)
		err := cmd.Run()
		msg := strings.TrimSpace(stderr.String())
		if err == nil {
			id, _, _ := strings.Cut(strings.TrimSpace(stdout.String()), ";")
			if _, perr := strconv.ParseUint(id, 10, 64); perr != nil {
				return "", fmt.Errorf("sbatch answered %q, not a job id (stderr: %s)", stdout.String(), msg)
			}
			ref.ID = id
			_ = os.WriteFile(filepath.Join(rj.Dir, idFile), []byte(id+"\n"), 0o644)
			submitted(ref)
			return id, nil
		}
		if msg == "" {
			msg = err.Error()
		}
		if !transient(msg) || attempt >= x.o.SubmitRetries {
			n := ""
			if attempt > 0 {
				n = fmt.Sprintf(" (after %d attempts)", attempt+1)
			}
			return "", fmt.Errorf("sbatch refused the job%s: %s", n, msg)
		}
		// A timed-out sbatch may have reached the controller: look the
		// job up by its name before submitting it again.
		if id := x.findByName(ctx, ref.Name); id != "" {
			ref.ID = id
			_ = os.WriteFile(filepath.Join(rj.Dir, idFile), []byte(id+"\n"), 0o644)
			submitted(ref)
			return id, nil
		}
		x.o.Warn(fmt.Sprintf("sbatch failed (%s); retrying in %s", msg, backoff))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// findID returns a job's id from its id file, or by its name in the queue.
func (x *Executor) findID(ctx context.Context, ref executor.JobRef) string {
	if b, err := os.ReadFile(filepath.Join(ref.Dir, idFile)); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id
		}
	}
	return x.findByName(ctx, ref.Name)
}

// findByName returns the id of the newest job with the given name, or "".
func (x *Executor) findByName(ctx context.Context, name string) string {
	if name == "" {
		return ""
	}
	out, _, err := x.query(ctx, x.o.Squeue, "-h", "-t", "all", "-n", name, "-o", "%i")
	if err != nil {
		return ""
	}
	ids := strings.Fields(out)
	if len(ids) == 0 {
		return ""
	}
	sort.Slice(ids, func(i, j int) bool { return len(ids[i]) < len(ids[j]) || len(ids[i]) == len(ids[j]) && ids[i] < ids[j] })
	return ids[len(ids)-1]
}

// query runs a Slurm client command that asks the controller something.
func (x *Executor) query(ctx context.Context, name string, args ...string) (string, string, error) {
	x.queries.Add(1)
	qctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(qctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// Adoptable implements executor.RemoteExecutor: the job finished with its
// exit status recorded, or Slurm still has it queued or running.
func (x *Executor) Adoptable(ctx context.Context, ref executor.JobRef) bool {
	if ref.Dir == "" || x.lookPath() != nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(ref.Dir, exitFile)); err == nil {
		return true
	}
	id := ref.ID
	if id == "" {
		id = x.findID(ctx, ref)
	}
	if id == "" {
		return false
	}
	out, _, err := x.query(ctx, x.o.Squeue, "-h", "-t", "all", "-j", id, "-o", "%i|%T|%r")
	if err != nil {
		return false
	}
	r, ok := parseQueue(out)[id]
	if !ok {
		return false
	}
	if terminalStates[r.state] {
		// It may have ended between the two looks.
		_, err := os.Stat(filepath.Join(ref.Dir, exitFile))
		return err == nil
	}
	return true
}

// Cancel implements executor.RemoteExecutor: one scancel for all the jobs.
func (x *Executor) Cancel(ctx context.Context, refs []executor.JobRef) error {
	if err := x.lookPath(); err != nil {
		return err
	}
	var ids []string
	for _, r := range refs {
		id := r.ID
		if id == "" {
			id = x.findID(ctx, r)
		}
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return x.scancel(ctx, ids)
}

func (x *Executor) scancel(ctx context.Context, ids []string) error {
	x.scancels.Add(1)
	cmd := exec.CommandContext(ctx, x.o.Scancel, ids...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("scancel %s: %v: %s", strings.Join(ids, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// tailer copies what a job appended to one of its output files.
type tailer struct {
	path string
	off  int64
	w    io.Writer
}

func (t *tailer) copy() error {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	n, err := io.Copy(t.w, f)
	t.off += n
	return err
}

// limiter is a token bucket: rate tokens a second, at most burst saved.
type limiter struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), tokens: float64(burst), last: time.Now()}
}

// wait takes a token, waiting for one if needed.
func (l *limiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	l.tokens--
	var d time.Duration
	if l.tokens < 0 {
		d = time.Duration(-l.tokens / l.rate * float64(time.Second))
	}
	l.mu.Unlock()
	if d == 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		l.tokens++ // give it back
		l.mu.Unlock()
		return ctx.Err()
	}
}
