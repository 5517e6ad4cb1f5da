package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// catMatchesSh runs line by sh -c and by LocalExecutor (output to
// writers, then to files) in directories that setup prepares, and
// reports every difference in exit code, stdout, stderr and files. The
// line must take the direct path.
func catMatchesSh(t *testing.T, line string, setup func(t *testing.T, dir string)) {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	ref := t.TempDir()
	setup(t, ref)
	want := shRun(t, line, env, ref)
	x := &LocalExecutor{}
	defer x.Flush()
	cairnRunsLikeSh(t, x, line, env, want, func(t *testing.T, dir string) {
		setup(t, dir)
		if _, ok := directPlan([]string{"sh", "-c", line}, env, dir); !ok {
			t.Fatalf("%q: directPlan refused it; the test needs the direct path", line)
		}
	})
}

// TestCatStageSymlinkToSelf: an operand that is a symbolic link to a
// file of the opening process (/proc/self/..., /dev/stdin) is cat's
// file under sh, so cairn must not open it as its own.
func TestCatStageSymlinkToSelf(t *testing.T) {
	for _, tc := range []struct{ target, line string }{
		{"/proc/self/status", "cat me | head -n 1"},
		{"/proc/self", "cat me/cmdline | tr '\\0' ' '"},
		{"/proc/self/cmdline", "cat me | tr '\\0' ' '"},
	} {
		catMatchesSh(t, tc.line, func(t *testing.T, dir string) {
			if err := os.Symlink(tc.target, filepath.Join(dir, "me")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCatStageStdinMagicLink: an operand reached through a link to
// /dev/stdin (the magic link /proc/self/fd/0) names the job's standard
// input under sh (/dev/null, for a phase), cairn's own if cairn opens it.
func TestCatStageStdinMagicLink(t *testing.T) {
	// cairn's standard input, for this test, a regular file.
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("cairn's own standard input\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	old, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Dup3(old, 0, 0); unix.Close(old) }()
	if err := unix.Dup3(int(f.Fd()), 0, 0); err != nil {
		t.Fatal(err)
	}
	x := &LocalExecutor{}
	defer x.Flush()
	dir := t.TempDir()
	if err := os.Symlink("/dev/stdin", filepath.Join(dir, "in")); err != nil {
		t.Fatal(err)
	}
	var out, errb lockedBuffer
	job := &Job{Phase: "p", Argv: []string{"sh", "-c", "cat in | wc -c"}, Dir: dir,
		Env: []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}, Stdout: &out, Stderr: &errb}
	code, err := x.Run(context.Background(), job)
	if err != nil || code != 0 || strings.TrimSpace(out.String()) != "0" {
		t.Errorf("cat in | wc -c (in -> /dev/stdin) = %d, %v, %q, stderr %q; want 0 and \"0\" (the job's stdin is /dev/null)",
			code, err, out.String(), errb.String())
	}
}

// TestCatStageSetsid: without a cat process the second stage leads the
// pipeline's process group, which no stage does under sh; setsid, finding
// itself a leader, forks and exits at once, and the pipeline ended before
// the program it runs had read its input (wc counted 64 KiB, or nothing).
func TestCatStageSetsid(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	catMatchesSh(t, "cat big | setsid wc -c > out", func(t *testing.T, dir string) { pipelineFixture(t, dir) })
}

// TestCatStageNeverOpensFIFO: an operand that is not a regular file is
// cat's to open, never cairn's: opening a FIFO, even without blocking,
// lets a writer waiting on it go on, and find no reader once cairn has
// closed it again (a device's opening may also do something).
func TestCatStageNeverOpensFIFO(t *testing.T) {
	dir := t.TempDir()
	pipelineFixture(t, dir)
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, filepath.Join(dir, "fifo"), unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, line := range []string{"cat fifo | wc -c", "cat a fifo | wc -c"} {
		p, ok := directPlan([]string{"sh", "-c", line}, env, dir)
		if !ok {
			t.Fatalf("%q: directPlan refused it", line)
		}
		if c := openCat(dir, p); c != nil {
			c.abandon()
			t.Errorf("%q: cairn copies a FIFO", line)
		}
		// The event of an open is queued by the open itself.
		buf := make([]byte, 4096)
		if n, err := unix.Read(in, buf); n > 0 {
			t.Errorf("%q: cairn opened the FIFO", line)
		} else if !errors.Is(err, unix.EAGAIN) {
			t.Fatalf("inotify read: %d, %v", n, err)
		}
	}
}

// TestCatStageReadErrorReported: a read error of an operand is reported
// on the job's standard error as cat reports it, also when that is a
// writer (a pipe cairn copies from) rather than a file. A tracefs file
// that only root may open and whose read fails (trace_marker) serves.
func TestCatStageReadErrorReported(t *testing.T) {
	marker := "/sys/kernel/tracing/trace_marker"
	if os.Geteuid() != 0 {
		if os.Getenv("CAIRN_REQUIRE_SERVICES") == "" {
			t.Skip("needs root, to open trace_marker")
		}
		t.Fatal("needs root, to open trace_marker (CAIRN_REQUIRE_SERVICES is set)")
	}
	if _, err := os.Stat(marker); err != nil {
		mnt := t.TempDir()
		if err := unix.Mount("nodev", mnt, "tracefs", 0, ""); err != nil {
			t.Fatalf("%s missing and tracefs cannot be mounted: %v", marker, err)
		}
		defer unix.Unmount(mnt, unix.MNT_DETACH)
		marker = filepath.Join(mnt, "trace_marker")
	}
	line := "cat a " + marker + " b | cat"
	catMatchesSh(t, line, func(t *testing.T, dir string) { pipelineFixture(t, dir) })
	dir := t.TempDir()
	pipelineFixture(t, dir)
	p, ok := directPlan([]string{"sh", "-c", line}, []string{"PATH=" + os.Getenv("PATH")}, dir)
	if !ok {
		t.Fatalf("%q: directPlan refused it", line)
	}
	c := openCat(dir, p)
	if c == nil {
		t.Fatalf("%q: cairn does not copy the first stage; the test needs it to", line)
	}
	c.abandon()
}

// openFDs returns what this process's descriptors are open on, but the
// one reading the directory.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	fds := map[string]string{}
	for _, n := range names {
		if n == strconv.Itoa(int(d.Fd())) {
			continue
		}
		fds[n], _ = os.Readlink("/proc/self/fd/" + n)
	}
	return fds
}

// TestCatStageNoLeaks: runs of pipelines whose first stage cairn copies,
// or starts to and then leaves to sh or fails, and runs ended while the
// copy is blocked on a reader that stopped, leave no descriptor open.
func TestCatStageNoLeaks(t *testing.T) {
	dir := t.TempDir()
	pipelineFixture(t, dir)
	mark := testMark(t)
	defer killCensus(mark)
	busyScript(t, dir)
	// The job's streams are files: a writer's pipe is cairn's to
	// close, not the stage's (its read end waits for the collector).
	log, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	x := &LocalExecutor{Grace: 50 * time.Millisecond}
	defer x.Flush()
	runs := 0
	run := func(line string, d time.Duration) {
		ctx := context.Background()
		if d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		began := time.Now()
		runs++ // each job a marker of its own: the reaper kills a finished job's
		job := testJob(dir, mark, line, log, log)
		job.Marker = fmt.Sprintf("job-%s-%d", mark, runs)
		job.Env[len(job.Env)-1] = "CAIRN_JOB=" + job.Marker
		code, err := x.Run(ctx, job)
		if d > 0 && (code != -1 || !errors.Is(err, context.DeadlineExceeded)) {
			t.Errorf("%q: Run = %d, %v; want -1 and the deadline", line, code, err)
		}
		if el := time.Since(began); el > 10*time.Second {
			t.Errorf("%q: Run took %s", line, el)
		}
	}
	lines := []string{
		"cat a b | wc -c",
		"cat big | head -c 5",
		"cat big big | sh -c 'exit 4'",
		"cat a missing | wc -c",     // opened a, then left to cat
		"cat a b | wc -c > nodir/x", // a redirection fails: sh
		"cat a b | ./busy",          // the first process fails: sh
		"cat a b | cat | ./busy",    // a later one fails
	}
	for _, l := range lines { // warm up: the starter threads, devNull
		run(l, 0)
	}
	x.Flush() // its scans of /proc open files for a moment
	before := openFDs(t)
	const rounds = 10
	for range rounds {
		for _, l := range lines {
			run(l, 0)
		}
		run("cat big | sh -c 'kill -STOP $$'", 100*time.Millisecond)
		run("cat big | sleep 30", 100*time.Millisecond)
	}
	x.Flush()
	// Other tests' leftovers (a finalizer closing a file, a reaper's
	// scan) may open or close descriptors meanwhile: a descriptor on a
	// file of this test, or one kind of descriptor added in every round,
	// is a leak.
	added := map[string]int{}
	for fd, target := range openFDs(t) {
		if before[fd] == target {
			continue
		}
		added[target]++
		if strings.HasPrefix(target, dir) || target == log.Name() {
			t.Errorf("descriptor %s left open on %s", fd, target)
		}
	}
	pipes := 0
	for target, n := range added {
		if strings.HasPrefix(target, "pipe:") {
			pipes += n
		}
	}
	if pipes >= rounds {
		t.Errorf("%d pipes left open in %d rounds: %v", pipes, rounds, added)
	}
	if alive := survivors(t, mark, 5*time.Second); len(alive) > 0 {
		t.Errorf("survivors: %q", alive)
	}
}
