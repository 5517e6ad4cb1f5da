package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/executor"
)

// follow starts following a job; its done channel closes when it ended.
func (x *Executor) follow(ref executor.JobRef) *job {
	jb := &job{id: ref.ID, dir: ref.Dir, done: make(chan struct{})}
	x.mu.Lock()
	x.jobs[jb] = true
	if !x.started {
		x.started = true
		go x.poll()
	}
	x.mu.Unlock()
	x.poke()
	return jb
}

// unfollow stops following a job without an ending (cancel wait ran out).
func (x *Executor) unfollow(jb *job) {
	x.mu.Lock()
	delete(x.jobs, jb)
	x.mu.Unlock()
}

// cancel asks the poller to scancel a job; cancels are batched into one
// scancel call.
func (x *Executor) cancel(jb *job) {
	x.mu.Lock()
	x.cancels = append(x.cancels, jb)
	x.mu.Unlock()
	x.poke()
}

func (x *Executor) poke() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// finish records a job's ending and stops following it.
func (x *Executor) finish(jb *job, e ending) {
	x.mu.Lock()
	if !x.jobs[jb] {
		x.mu.Unlock()
		return
	}
	delete(x.jobs, jb)
	x.mu.Unlock()
	jb.end = e
	close(jb.done)
}

// readExit reads a job's exit file.
func readExit(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, exitFile))
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false
	}
	return n, true
}

// poll follows every job of the executor: it looks at their exit files
// every FileTick, which tells when a job's command ended without asking
// Slurm anything, and asks Slurm about all the jobs still running in one
// squeue call per interval, which tells when a job ended without running
// to its end (time limit, cancellation, node failure). It runs for the
// life of the process once a job was followed.
func (x *Executor) poll() {
	ctx := context.Background()
	pc := pace{interval: x.o.PollMin}
	for {
		x.mu.Lock()
		var jobs []*job
		for jb := range x.jobs {
			jobs = append(jobs, jb)
		}
		cancels := x.cancels
		x.cancels = nil
		x.mu.Unlock()

		if len(jobs) == 0 && len(cancels) == 0 {
			pc.interval, pc.next = x.o.PollMin, time.Time{}
			<-x.wake
			continue
		}
		now := time.Now()
		if pc.next.IsZero() {
			// A job just started being followed: its first look at Slurm
			// can wait a first interval.
			pc.next = now.Add(pc.interval)
		}
		left := x.readExitFiles(jobs, now, &pc)
		if len(cancels) > 0 {
			x.cancelJobs(ctx, cancels)
			// Look again soon: a cancelled job leaves in well under a second.
			pc.next = now.Add(300 * time.Millisecond)
		}
		if len(left) > 0 && !now.Before(pc.next) {
			changed, err := x.queryJobs(ctx, left)
			x.paceAfterQuery(&pc, left, changed, err)
		}

		t := time.NewTimer(x.o.FileTick)
		select {
		case <-t.C:
		case <-x.wake:
		}
		t.Stop()
	}
}

// pace is the poller's schedule of status queries.
type pace struct {
	interval time.Duration
	next     time.Time // zero: a first interval from the next round
	failing  int       // queries failed in a row
}

// readExitFiles finishes the jobs whose exit file says how they ended and
// returns the others. The exit file is the source of truth for a command
// that ran to its end. A command that died of a signal may have been
// killed by Slurm (time limit, scancel, memory): Slurm's state then says
// why, so it is asked first.
func (x *Executor) readExitFiles(jobs []*job, now time.Time, pc *pace) []*job {
	var left []*job
	for _, jb := range jobs {
		if code, ok := readExit(jb.dir); ok {
			if code < 128 || jb.id == "" {
				x.finish(jb, ending{code: code, fromFile: true})
				continue
			}
			if !jb.signalled {
				jb.signalled = true
				pc.next = now
			}
		}
		left = append(left, jb)
	}
	return left
}

// cancelJobs cancels jobs, and those asked for meanwhile, with one
// scancel: a stop cancels every running phase at once, and their
// requests arrive within a few milliseconds.
func (x *Executor) cancelJobs(ctx context.Context, cancels []*job) {
	time.Sleep(50 * time.Millisecond)
	x.mu.Lock()
	cancels = append(cancels, x.cancels...)
	x.cancels = nil
	x.mu.Unlock()
	var ids []string
	for _, jb := range cancels {
		jb.canceled = true
		if jb.id != "" {
			ids = append(ids, jb.id)
		}
	}
	if len(ids) > 0 {
		if err := x.scancel(ctx, ids); err != nil {
			x.o.Warn(err.Error())
		}
	}
}

