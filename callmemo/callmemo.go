// Package callmemo memoises single calls through the cache: a command
// for cairn memo (its key is its argv, stdin, named environment variables
// and input files; a hit replays the recorded stdout and exit status, a
// miss runs the command and records them), and a language binding's
// function call for cairn memo-serve (LookupCall, RecordCall). It is a package of
// its own because it shares nothing with a pipeline run but the cache
// and the spending record: no spec, no workspace, no scheduling.
package callmemo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/runrec"
)

// Options describe one memoised command.
type Options struct {
	// Argv is the command to run.
	Argv []string
	// EnvNames are environment variables whose values enter the key.
	EnvNames []string
	// Inputs are files whose content enters the key.
	Inputs []string
	// Stdin is the command's input; nil means none. It is read to its
	// end before the command starts, since its content is part of the
	// key: hashed while spooled to a temp file, never held in memory.
	Stdin io.Reader
	// Stdout receives the command's stdout (live on a miss, replayed on a
	// hit); Stderr receives its stderr on a miss only.
	Stdout, Stderr io.Writer
	// Environ is the environment the command runs in, KEY=VALUE.
	Environ []string
	// Dir is the working directory ("" for the current one).
	Dir string
}

// Result says how a memoised command ended.
type Result struct {
	ExitCode int
	Hit      bool
	// Spend is what the command reported when it ran: charged now on a
	// miss, recorded but not charged again on a hit.
	Spend runrec.Spend
	Key   cache.ActionID
}

func lookupEnv(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// memoComponents builds the key of a memoised call.
func memoComponents(o *Options, stdin cache.Digest) ([]cache.Component, error) {
	secret := map[string]bool{}
	var names []string
	if list, ok := lookupEnv(o.Environ, "CAIRN_SECRET_NAMES"); ok {
		names = strings.Split(list, ",")
		for _, n := range names {
			secret[n] = true
		}
	}
	// The key is stored in clear in the cache entry: a secret's value in
	// the argv (curl -H "Authorization: $TOKEN") enters it as its name, so
	// it neither leaks nor, as for phases, changes the key.
	args := make([]string, len(o.Argv))
	copy(args, o.Argv)
	sort.Slice(names, func(i, j int) bool {
		vi, _ := lookupEnv(o.Environ, names[i])
		vj, _ := lookupEnv(o.Environ, names[j])
		return len(vi) > len(vj)
	})
	for _, n := range names {
		if v, ok := lookupEnv(o.Environ, n); ok && v != "" {
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], v, "(secret "+n+")")
			}
		}
	}
	argv, _ := json.Marshal(args)
	comps := []cache.Component{
		{Kind: "memo", Name: "format", Value: "1"},
		{Kind: "memo", Name: "argv", Value: string(argv)},
		{Kind: "memo", Name: "stdin", Value: stdin.String()},
	}
	for _, n := range o.EnvNames {
		if secret[n] {
			return nil, fmt.Errorf("--env %s: %s is a secret_env variable of this phase; secrets never enter a key", n, n)
		}
		v, ok := lookupEnv(o.Environ, n)
		val := "unset"
		if ok {
			val = "=" + v
		}
		comps = append(comps, cache.Component{Kind: "env", Name: n, Value: val})
	}
	for _, in := range o.Inputs {
		p := in
		if !filepath.IsAbs(p) && o.Dir != "" {
			p = filepath.Join(o.Dir, p)
		}
		d, _, err := cache.HashFile(p)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", in, err)
		}
		comps = append(comps, cache.Component{Kind: "input", Name: in, Value: d.String()})
	}
	return comps, nil
}

