package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/internal/fsx"
	"golang.org/x/sys/unix"
)

// A command line that sh would run as a pipeline of plain programs, each
// with its words as arguments and a few redirections, cairn runs itself:
// that saves a fork and an exec of the shell per phase, as GNU make does
// for recipes without shell syntax. Anything else, and anything that
// could go differently (a program not found, a file that cannot be
// opened), is left to sh, which then runs the line with its own rules.

// A pipeline is a command line cairn runs without a shell: its stages run
// at once, each one's standard output feeding the next one's input.
type pipeline []stage

// A stage is one program of a pipeline.
type stage struct {
	Args   []string   // Args[0] names the program, as written
	Redirs []redirect // applied left to right, after the pipes, as sh does
	Prog   string     // the program's file, found by directPlan (absolute)
	Exec   string     // the same file named as sh names it to execve (relative to the job's directory if written so)
}

// A redirect points one of a stage's standard descriptors elsewhere.
type redirect struct {
	FD   int // 0, 1 or 2
	Op   redirOp
	Path string // the file of <, > and >>; relative to the job's directory
	From int    // the descriptor that >& copies
}

type redirOp int

const (
	redirIn     redirOp = iota // FD< Path: read
	redirOut                   // FD> Path: create or truncate
	redirAppend                // FD>> Path: create or append
	redirDup                   // FD>&From: a copy of descriptor From
)

// directPlan returns the pipeline to run in place of argv when argv is
// ["sh", "-c", line] and line is one that parsePipeline accepts, with
// every program found as sh would find it: in the PATH of the job's
// environment, relative entries and paths with a slash from dir. In a
// pipeline of several stages every program must also be one the kernel
// runs (a binary or a #! script), since once a stage is started the line
// can no longer go to sh; a single program the kernel refuses goes to sh
// when starting it fails. ok is false whenever sh is to run the line.
func directPlan(argv, env []string, dir string) (p pipeline, ok bool) {
	if len(argv) != 3 || argv[0] != "sh" || argv[1] != "-c" {
		return nil, false
	}
	p, ok = parsePipeline(argv[2])
	if !ok {
		return nil, false
	}
	for i := range p {
		var st fileID
		p[i].Prog, p[i].Exec, st, ok = lookPathExec(p[i].Args[0], env, dir)
		if !ok || selfPath(p[i].Prog) || len(p) > 1 && !kernelExecs(p[i].Prog, st) {
			return nil, false
		}
	}
	return p, true
}

// selfPath reports whether the absolute path p names a file through the
// process opening it (/dev/stdout, /dev/fd/3, /proc/self/exe): opened by
// cairn it would be cairn's, by sh the phase's. A symbolic link elsewhere
// to such a file is not recognised.
func selfPath(p string) bool {
	p = filepath.Clean(p)
	return strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/dev/fd/") ||
		p == "/dev/stdin" || p == "/dev/stdout" || p == "/dev/stderr" || p == "/dev/fd"
}

// parsePipeline splits line into the stages of a pipeline, or returns
// false when sh could do anything with line but run it as one. Words are
// made of the characters that sh gives no meaning to (letters, digits and
// -_./,:+@%=) and of single-quoted strings, and are separated by blanks;
// stages are separated by |. The redirections are <, >, >> and >&, with
// a file or, after >&, a descriptor 0, 1 or 2 as their word, blanks
// between allowed; a single digit 0, 1 or 2 written right before the
// operator names the descriptor redirected ("2>x"; in "2 >x" the 2 is an
// argument, as in sh). A stage's first word must not be a shell builtin
// or keyword or contain '=' (sh would take it as an assignment).
// Everything else is refused: other characters (double quotes, $, `, \,
// globs, ~, ;, &, (, ), {, }, #, newlines), other operators (<<, <>, <&,
// >|, |&, ||), an empty stage, a stage of redirections alone and an
// operator without its word.
func parsePipeline(line string) (pipeline, bool) {
	var lp lineParser
	for i := 0; i < len(line); i++ {
		var ok bool
		if i, ok = lp.next(line, i); !ok {
			return nil, false
		}
	}
	if !lp.endStage() {
		return nil, false
	}
	return lp.p, true
}

// lineParser is parsePipeline's state between two bytes of the line.
type lineParser struct {
	p       pipeline
	cur     stage
	word    []byte
	inWord  bool      // a word is being read (maybe empty: '')
	quoted  bool      // and it holds a quoted part
	pending *redirect // a redirection waiting for its word
}