// paceAfterQuery sets when to query next: the interval halves when a
// query found a job ended and doubles when it found nothing new or
// failed; a job seen ended without its exit file is looked at again once
// its grace is over, and one whose command died of a signal soon.
func (x *Executor) paceAfterQuery(pc *pace, left []*job, changed bool, err error) {
	if err != nil {
		pc.failing++
		if pc.failing == 1 || pc.failing%10 == 0 {
			x.o.Warn(fmt.Sprintf("Slurm status query failed (%d in a row; jobs are still followed through their exit files): %v", pc.failing, err))
		}
		pc.interval = min(pc.interval*2, x.o.PollMax)
	} else {
		pc.failing = 0
		if changed {
			pc.interval = max(pc.interval/2, x.o.PollMin)
		} else {
			pc.interval = min(pc.interval*2, x.o.PollMax)
		}
	}
	pc.next = time.Now().Add(pc.interval)
	for _, jb := range left {
		if !jb.endedAt.IsZero() {
			if t := jb.endedAt.Add(x.o.ExitFileWait); t.Before(pc.next) {
				pc.next = t
			}
		}
		// A command that died of a signal: Slurm says why within seconds.
		if t := time.Now().Add(x.o.PollMin); jb.signalled && t.Before(pc.next) {
			pc.next = t
		}
	}
}

// queryJobs asks Slurm about jobs in one squeue call and finishes those
// that ended without an exit file. It reports whether any job ended.
func (x *Executor) queryJobs(ctx context.Context, jobs []*job) (bool, error) {
	var ids []string
	for _, jb := range jobs {
		if jb.id != "" {
			ids = append(ids, jb.id)
		}
	}
	if len(ids) == 0 {
		return false, nil
	}
	out, stderr, err := x.query(ctx, x.o.Squeue, "-h", "-t", "all", "-j", strings.Join(ids, ","), "-o", "%i|%T|%r")
	if err != nil && !invalidJob(stderr) {
		return false, fmt.Errorf("squeue: %v: %s", err, strings.TrimSpace(stderr))
	}
	rows := parseQueue(out)
	now := time.Now()
	changed := false
	for _, jb := range jobs {
		if jb.id == "" {
			continue
		}
		r, listed := rows[jb.id]
		if listed {
			jb.state, jb.reason = r.state, r.reason
		}
		if listed && !terminalStates[r.state] {
			continue
		}
		// Ended, or gone from the controller. The exit file may have
		// landed since the last look.
		e := ending{state: r.state, reason: r.reason, gone: !listed}
		if code, ok := readExit(jb.dir); ok {
			if code >= 128 && listed && killedBySlurm[r.state] {
				x.finish(jb, x.describe(ctx, jb, e))
			} else {
				x.finish(jb, ending{code: code, fromFile: true})
			}
			changed = true
			continue
		}
		switch {
		case jb.canceled && listed:
			// Cancelled by cairn: the caller returns the context's error.
			x.finish(jb, e)
			changed = true
			continue
		case listed && killedBySlurm[r.state]:
			// Killed by Slurm: the batch script wrote no exit file.
			x.finish(jb, x.describe(ctx, jb, e))
			changed = true
			continue
		}
		// COMPLETED, FAILED or gone without an exit file: a shared
		// filesystem may show the file late; wait a little for it.
		if jb.endedAt.IsZero() {
			jb.endedAt = now
			continue
		}
		if now.Sub(jb.endedAt) < x.o.ExitFileWait {
			continue
		}
		x.finish(jb, x.describe(ctx, jb, e))
		changed = true
	}
	return changed, nil
}

// describe asks scontrol for a job's exit code and reason (one query, for
// a job that ended abnormally).
func (x *Executor) describe(ctx context.Context, jb *job, e ending) ending {
	out, _, err := x.query(ctx, x.o.Scontrol, "-o", "show", "job", jb.id)
	if err != nil {
		return e
	}
	m := parseScontrol(out)
	if s := m["JobState"]; s != "" {
		e.state = s
		e.gone = false
	}
	if r := m["Reason"]; r != "" {
		e.reason = r
	}
	e.exitCode = m["ExitCode"]
	return e
}
