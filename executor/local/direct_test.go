package local

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cairn-run/cairn/executor"
)

func TestParsePipeline(t *testing.T) {
	args := func(a ...string) stage { return stage{Args: a} }
	out := func(fd int, path string) redirect { return redirect{FD: fd, Op: redirOut, Path: path} }
	app := func(fd int, path string) redirect { return redirect{FD: fd, Op: redirAppend, Path: path} }
	in := func(fd int, path string) redirect { return redirect{FD: fd, Op: redirIn, Path: path} }
	dup := func(fd, from int) redirect { return redirect{FD: fd, Op: redirDup, From: from} }
	with := func(s stage, r ...redirect) stage { s.Redirs = r; return s }
	for _, tc := range []struct {
		line string
		want pipeline
	}{
		{"prog", pipeline{args("prog")}},
		{"  prog -n 3\tin/a.txt --out=b.txt x,y:z+1@2%  ", pipeline{args("prog", "-n", "3", "in/a.txt", "--out=b.txt", "x,y:z+1@2%")}},
		{"cat in/a in/b | sha256sum > out/p1", pipeline{args("cat", "in/a", "in/b"), with(args("sha256sum"), out(1, "out/p1"))}},
		{"a|b|c|d|e|f", pipeline{args("a"), args("b"), args("c"), args("d"), args("e"), args("f")}},
		{"a >out", pipeline{with(args("a"), out(1, "out"))}},
		{"a>out", pipeline{with(args("a"), out(1, "out"))}},
		{"a >  out x", pipeline{with(args("a", "x"), out(1, "out"))}},
		{"a >> log", pipeline{with(args("a"), app(1, "log"))}},
		{"a 2>>log", pipeline{with(args("a"), app(2, "log"))}},
		{"a 2> err", pipeline{with(args("a"), out(2, "err"))}},
		{"a < in", pipeline{with(args("a"), in(0, "in"))}},
		{"a<in", pipeline{with(args("a"), in(0, "in"))}},
		{"a 0<in 1>o 2>e", pipeline{with(args("a"), in(0, "in"), out(1, "o"), out(2, "e"))}},
		{"a 2<in", pipeline{with(args("a"), in(2, "in"))}},
		{"a 1>o", pipeline{with(args("a"), out(1, "o"))}},
		{"a 2>&1", pipeline{with(args("a"), dup(2, 1))}},
		{"a >&2", pipeline{with(args("a"), dup(1, 2))}},
		{"a 1>&2", pipeline{with(args("a"), dup(1, 2))}},
		{"a >& 2", pipeline{with(args("a"), dup(1, 2))}},
		{"a 0>&1", pipeline{with(args("a"), dup(0, 1))}},
		{"a > f 2>&1", pipeline{with(args("a"), out(1, "f"), dup(2, 1))}},
		{"a 2>&1 > f", pipeline{with(args("a"), dup(2, 1), out(1, "f"))}},
		{"a 2>&1 | b", pipeline{with(args("a"), dup(2, 1)), args("b")}},
		{"<in a x | >o b y", pipeline{with(args("a", "x"), in(0, "in")), with(args("b", "y"), out(1, "o"))}},
		{"a>x>y", pipeline{with(args("a"), out(1, "x"), out(1, "y"))}},
		{"a >x2>y", pipeline{with(args("a"), out(1, "x2"), out(1, "y"))}},
		{"head -c 10 < big | od -c", pipeline{with(args("head", "-c", "10"), in(0, "big")), args("od", "-c")}},
		// A digit is a descriptor only alone and right before the operator.
		{"a2>x", pipeline{with(args("a2"), out(1, "x"))}},
		{"cat a 2 >x", pipeline{with(args("cat", "a", "2"), out(1, "x"))}},
		{"a '2'>x", pipeline{with(args("a", "2"), out(1, "x"))}},
		// Single quotes hold anything but a quote.
		{"prog --name='a b' 'it''s' '' x''y", pipeline{args("prog", "--name=a b", "its", "", "xy")}},
		{`prog '$HOME | ; * "x" \ # ~ &&'`, pipeline{args("prog", `$HOME | ; * "x" \ # ~ &&`)}},
		{"prog 'a\nb'", pipeline{args("prog", "a\nb")}},
		{"'prog' x", pipeline{args("prog", "x")}},
		{"prog > 'my file'|'b c'", pipeline{with(args("prog"), out(1, "my file")), args("b c")}},
	} {
		got, ok := parsePipeline(tc.line)
		if !ok {
			t.Errorf("%q: refused, want %v", tc.line, tc.want)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.line, diff)
		}
	}
	for _, line := range []string{
		"", "   ", "\t",
		"prog; x", "prog && x", "prog || x", "prog |& x", "prog &", "prog & x",
		"prog | | x", "| prog", "prog |", "prog||x",
		"prog >", "prog > | x", "prog >>", "prog <", "prog 2>&", "prog 2>& | x", "prog > > x", "prog > 2>x", "prog 2>&1>x", // dash: a syntax error
		"prog >&-", "prog >&3", "prog >&12", "prog >&file", "prog >&'1'", "prog <&0", "prog 2<&0",
		"prog 3>x", "prog 9>x", "prog 12>x", "prog 3>&1", "prog 2>&1 3>x",
		"prog >|x", "prog <>x", "prog <<EOF", "prog <<-EOF", "prog >''",
		"prog $HOME", "prog ${X}", `prog "a"`, "prog `x`", `prog a\ b`, `prog \`,
		"prog *.txt", "prog a?", "prog [ab]", "prog ~/x", "prog a#b", "prog #c",
		"prog\nx", "prog\r", "(prog)", "{ prog; }", "prog !", "! prog",
		"X=1 prog", "prog | X=1 x", "--a=b prog",
		"echo hi", "echo hi | cat", "cat | true", "cat | false", "cat | test -e x", "cd sub", "exit 3",
		"cat | if", "then x", "prog 'unterminated", "prog 'a' 'b",
		"> out", "prog | > out", "2>&1", "< in | x",
	} {
		if got, ok := parsePipeline(line); ok {
			t.Errorf("%q: accepted as %+v, want it left to sh", line, got)
		}
	}
}

func TestDirectPlan(t *testing.T) {
	bin := t.TempDir()
	dir := t.TempDir()
	for _, f := range []struct {
		path, text string
		mode       os.FileMode
	}{
		{filepath.Join(bin, "prog"), "#!/bin/sh\n", 0o755},
		{filepath.Join(bin, "plain"), "#!/bin/sh\n", 0o644},
		{filepath.Join(bin, "noshebang"), "echo hi\n", 0o755},
		{filepath.Join(bin, "short"), "#", 0o755},
		{filepath.Join(bin, "env"), "#!/usr/bin/env sh\n", 0o755},
		{filepath.Join(bin, "badinterp"), "#!/no/such/sh\n", 0o755},
		{filepath.Join(bin, "crlf"), "#!/bin/sh\r\n", 0o755},
		{filepath.Join(bin, "relinterp"), "#!sh\n", 0o755},
		{filepath.Join(bin, "scriptinterp"), "#!" + filepath.Join(bin, "prog") + "\n", 0o755},
		{filepath.Join(bin, "noline"), "#!/bin/sh", 0o755},
		{filepath.Join(bin, "long"), "#!/bin/sh " + strings.Repeat("x", 300) + "\n", 0o755},
		{filepath.Join(dir, "local"), "#!/bin/sh\n", 0o755},
	} {
		if err := os.WriteFile(f.path, []byte(f.text), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=/nowhere", "PATH=" + bin}
	prog := filepath.Join(bin, "prog")
	for _, tc := range []struct {
		line  string
		progs []string // nil: through sh
	}{
		{"prog", []string{prog}},
		{"prog a | prog b > out | prog c", []string{prog, prog, prog}},
		{"./local arg", []string{filepath.Join(dir, "local")}},
		{"prog | ./local", []string{prog, filepath.Join(dir, "local")}},
		{"prog | " + sh + " -c 'exit 3'", []string{prog, sh}},
		// A single program the kernel refuses is started, and goes to
		// sh when starting fails; in a pipeline, it goes to sh at once.
		{"noshebang", []string{filepath.Join(bin, "noshebang")}},
		{"noshebang | prog", nil},
		{"prog | noshebang", nil},
		{"prog | short", nil},
		{"prog | env", []string{prog, filepath.Join(bin, "env")}},
		{"prog | badinterp", nil}, // sh says it is not found
		{"prog | crlf", nil},
		{"prog | relinterp", nil},
		{"prog | scriptinterp", nil},
		{"prog | noline", []string{prog, filepath.Join(bin, "noline")}},
		{"prog | long", nil},
		{"missing arg", nil},
		{"prog | missing", nil},
		{"plain", nil}, // not executable: sh reports it
		{"prog | plain", nil},
		{"prog | sh -c 'exit 3'", nil}, // sh is not in this PATH
		{"prog ; prog", nil},
	} {
		p, ok := directPlan([]string{"sh", "-c", tc.line}, env, dir)
		var progs []string
		for _, st := range p {
			progs = append(progs, st.Prog)
		}
		if ok != (tc.progs != nil) || !cmp.Equal(progs, tc.progs) {
			t.Errorf("%q: got %q, %v; want %q", tc.line, progs, ok, tc.progs)
		}
	}
	if _, ok := directPlan([]string{"prog", "a"}, env, dir); ok {
		t.Errorf("an argv that is not sh -c was rewritten")
	}
}

// TestRunDirectFallsBackToSh: a plain command naming a script without #!
// (which the kernel will not exec) still runs, through sh as before, and
// a plain command runs with the job's environment and directory.
func TestRunDirectFallsBackToSh(t *testing.T) {
	bin := t.TempDir()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "noshebang"), []byte("echo from-script > out.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	x := &Executor{}
	defer x.Flush()
	run := func(line string) {
		t.Helper()
		var stderr strings.Builder
		code, err := x.Run(context.Background(), &executor.Job{Phase: "p", Argv: []string{"sh", "-c", line}, Dir: dir, Env: env, Stderr: &stderr})
		if err != nil || code != 0 {
			t.Fatalf("%q: exit %d, %v\n%s", line, code, err, stderr.String())
		}
	}
	run("noshebang")
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "from-script\n" {
		t.Errorf("script without #!: out.txt = %q, %v", b, err)
	}
	run("touch made-here")
	if _, err := os.Stat(filepath.Join(dir, "made-here")); err != nil {
		t.Errorf("plain command: %v", err)
	}
}

// pipelineFixture writes the files the pipeline tests read into dir.
func pipelineFixture(t *testing.T, dir string) {
	t.Helper()
	big := make([]byte, 6<<20) // several pipe buffers, many times over
	for i := range big {
		big[i] = byte(i*7 + i>>11)
	}
	for name, data := range map[string][]byte{
		"a":       []byte("alpha\nbeta\n"),
		"b":       []byte("gamma\n"),
		"big":     big,
		"log":     []byte("earlier\n"),
		"sub/c":   []byte("in a subdirectory\n"),
		"script":  []byte("#!/bin/sh\necho script \"$@\"; echo to-stderr >&2\n"),
		"plain":   []byte("echo plain script\n"),
		"fifo":    nil, // made a FIFO below
		"dir/.gk": nil,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if name == "script" || name == "plain" {
			mode = 0o755
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	// Symbolic links to files of the opening process.
	for link, target := range map[string]string{"selfstatus": "/proc/self/status", "stdout-link": "/dev/stdout"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
}

// treeBytes returns every regular file under dir with its contents.
func treeBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() { // the FIFO is not read
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

type runResult struct {
	Code           int
	Stdout, Stderr string
	Files          map[string]string
}

// TestPipelineMatchesSh: every line, run by cairn without a shell, has
// the exit code, output and files that sh -c gives it, its output going
// to pipes (a writer) or to files. The lines must be ones cairn runs
// itself (the test fails if the parser refuses one), except the last
// ones, which it hands to sh once it finds it cannot run them (a file
// that cannot be opened, a program that is a script without #!).
func TestPipelineMatchesSh(t *testing.T) {
	lines := []string{
		"cat a b | sha256sum > out",
		"cat a b|sort -r|tr a-z A-Z|cat -n|cat>out",
		"cat a missing 2>&1 > out | tr a-z A-Z",
		"cat a missing > out 2>&1 | tr a-z A-Z",
		"cat a missing 2>err | cat > out",
		"cat a >> log | cat b 2>> log2",
		"cat<a>out",
		"<a cat | >out wc -l",
		"cat a >&2 | wc -c",
		"cat a 1>&2 | wc -c",
		"cat a | cat missing | wc -c",
		"cat a | cat missing >&2 | wc -c",
		"cat a | sh -c 'cat >/dev/null; exit 3'",
		"/bin/false | /bin/true",
		"/bin/true | /bin/false",
		"cat a | sh -c 'kill -9 $$'",
		"sh -c 'kill -TERM $$' | cat a",
		"cat big | sh -c 'kill -SEGV $$'",
		"yes | head -n 3",
		"cat big big | cat | sha256sum",
		"cat big | cat | cat > copy",
		"head -c 10 < big | od -An -tx1",
		"cat a 2 >x",
		"cat < dir | cat",
		"cat missing 2>/dev/null | wc -c",
		"cat sub/c ./a | ./script 'a b' --name='c d' 2>&1 | cat -A",
		"ls sub dir | cat",
		"tr a-z A-Z < a > a.upper",
		"cat a > nodir/x | cat b", // cannot be opened: sh reports it
		"cat nothing < missing | cat b",
		"cat < /dev/stdin | cat a",                // the job's stdin, not cairn's
		"cat a > /dev/stderr | cat b",             // the job's stderr
		"cat a 2>/dev/null >/dev/fd/2 | cat",      // likewise
		"cat < /proc/self/cmdline | tr '\\0' ' '", // sh's, not cairn's
		"cat a > fifo | cat < fifo",               // opening it would block cairn
		"cat a | ./plain | cat",                   // a script sh runs itself
		// Pipelines led by cat: its messages, its early end, its operands.
		"cat a a b | wc -c",
		"cat sub/c a | cat -A",
		"cat big | head -c 5",                  // the reader leaves early: EPIPE, silently
		"cat big big | sh -c 'exit 4'",         // the reader never reads
		"cat a missing | wc -c",                // cat's own message
		"cat dir a | wc -c",                    // a directory: cat's message
		"cat -n a | cat",                       // an option
		"cat a - b | wc -c",                    // its standard input
		"cat /proc/self/status | grep -c Name", // cat's own /proc/self
		"cat a b 2>err | wc -c",                // a redirection
		// Redirections through a symbolic link to a file of the opening
		// process: the phase's, as sh opens it, not cairn's.
		"head -1 < selfstatus | cat",
		"cat a > stdout-link",
	}
	viaSh := map[string]bool{"cat a | ./plain | cat": true} // directPlan refuses them
	x := &Executor{}
	defer x.Flush()
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	for _, line := range lines {
		ref := t.TempDir()
		pipelineFixture(t, ref)
		want := shRun(t, line, env, ref)
		if _, ok := parsePipeline(line); !ok {
			t.Errorf("%q: refused by the parser", line)
		}
		if _, ok := directPlan([]string{"sh", "-c", line}, env, ref); ok == viaSh[line] {
			t.Errorf("%q: directPlan says %v", line, ok)
		}
		cairnRunsLikeSh(t, x, line, env, want, pipelineFixture)
	}
}

// shRun runs line by sh -c in dir and returns its exit code, output and
// the files of dir after it.
func shRun(t *testing.T, line string, env []string, dir string) runResult {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	want := runResult{Code: 0}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%q: sh: %v", line, err)
		}
		want.Code = ee.ExitCode()
	}
	want.Stdout, want.Stderr, want.Files = stdout.String(), stderr.String(), treeBytes(t, dir)
	return want
}

// cairnRunsLikeSh runs line by x in a new directory that setup prepares,
// its output going to writers and then to files, and reports every
// difference from want (what sh gave).
func cairnRunsLikeSh(t *testing.T, x *Executor, line string, env []string, want runResult, setup func(t *testing.T, dir string)) {
	t.Helper()
	for _, toFiles := range []bool{false, true} {
		dir := t.TempDir()
		setup(t, dir)
		job := &executor.Job{Phase: "p", Argv: []string{"sh", "-c", line}, Dir: dir, Env: env}
		var bout, berr lockedBuffer
		var fout, ferr *os.File
		if toFiles {
			logs := t.TempDir()
			var err error
			if fout, err = os.Create(filepath.Join(logs, "stdout")); err != nil {
				t.Fatal(err)
			}
			if ferr, err = os.Create(filepath.Join(logs, "stderr")); err != nil {
				t.Fatal(err)
			}
			job.Stdout, job.Stderr = fout, ferr
		} else {
			job.Stdout, job.Stderr = &bout, &berr
		}
		code, err := x.Run(context.Background(), job)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got := runResult{Code: code, Stdout: bout.String(), Stderr: berr.String(), Files: treeBytes(t, dir)}
		if toFiles {
			fout.Close()
			ferr.Close()
			b, _ := os.ReadFile(fout.Name())
			got.Stdout = string(b)
			b, _ = os.ReadFile(ferr.Name())
			got.Stderr = string(b)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q, output to files %v (-sh +cairn):\n%s", line, toFiles, diff)
		}
	}
}

// TestPipelineRunsWithoutSh proves that cairn itself starts every stage
// of a pipeline: each stage, a script printing its parent's pid, is a
// child of this process, not of a shell.
func TestPipelineRunsWithoutSh(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\ncat\necho \"$1 $PPID\"\n"
	if err := os.WriteFile(filepath.Join(dir, "ppid"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	x := &Executor{}
	defer x.Flush()
	var stdout, stderr lockedBuffer
	job := &executor.Job{
		Phase: "p", Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")},
		Argv:   []string{"sh", "-c", "./ppid first | ./ppid middle 2>err | ./ppid last > out"},
		Stdout: &stdout, Stderr: &stderr,
	}
	if code, err := x.Run(context.Background(), job); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr.String())
	}
	me := strconv.Itoa(os.Getpid())
	want := "first " + me + "\nmiddle " + me + "\nlast " + me + "\n"
	if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != want {
		t.Errorf("out = %q, %v; want %q (every stage a child of cairn)", b, err, want)
	}
}

// TestPipelineCancel: a pipeline ended by its context loses every stage,
// all in one process group (a stage left out of it would keep Run
// waiting for 30s and survive), and Run returns promptly.
func TestPipelineCancel(t *testing.T) {
	for _, line := range []string{"sleep 30 | cat > out", "sleep 30 | sleep 31 | cat"} {
		dir := t.TempDir()
		mark := testMark(t)
		defer killCensus(mark)
		job := testJob(dir, mark, line, nil, nil)
		p, ok := directPlan(job.Argv, job.Env, job.Dir)
		if !ok {
			t.Fatalf("%q goes to sh", line)
		}
		x := &Executor{Grace: 20 * time.Second}
		ctx, cancel := context.WithCancel(context.Background())
		type result struct {
			code int
			err  error
		}
		res := make(chan result, 1)
		go func() {
			code, err := x.Run(ctx, job)
			res <- result{code, err}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			alive := census(mark)
			if len(alive) == len(p) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q: running %q, want its %d stages", line, alive, len(p))
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancelled := time.Now()
		cancel()
		select {
		case r := <-res:
			if r.code != -1 || !errors.Is(r.err, context.Canceled) {
				t.Errorf("%q: Run = %d, %v; want -1, context canceled", line, r.code, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: Run did not return within 10s of the cancellation", line)
		}
		if d := time.Since(cancelled); d > 5*time.Second {
			t.Errorf("%q: Run returned %s after the cancellation (grace 20s): a stage outlived SIGTERM", line, d)
		}
		if alive := survivors(t, mark, 5*time.Second); len(alive) > 0 {
			t.Errorf("%q: survivors: %q", line, alive)
		}
		x.Flush()
	}
}

// TestPipelineLaterStageFails: when a stage after the first cannot be
// started (here a script held open for writing: ETXTBSY), it is too late
// to hand the line to sh; Run reports the error, and the stages already
// started are killed and reaped.
// busyScript writes the script dir/busy and keeps it open for writing
// until the test ends, so that starting it fails with ETXTBSY.
func busyScript(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "busy"), os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteString("#!/bin/sh\nexit 0\n"); err != nil {
		t.Fatal(err)
	}
}

func TestPipelineLaterStageFails(t *testing.T) {
	dir := t.TempDir()
	mark := testMark(t)
	defer killCensus(mark)
	busyScript(t, dir)
	var stderr lockedBuffer
	job := testJob(dir, mark, "sleep 30 | ./busy", nil, &stderr)
	if _, ok := directPlan(job.Argv, job.Env, job.Dir); !ok {
		t.Fatalf("%q goes to sh", job.Argv[2])
	}
	x := &Executor{}
	defer x.Flush()
	began := time.Now()
	code, err := x.Run(context.Background(), job)
	if code != -1 || err == nil || !strings.Contains(err.Error(), "stage 2 (./busy)") || !errors.Is(err, syscall.ETXTBSY) {
		t.Errorf("Run = %d, %v; want -1 and the error of stage 2 (./busy)", code, err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("Run took %s: the first stage was not killed", d)
	}
	if alive := survivors(t, mark, 5*time.Second); len(alive) > 0 {
		t.Errorf("survivors: %q", alive)
	}
}

// TestPipelineEnvironmentLikeSh: a program cairn starts without a shell
// sees what sh -c would give it: PWD exported (the physical directory,
// also when the job's directory is reached through a symbolic link), and
// as $0 of a #! script the path as written (./script), not an absolute
// one, so an output printing it is the same in every workspace.
func TestPipelineEnvironmentLikeSh(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "dollar0"), []byte("#!/bin/sh\necho \"$0\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	x := &Executor{}
	defer x.Flush()
	for _, tc := range []struct{ line, out string }{
		{"env > out", "PWD="},
		{"./dollar0 > out", ""},
		{"./dollar0 | cat > out", ""},
	} {
		if _, ok := directPlan([]string{"sh", "-c", tc.line}, env, link); !ok {
			t.Fatalf("%q: directPlan refused it; the test needs the direct path", tc.line)
		}
		run := func(viaSh bool) string {
			os.Remove(filepath.Join(real, "out"))
			if viaSh {
				cmd := exec.Command("sh", "-c", tc.line)
				cmd.Dir, cmd.Env = link, env
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%q: sh: %v\n%s", tc.line, err, out)
				}
			} else if code, err := x.Run(t.Context(), &executor.Job{Phase: "p", Argv: []string{"sh", "-c", tc.line}, Dir: link, Env: env}); code != 0 || err != nil {
				t.Fatalf("%q: %d, %v", tc.line, code, err)
			}
			b, err := os.ReadFile(filepath.Join(real, "out"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.out != "" { // only the lines that matter
				var keep []string
				for _, l := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(l, tc.out) {
						keep = append(keep, l)
					}
				}
				return strings.Join(keep, "\n")
			}
			return string(b)
		}
		want, got := run(true), run(false)
		if want == "" {
			t.Fatalf("%q: sh gave nothing to compare", tc.line)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q without sh differs from sh -c (-sh +cairn):\n%s", tc.line, diff)
		}
	}
}

// copyOfTrue copies /bin/true into a temp dir and returns its path and
// fileID, checked to be an executable the kernel runs.
func copyOfTrue(t *testing.T) (string, fileID) {
	t.Helper()
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip("no /bin/true to copy:", err)
	}
	p := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(p, elf, 0o755); err != nil {
		t.Fatal(err)
	}
	id, ok := executable(p)
	if !ok || !kernelExecs(p, id) {
		t.Fatalf("a copy of /bin/true: executable %v, kernelExecs false; want both true", ok)
	}
	return p, id
}

// TestKernelExecsRemembersOnlyUnchangedBinaries: a binary found to be ELF
// is remembered by its fileID; the same path rewritten as a file the
// kernel refuses is read again, not taken from memory.
func TestKernelExecsRemembersOnlyUnchangedBinaries(t *testing.T) {
	p, id := copyOfTrue(t)
	if again, _ := executable(p); !kernelExecs(p, again) {
		t.Fatal("the same binary again: kernelExecs false")
	}
	// A script without #!, which sh runs itself, at the same path.
	if err := os.WriteFile(p+".new", []byte("echo hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	id2, ok := executable(p)
	if !ok {
		t.Fatal("the script is not executable")
	}
	if id2 == id {
		t.Fatal("the rewritten file has the same fileID")
	}
	if kernelExecs(p, id2) {
		t.Error("kernelExecs took the rewritten file (a script without #!) for the binary it replaced")
	}
}

// TestKernelExecsRacyBinaryNotRemembered: a binary whose ctime is not
// clearly in the past is read again each time rather than remembered by
// its fileID. On a filesystem with one-second timestamps (ext2 with
// 128-byte inodes, FAT) a binary deleted and rewritten within the second
// as a script of the same size got the same inode, size and times, and
// was taken for the ELF binary it replaced. A binary changed long ago is
// remembered.
func TestKernelExecsRacyBinaryNotRemembered(t *testing.T) {
	p, id := copyOfTrue(t)
	if _, ok := elfFiles.Load(p); ok {
		t.Errorf("a binary written just now was remembered by its fileID")
	}
	// The same fileID with whole-second times (as a coarse filesystem
	// gives them), a second old: still within that filesystem's racy window.
	coarse := id
	coarse.ctime = (time.Now().UnixNano()/1e9 - 1) * 1e9
	coarse.mtime = coarse.ctime
	kernelExecs(p, coarse)
	if _, ok := elfFiles.Load(p); ok {
		t.Errorf("a binary with whole-second times a second old was remembered by its fileID")
	}

	old, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	oid, ok := executable(old)
	if !ok || time.Now().UnixNano()-oid.ctime < 10e9 {
		t.Skipf("%s changed in the last 10 s", old)
	}
	if !kernelExecs(old, oid) {
		t.Fatalf("kernelExecs(%s) false", old)
	}
	if v, ok := elfFiles.Load(old); !ok || v.(fileID) != oid {
		t.Errorf("%s, unchanged for long, was not remembered", old)
	}
}

// TestPipelinePipefail: with Job.Pipefail a shell line's status is that
// of its last failed stage, as sh -o pipefail gives it (128+N for a stage
// killed by signal N, SIGPIPE included), whether cairn runs the pipeline
// itself (which then names the stage) or a shell does; without it, the
// last stage's.
func TestPipelinePipefail(t *testing.T) {
	for _, tc := range []struct {
		line     string
		strict   int    // status with pipefail
		lax      int    // without
		stage    string // the failed stage cairn names, when it runs the line itself
		viaShell bool
	}{
		{line: "cat a b | sha256sum > out"},
		{line: "/bin/false | /bin/true", strict: 1, stage: "stage 1 of 2 of the pipeline (/bin/false) exited with status 1"},
		{line: "/bin/true | /bin/false", strict: 1, lax: 1},
		{line: "cat a missing | wc -c", strict: 1, stage: "stage 1 of 2 of the pipeline (cat) exited with status 1"},
		{line: "cat a | cat missing | wc -c", strict: 1, stage: "stage 2 of 3 of the pipeline (cat) exited with status 1"},
		{line: "sh -c 'exit 3' | sh -c 'cat; exit 5' | cat", strict: 5, stage: "stage 2 of 3 of the pipeline (sh) exited with status 5"},
		{line: "sh -c 'kill -TERM $$' | cat a", strict: 143, stage: "stage 1 of 2 of the pipeline (sh) exited with status 143"},
		{line: "cat big | head -c 5", strict: 141, stage: "stage 1 of 2 of the pipeline (cat) exited with status 141"},
		{line: "cat big | sh -c 'kill -9 $$'", strict: 137, lax: 137},
		{line: "(echo partial; exit 3) | cat > out", strict: 3, viaShell: true},
		{line: "echo x | (cat; exit 4) | cat > out", strict: 4, viaShell: true},
		{line: "exit 6", strict: 6, lax: 6, viaShell: true},
	} {
		if _, direct := directPlan([]string{"sh", "-c", tc.line}, []string{"PATH=" + os.Getenv("PATH")}, t.TempDir()); direct == tc.viaShell {
			t.Errorf("%q: run without sh: %v, want %v", tc.line, direct, !tc.viaShell)
		}
		for _, pipefail := range []bool{true, false} {
			x := &Executor{}
			dir := t.TempDir()
			pipelineFixture(t, dir)
			var stderr lockedBuffer
			job := &executor.Job{Phase: "p", Argv: []string{"sh", "-c", tc.line}, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"},
				Stdout: &lockedBuffer{}, Stderr: &stderr, Pipefail: pipefail}
			code, err := x.Run(context.Background(), job)
			x.Flush()
			want, wantStage := tc.lax, ""
			if pipefail {
				want, wantStage = tc.strict, tc.stage
			}
			var se *StageFailedError
			switch {
			case errors.As(err, &se):
				if wantStage == "" || !strings.HasPrefix(se.Error(), wantStage) {
					t.Errorf("%q, pipefail %v: %v, want stage %q", tc.line, pipefail, err, wantStage)
				}
			case err != nil:
				t.Errorf("%q, pipefail %v: %v", tc.line, pipefail, err)
			case wantStage != "":
				t.Errorf("%q, pipefail %v: no stage named, want %q", tc.line, pipefail, wantStage)
			}
			if code != want {
				t.Errorf("%q, pipefail %v: status %d, want %d (stderr %q)", tc.line, pipefail, code, want, stderr.String())
			}
		}
	}
}