// next reads what starts at line[i] and returns the index of its last
// byte, or false when sh is to run the line.
func (lp *lineParser) next(line string, i int) (int, bool) {
	c := line[i]
	switch {
	case plainByte(c):
		lp.word = append(lp.word, c)
		lp.inWord = true
	case c == '\'':
		n := strings.IndexByte(line[i+1:], '\'')
		if n < 0 {
			return i, false
		}
		lp.word = append(lp.word, line[i+1:i+1+n]...)
		lp.inWord, lp.quoted = true, true
		i += 1 + n
	case c == ' ' || c == '\t':
		return i, lp.endWord()
	case c == '|':
		return i, lp.endStage()
	case c == '<' || c == '>':
		return lp.redirection(line, i)
	default:
		return i, false
	}
	return i, true
}

// redirection reads the operator at line[i] (< or >), with the
// descriptor written right before it, if any.
func (lp *lineParser) redirection(line string, i int) (int, bool) {
	c := line[i]
	r := redirect{FD: 0, Op: redirIn}
	if c == '>' {
		r.FD, r.Op = 1, redirOut
	}
	if lp.inWord && !lp.quoted && allDigits(lp.word) {
		if len(lp.word) > 1 {
			return i, false // dash: an argument, bash: a descriptor
		}
		r.FD = int(lp.word[0] - '0') // "2>x": the word is the descriptor
		lp.word, lp.inWord = lp.word[:0], false
	}
	if !lp.endWord() || lp.pending != nil || r.FD > 2 {
		return i, false
	}
	next := byte(0)
	if i+1 < len(line) {
		next = line[i+1]
	}
	switch {
	case c == '>' && next == '>':
		r.Op = redirAppend
		i++
	case c == '>' && next == '&':
		r.Op = redirDup
		i++
	case next == '<' || next == '>' || next == '&' || next == '|':
		return i, false // <<, <>, <&, >|
	}
	lp.pending = &r
	return i, true
}

// endWord ends the word being read: an argument, or the word of the
// pending redirection.
func (lp *lineParser) endWord() bool {
	if !lp.inWord {
		return true
	}
	w, q := string(lp.word), lp.quoted
	lp.word, lp.inWord, lp.quoted = lp.word[:0], false, false
	switch r := lp.pending; {
	case r == nil:
		lp.cur.Args = append(lp.cur.Args, w)
		return true
	case r.Op == redirDup:
		if q || len(w) != 1 || w[0] < '0' || w[0] > '2' {
			return false // >&-, >&3, >&file...
		}
		r.From = int(w[0] - '0')
	default:
		if w == "" {
			return false
		}
		r.Path = w
	}
	lp.cur.Redirs = append(lp.cur.Redirs, *lp.pending)
	lp.pending = nil
	return true
}

// endStage ends the stage being read, which must be a program's.
func (lp *lineParser) endStage() bool {
	if !lp.endWord() || lp.pending != nil || len(lp.cur.Args) == 0 {
		return false
	}
	if name := lp.cur.Args[0]; shellWords[name] || strings.ContainsRune(name, '=') {
		return false
	}
	lp.p = append(lp.p, lp.cur)
	lp.cur = stage{}
	return true
}

func allDigits(w []byte) bool {
	for _, c := range w {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(w) > 0
}

// plainByte reports whether sh gives c no meaning in a word.
func plainByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-_./,:+@%=", c) >= 0
}

// shellWords are the reserved words and builtins of POSIX sh and dash
// (and bash's time and fc, for systems whose sh is bash): a
// command starting with one runs through the shell, even where a program
// of the same name exists (echo, test, pwd and kill differ in details).
var shellWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`! { } case do done elif else esac fi for if in then until while
		. : [ alias bg break cd chdir command continue echo eval exec exit export false fg getopts
		hash jobs kill local printf pwd read readonly return set shift test times trap true type
		ulimit umask unalias unset wait time fc`) {
		shellWords[w] = true
	}
}