// Run runs a command through the cache: a call whose argv, stdin, named
// environment variables and input files were seen before replays the
// recorded stdout and exit status without running anything; otherwise the
// command runs, and its stdout, exit status and reported spending are
// recorded. A command killed by a signal, or interrupted, is not recorded.
func Run(ctx context.Context, c *remote.Tiered, o Options) (*Result, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("no command given")
	}
	tmpDir, err := memoTempDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmpDir)
	// Stdin, stdout and the replay are streamed through files, so memory
	// stays flat whatever their size.
	stdinD := cache.HashBytes(nil)
	var stdinF *os.File
	if o.Stdin != nil {
		if stdinF, stdinD, err = spool(o.Stdin, filepath.Join(tmpDir, "stdin")); err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		defer stdinF.Close()
	}
	comps, err := memoComponents(&o, stdinD)
	if err != nil {
		return nil, err
	}
	key := cache.ComputeKey(comps)
	if res, replayed, err := replayMemo(c, key, o.Stdout); replayed {
		return res, err
	}
	outPath := filepath.Join(tmpDir, "stdout")
	outF, err := os.Create(outPath)
	if err != nil {
		return nil, err
	}
	defer outF.Close()
	reportPath := filepath.Join(tmpDir, "report.jsonl")
	waitErr, err := runMemoCommand(ctx, &o, stdinF, outF, reportPath)
	if err != nil {
		return nil, err
	}
	res := &Result{Spend: passReport(o.Environ, reportPath), Key: key}
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
			return res, nil
		}
		res.ExitCode = ee.ExitCode()
	default:
		return nil, waitErr
	}
	if ctx.Err() != nil {
		return res, nil
	}
	return res, recordMemo(c, &o, comps, res, outF, outPath)
}

// replayMemo replays the recorded stdout of the call under key, if there
// is one. replayed is false when the command is to run: no call was
// recorded, or its stdout was missing, or corrupt and moved aside, and
// nothing was replayed.
func replayMemo(c *remote.Tiered, key cache.ActionID, stdout io.Writer) (res *Result, replayed bool, err error) {
	e, err := c.GetEntry(key)
	if err != nil {
		return nil, false, nil
	}
	cw := &countingWriter{w: stdout}
	err = c.CopyEntryBlob(cw, e, e.Stdout)
	if err == nil {
		return &Result{ExitCode: e.ExitCode, Hit: true, Spend: runrec.Spend{Cost: e.Cost, Iterations: e.Iterations}, Key: key}, true, nil
	}
	if cw.n > 0 || !(errors.Is(err, cache.ErrNotFound) || errors.Is(err, cache.ErrCorrupt)) {
		return nil, true, fmt.Errorf("replay the recorded output: %w", err)
	}
	return nil, false, nil
}

// runMemoCommand runs the memoised command, its stdout copied to outF, its
// reports going to reportPath, and returns how it ended (cmd.Wait's
// error); err says it could not start. Cancelling ctx ends it with
// SIGTERM.
func runMemoCommand(ctx context.Context, o *Options, stdinF, outF *os.File, reportPath string) (waitErr, err error) {
	env := make([]string, 0, len(o.Environ)+1)
	for _, kv := range o.Environ {
		if !strings.HasPrefix(kv, "CAIRN_REPORT=") {
			env = append(env, kv)
		}
	}
	env = append(env, "CAIRN_REPORT="+reportPath)

	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	cmd.Dir = o.Dir
	cmd.Env = env
	if stdinF != nil {
		cmd.Stdin = stdinF
	}
	cmd.Stdout = io.MultiWriter(o.Stdout, outF)
	cmd.Stderr = o.Stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Argv[0], err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case <-done:
		}
	}()
	waitErr = cmd.Wait()
	close(done)
	return waitErr, nil
}

// passReport returns what the command reported it spent, and passes its
// report on to the phase's (CAIRN_REPORT in environ): whatever the command
// reported was spent, whether or not the call is recorded.
func passReport(environ []string, reportPath string) runrec.Spend {
	report, _ := os.ReadFile(reportPath)
	spend := runrec.SumReport(report)
	if parent, ok := lookupEnv(environ, "CAIRN_REPORT"); len(report) > 0 && ok && parent != "" {
		if report[len(report)-1] != '\n' {
			report = append(report, '\n')
		}
		if f, err := os.OpenFile(parent, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, _ = f.Write(report)
			f.Close()
		}
	}
	return spend
}

