package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Labels are the steps the write protocols mark, in protocol order. Cache
// objects (prefix blob, ac) and workspace files (prefix state for run
// records, ws for the other state files) go through the same steps; GC and
// quarantine have one each. Tests sweep this list; a test checks that an
// ordinary run passes every one of the object and state steps.
var Labels = []string{
	"blob.create-tmp", "blob.write", "blob.chmod", "blob.fsync", "blob.close", "blob.mkdir", "blob.link", "blob.fsync-dir", "blob.remove-tmp",
	"ac.create-tmp", "ac.write", "ac.chmod", "ac.fsync", "ac.close", "ac.mkdir", "ac.link", "ac.fsync-dir", "ac.remove-tmp",
	"state.create-tmp", "state.write", "state.chmod", "state.fsync", "state.close", "state.rename", "state.fsync-dir",
	"ws.create-tmp", "ws.write", "ws.chmod", "ws.close", "ws.rename",
	"gc.unlink", "quarantine.rename",
}

// ProgressLabels mark long steps of cairn's own (the spec about to be
// read, a window of a large file hashed, an input file hashed, an entry of
// an output tree restored, a remote blob's body about to be read), so that a test can act
// while cairn is in one. They are not write-protocol steps and are not
// swept.
var ProgressLabels = []string{"spec.read", "hash.window", "hash.file", "restore.entry", "remote.read"}

// EnvVar configures failpoints in a process's environment; TraceEnvVar
// names the file hits are traced to.
const (
	EnvVar      = "CAIRN_FAILPOINTS"
	TraceEnvVar = "CAIRN_FAILPOINT_TRACE"
)

// table is the configuration in force; nil when there is none.
type table struct {
	mu     sync.Mutex
	points map[string]*point
	trace  *os.File
}

type point struct {
	terms []term
	hits  int // hits so far, over all terms
}

type term struct {
	count  int // 0: forever
	action string
	arg    string
}

var active atomic.Pointer[table]

func init() {
	spec, path := os.Getenv(EnvVar), os.Getenv(TraceEnvVar)
	if spec == "" && path == "" {
		return
	}
	t, err := parse(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cairn: %s: %v\n", EnvVar, err)
		os.Exit(2)
	}
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cairn: %s: %v\n", TraceEnvVar, err)
			os.Exit(2)
		}
		t.trace = f
	}
	active.Store(t)
}

// Hit marks the step label. It returns nil unless a failpoint for label
// says error(ERRNO); it may also not return at all (kill, exit), pause or
// panic.
func Hit(label string) error {
	t := active.Load()
	if t == nil {
		return nil
	}
	return t.hit(label)
}

// Set replaces the configuration with spec (the syntax of CAIRN_FAILPOINTS;
// "" clears it) and returns a function that restores the previous one. For
// in-process tests; not safe while other goroutines call Hit for the
// labels concerned.
func Set(spec string) (restore func(), err error) {
	t, err := parse(spec)
	if err != nil {
		return nil, err
	}
	old := active.Load()
	if spec == "" {
		t = nil
	}
	active.Store(t)
	return func() { active.Store(old) }, nil
}

func (t *table) hit(label string) error {
	if t.trace != nil {
		t.trace.Write([]byte(label + "\n"))
	}
	p := t.points[label]
	if p == nil {
		return nil
	}
	t.mu.Lock()
	p.hits++
	n := p.hits
	t.mu.Unlock()
	var tm *term
	for i := range p.terms {
		if p.terms[i].count == 0 || n <= p.terms[i].count {
			tm = &p.terms[i]
			break
		}
		n -= p.terms[i].count
	}
	if tm == nil {
		return nil
	}
	switch tm.action {
	case "kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	case "exit":
		code, _ := strconv.Atoi(tm.arg)
		os.Exit(code)
	case "error":
		return fmt.Errorf("failpoint %s: %w", label, errnos[tm.arg])
	case "sleep":
		ms, _ := strconv.Atoi(tm.arg)
		time.Sleep(time.Duration(ms) * time.Millisecond)
	case "panic":
		panic("failpoint " + label)
	case "await":
		// The file comes from another process (the test watching
		// cairn's output): there is nothing to block on but its
		// existence.
		for {
			if _, err := os.Stat(tm.arg); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

var errnos = map[string]syscall.Errno{
	"EIO": syscall.EIO, "ENOSPC": syscall.ENOSPC, "EACCES": syscall.EACCES, "EROFS": syscall.EROFS,
	"EDQUOT": syscall.EDQUOT, "EPERM": syscall.EPERM, "EEXIST": syscall.EEXIST, "ENOENT": syscall.ENOENT,
	"EINTR": syscall.EINTR, "EAGAIN": syscall.EAGAIN, "EINVAL": syscall.EINVAL, "ESTALE": syscall.ESTALE,
	"EBADF": syscall.EBADF, "ENOLCK": syscall.ENOLCK, "EXDEV": syscall.EXDEV, "EMLINK": syscall.EMLINK,
}

// parse reads the CAIRN_FAILPOINTS syntax.
func parse(spec string) (*table, error) {
	t := &table{points: map[string]*point{}}
	for _, def := range strings.Split(spec, ";") {
		def = strings.TrimSpace(def)
		if def == "" {
			continue
		}
		label, acts, ok := strings.Cut(def, "=")
		if !ok || label == "" {
			return nil, fmt.Errorf("%q: want label=actions", def)
		}
		p := &point{}
		for _, a := range strings.Split(acts, "->") {
			tm, err := parseTerm(a)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
			if tm.count >= 0 {
				p.terms = append(p.terms, tm)
			}
		}
		t.points[label] = p
	}
	return t, nil
}

func parseTerm(s string) (term, error) {
	var tm term
	if c, rest, ok := strings.Cut(s, "*"); ok {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			return tm, fmt.Errorf("%q: bad count", s)
		}
		if n == 0 {
			n = -1 // "0*off": never applies, and is dropped
		}
		tm.count, s = n, rest
	}
	tm.action = s
	if name, arg, ok := strings.Cut(s, "("); ok {
		if !strings.HasSuffix(arg, ")") {
			return tm, fmt.Errorf("%q: missing )", s)
		}
		tm.action, tm.arg = name, strings.TrimSuffix(arg, ")")
	}
	switch tm.action {
	case "off", "kill", "panic":
		if tm.arg != "" {
			return tm, fmt.Errorf("%q: %s takes no argument", s, tm.action)
		}
	case "exit", "sleep":
		if _, err := strconv.Atoi(tm.arg); err != nil {
			return tm, fmt.Errorf("%q: %s wants a number", s, tm.action)
		}
	case "await":
		if tm.arg == "" {
			return tm, fmt.Errorf("%q: await wants a file", s)
		}
	case "error":
		if _, ok := errnos[tm.arg]; !ok {
			return tm, fmt.Errorf("%q: unknown errno %q", s, tm.arg)
		}
	default:
		return tm, fmt.Errorf("%q: unknown action %q (off, kill, exit(n), error(ERRNO), sleep(ms), await(FILE), panic)", s, tm.action)
	}
	return tm, nil
}