// lookPathExec finds the program name as sh would with the environment
// env, in the directory dir: a name with a slash as it is, else the first
// executable regular file in the directories of env's PATH. It returns
// the file's absolute path, and the path sh hands to execve for it: the
// name as written, or the PATH entry as written joined with it, relative
// to dir unless absolute. A #! script sees that one as $0, so it must be
// sh's, not the absolute path.
func lookPathExec(name string, env []string, dir string) (abs, execPath string, id fileID, ok bool) {
	if strings.ContainsRune(name, '/') {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		id, ok = executable(p)
		return p, name, id, ok
	}
	path := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			path = kv[len("PATH="):] // the last one wins, as in the child
		}
	}
	for _, d := range filepath.SplitList(path) {
		written := d
		if d == "" {
			d, written = ".", "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if id, ok := executable(p); ok {
			return p, written + "/" + name, id, true
		}
	}
	return "", "", fileID{}, false
}

// withPWD returns env with PWD as sh exports it to what it runs in dir: the
// inherited value if it names dir, else dir's physical path (getcwd).
func withPWD(env []string, dir string) []string {
	i := -1
	for k, kv := range env {
		if strings.HasPrefix(kv, "PWD=") {
			i = k // the last one wins
		}
	}
	if i >= 0 {
		if v := env[i][len("PWD="):]; filepath.IsAbs(v) && sameDir(v, dir) {
			return env
		}
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PWD=") {
			out = append(out, kv)
		}
	}
	return append(out, "PWD="+physicalDir(dir))
}

func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// physicalDir is dir without symbolic links, as getcwd reports it; each
// directory is resolved once per process (every phase of a workspace
// runs in one of a few).
func physicalDir(dir string) string {
	if v, ok := physicalDirs.Load(dir); ok {
		return v.(string)
	}
	p, err := filepath.EvalSymlinks(dir)
	if err != nil {
		p = dir
	}
	physicalDirs.Store(dir, p)
	return p
}

var physicalDirs sync.Map

// fileID is what tells a file from its earlier self: a file replaced or
// rewritten has another inode, size, mtime or ctime.
type fileID struct {
	dev, ino           uint64
	size, mtime, ctime int64
}

// executable reports whether p is an executable regular file (one sh's
// search of PATH would take), with its fileID. A search of PATH stats a
// name in every directory before the right one: this costs no
// allocation, where os.Stat made an error and a FileInfo for each.
func executable(p string) (fileID, bool) {
	var st unix.Stat_t
	for {
		err := unix.Stat(p, &st)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return fileID{}, false
		}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size,
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec}, true
}

// elfFiles remembers, by path, the binaries kernelExecs read (every
// phase of a sweep runs the same few programs): one still with the same
// fileID is an ELF binary without reading its head again. A binary is
// remembered only once its ctime lies clearly in the past (the racy rule
// of the digest memory): a file replaced within its filesystem's
// timestamp granularity (a second on ext2 with small inodes, FAT, some
// network filesystems) can get the same inode, size and times back.
var elfFiles sync.Map // string -> fileID

// kernelExecs reports whether the kernel execs the file at p, whose fileID
// is id: an ELF binary, or a script whose #! line names an ELF
// interpreter by its absolute path. sh runs other files itself, as
// scripts, and reports a missing interpreter in its own words.
func kernelExecs(p string, id fileID) bool {
	if v, ok := elfFiles.Load(p); ok && v.(fileID) == id {
		return true
	}
	head := fileHead(p)
	if isELF(head) {
		if !hint.Recent(id.ctime, time.Now().UnixNano()) {
			elfFiles.Store(p, id)
		}
		return true
	}
	line, ok := bytes.CutPrefix(head, []byte("#!"))
	if !ok {
		return false
	}
	line, _, ok = bytes.Cut(line, []byte("\n"))
	if !ok && len(head) == cap(head) {
		return false // longer than the kernel reads
	}
	interp := strings.FieldsFunc(string(line), func(r rune) bool { return r == ' ' || r == '\t' })
	return len(interp) > 0 && filepath.IsAbs(interp[0]) && isELF(fileHead(interp[0]))
}

func isELF(head []byte) bool { return bytes.HasPrefix(head, []byte("\x7fELF")) }