// recordMemo records a call that ended (not by a signal, not interrupted)
// in the cache: its stdout in outF (at outPath), its exit status and
// spending in res. A stdout that could not be made durable, or that holds
// a secret, is not recorded.
func recordMemo(c *remote.Tiered, o *Options, comps []cache.Component, res *Result, outF *os.File, outPath string) error {
	if err := outF.Sync(); err != nil {
		return nil
	}
	// Secrets never reach the cache: an output holding the value of one of
	// the phase's secret_env variables is passed on but not recorded.
	if name := leakedSecret(o.Environ, outPath); name != "" {
		fmt.Fprintf(o.Stderr, "cairn memo: not cached: the output holds the value of secret %s\n", name)
		return nil
	}
	outD, _, err := c.PutFile(outPath)
	if err != nil {
		return fmt.Errorf("record the call in the cache: %w", err)
	}
	host, _ := os.Hostname()
	entry := &cache.Entry{
		Format:     cache.EntryFormat,
		Key:        res.Key,
		Phase:      "memo",
		Components: comps,
		ExitCode:   res.ExitCode,
		Stdout:     outD,
		Cost:       res.Spend.Cost,
		Iterations: res.Spend.Iterations,
		Created:    time.Now().UTC(),
		Host:       host,
	}
	if err := c.PutEntry(entry); err != nil {
		return fmt.Errorf("record the call in the cache: %w", err)
	}
	return nil
}

// spool copies r to a new file at path while hashing it, and returns the
// file, positioned at its start, and the digest.
func spool(r io.Reader, path string) (*os.File, cache.Digest, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, cache.Digest{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), r); err != nil {
		f.Close()
		return nil, cache.Digest{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, cache.Digest{}, err
	}
	var d cache.Digest
	h.Sum(d[:0])
	return f, d, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// leakedSecret returns the name of a secret_env variable whose value
// appears in the file, or "". The file is scanned in chunks that overlap
// by a secret's length, never read whole.
func leakedSecret(environ []string, path string) string {
	names, ok := lookupEnv(environ, "CAIRN_SECRET_NAMES")
	if !ok {
		return ""
	}
	var secrets [][]byte
	var who []string
	longest := 0
	for _, n := range strings.Split(names, ",") {
		if v, ok := lookupEnv(environ, n); ok && len(v) >= 4 {
			secrets, who = append(secrets, []byte(v)), append(who, n)
			longest = max(longest, len(v))
		}
	}
	if len(secrets) == 0 {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 0, max(1<<20, 2*longest))
	for {
		m, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		for i, v := range secrets {
			if bytes.Contains(buf, v) {
				return who[i]
			}
		}
		if err != nil {
			return ""
		}
		// Keep the tail a secret could straddle.
		if keep := longest - 1; len(buf) > keep {
			buf = buf[:copy(buf, buf[len(buf)-keep:])]
		}
	}
}

// memoTempDir makes the directory holding a memoised call's stdout and
// report while it runs: in $TMPDIR, or, if that is not usable (a
// directory that does not exist), in /tmp, as if TMPDIR were unset. A
// plain phase needs no temp directory of cairn's, so a bad TMPDIR is the
// command's business (it gets TMPDIR as it is), not a reason for cairn
// memo to fail without running it.
func memoTempDir() (string, error) {
	dir, err := os.MkdirTemp("", "cairn-memo-")
	if err == nil {
		return dir, nil
	}
	if os.TempDir() != "/tmp" {
		if dir, err2 := os.MkdirTemp("/tmp", "cairn-memo-"); err2 == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("make a temp directory: %w (set TMPDIR to a writable directory)", err)
}