// fileHead returns the first bytes of the file at p, as many as the
// kernel reads to decide how to exec it.
func fileHead(p string) []byte {
	f, err := fsx.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// start starts p's stages in one new process group, which the first
// stage leads: the pipes between them first, then each stage's
// redirections, left to right, then every stage by one call of
// startOnLockedThread. stdin, stdout and stderr are the job's streams
// (nil: /dev/null). Files are opened as sh opens them (mode 0666 less
// the umask), relative to dir.
//
// When a redirection's file cannot be opened (or is a FIFO, whose opening
// would block cairn, or a selfPath) or the first program cannot be
// started, start returns nil and no error: nothing was started, and the
// line is sh's to run, sh to report the problem. An error means a later
// stage could not be started; the stages already started have been
// killed and reaped.
func (p pipeline) start(dir string, env []string, stdin, stdout, stderr *os.File) ([]*exec.Cmd, error) {
	var opened []*os.File // cairn's copies, closed once the stages hold theirs
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	fds := make([][3]*os.File, len(p))
	for i := range p {
		fds[i] = [3]*os.File{stdin, stdout, stderr}
		if i > 0 {
			r, w, err := os.Pipe()
			if err != nil {
				return nil, fmt.Errorf("pipe to stage %d (%s): %w", i+1, p[i].Args[0], err)
			}
			opened = append(opened, r, w)
			fds[i-1][1], fds[i][0] = w, r
		}
	}
	for i, st := range p {
		for _, r := range st.Redirs {
			if r.Op == redirDup {
				fds[i][r.FD] = fds[i][r.From]
				continue
			}
			f, err := openRedirect(dir, r)
			if err != nil {
				return nil, nil
			}
			opened = append(opened, f)
			fds[i][r.FD] = f
		}
	}
	cmds := make([]*exec.Cmd, 0, len(p))
	for i, st := range p {
		cmd := &exec.Cmd{Path: st.Exec, Args: st.Args, Dir: dir, Env: env, SysProcAttr: procAttr()}
		// An unset stream stays nil: os/exec then opens /dev/null.
		if f := fds[i][0]; f != nil {
			cmd.Stdin = f
		}
		if f := fds[i][1]; f != nil {
			cmd.Stdout = f
		}
		if f := fds[i][2]; f != nil {
			cmd.Stderr = f
		}
		cmds = append(cmds, cmd)
	}
	n, err := startOnLockedThread(cmds, func(i int) {
		if i > 0 {
			cmds[i].SysProcAttr.Pgid = cmds[0].Process.Pid
		}
	})
	if err != nil {
		if n == 0 {
			return nil, nil
		}
		_ = syscall.Kill(-cmds[0].Process.Pid, syscall.SIGKILL)
		for _, c := range cmds[:n] {
			_ = c.Wait()
		}
		return nil, fmt.Errorf("stage %d (%s) of the pipeline run without sh: %w", n+1, p[n].Args[0], err)
	}
	return cmds, nil
}

// openRedirect opens the file of the redirection r as sh would.
func openRedirect(dir string, r redirect) (*os.File, error) {
	name := r.Path
	if !filepath.IsAbs(name) {
		name = dir + "/" + name // not Join: "link/.." is the kernel's to resolve
	}
	if selfPath(name) {
		return nil, errors.New("a file of the opening process")
	}
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
		return nil, errors.New("a FIFO, whose opening would block")
	}
	flag := os.O_RDONLY
	switch r.Op {
	case redirOut:
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	case redirAppend:
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	// Opened without Go's poller (a file for the child, never read by
	// cairn), and never through a magic link nor on procfs.
	return openRedirectFile(name, flag, 0o666)
}

// signalReport returns what sh writes to its standard error after the
// stages of a pipeline exited: for each stage killed by a signal other
// than SIGINT and SIGPIPE, the signal's description on a line ("Killed",
// "Segmentation fault (core dumped)"). sh writes them as it reaps the
// stages; here they come in the stages' order.
func signalReport(cmds []*exec.Cmd) []byte {
	var b bytes.Buffer
	for _, c := range cmds {
		if c.ProcessState == nil {
			continue
		}
		ws, ok := c.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGPIPE {
			continue
		}
		b.WriteString(signalDescription(ws.Signal()))
		if ws.CoreDump() {
			b.WriteString(" (core dumped)")
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// signalDescription is the C library's strsignal(sig) in the C locale,
// which sh prints.
func signalDescription(sig syscall.Signal) string {
	switch {
	case sig >= 34 && sig <= 64:
		return fmt.Sprintf("Real-time signal %d", sig-34)
	case sig > 31:
		return fmt.Sprintf("Unknown signal %d", int(sig))
	}
	s := sig.String() // Go's table is glibc's, in lower case
	return strings.ToUpper(s[:1]) + s[1:]
}
