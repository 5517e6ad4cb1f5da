package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A pipeline whose first stage is `cat FILE...` has cairn copy the files
// into the pipe to the second stage itself, as cat would: one process
// fewer to fork and exec per phase (for `cat inputs | sha256sum > out`,
// half of them). It does so only where that cannot differ from running
// cat: the program is the system's (/usr/bin/cat or /bin/cat, not a cat
// of the user's earlier in PATH), every operand is a file name (no
// option, no "-", nothing of the opening process such as /proc/self/...
// nor a link to it), the stage has no redirection, and every file opens
// as a regular file before anything starts; otherwise cat runs. Its
// exit status is cat's (status), which is the pipeline's with pipefail
// when the last stage succeeds.
type catStage struct {
	prog    string // as written: cat's messages name it so
	names   []string
	files   []*os.File
	w       *os.File // the pipe to the second stage
	stderr  *os.File // cat's copy of the job's standard error; nil: /dev/null
	started bool
	done    chan struct{}
	// status is cat's exit status once done is closed: 1 after a read
	// error, 128+SIGPIPE when the pipe's reader went away first.
	status int
}

// maxCatOperands bounds the files catStage holds open at once; a longer
// list runs cat.
const maxCatOperands = 64

// systemCats are the cat programs catStage stands in for.
var systemCats = map[string]bool{"/usr/bin/cat": true, "/bin/cat": true}

// openCat opens the files of p's first stage if catStage may do it, else
// returns nil.
func openCat(dir string, p pipeline) *catStage {
	if len(p) < 2 {
		return nil
	}
	st := p[0]
	if len(st.Redirs) > 0 || len(st.Args) < 2 || len(st.Args)-1 > maxCatOperands || !systemCats[st.Prog] {
		return nil
	}
	// Without cat, the second stage leads the pipeline's process group,
	// which under sh no stage does: setsid, finding itself a leader,
	// forks and exits at once, ending the pipeline before the program it
	// runs has read its input.
	if filepath.Base(p[1].Prog) == "setsid" {
		return nil
	}
	c := &catStage{prog: st.Args[0], names: st.Args[1:], done: make(chan struct{})}
	for _, name := range c.names {
		if name == "" || name[0] == '-' {
			c.abandon()
			return nil
		}
		path := name
		if !filepath.IsAbs(path) {
			path = dir + "/" + path // as openRedirect: the kernel resolves "link/.."
		}
		if selfPath(path) { // /proc/self/environ is cat's own, not cairn's
			c.abandon()
			return nil
		}
		f, ok := openCatFile(path)
		if !ok {
			c.abandon()
			return nil
		}
		c.files = append(c.files, f)
	}
	return c
}

// setStderr gives c a copy of the job's standard error, its own as a
// cat process's would be: the job's may be the write end of a pipe that
// cairn closes once the stages have started (outputPipes.started), and
// its reader must not see the end before c's messages.
func (c *catStage) setStderr(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	fd := -1
	if cerr := rc.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	c.stderr = os.NewFile(uintptr(fd), f.Name())
	return nil
}

// abandon closes what c opened; the pipeline did not start.
func (c *catStage) abandon() {
	for _, f := range c.files {
		f.Close()
	}
	if c.w != nil {
		c.w.Close()
	}
	if c.stderr != nil {
		c.stderr.Close()
	}
}

// run copies the files into the pipe, in order, then closes it. A read
// error is reported on the job's standard error as cat reports it, and
// the next file follows; once the pipe's reader is gone (EPIPE), it stops
// silently, as cat killed by SIGPIPE does.
func (c *catStage) run() {
	defer close(c.done)
	defer c.w.Close()
	if c.stderr != nil {
		defer c.stderr.Close()
	}
	buf := make([]byte, 64<<10)
	for i, f := range c.files {
		for {
			n, rerr := f.Read(buf)
			if n > 0 {
				if _, werr := c.w.Write(buf[:n]); werr != nil {
					c.status = 128 + int(syscall.SIGPIPE)
					for _, g := range c.files[i:] {
						g.Close()
					}
					return
				}
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				c.report(c.names[i], rerr)
				c.status = 1
				break
			}
		}
		f.Close()
	}
}

// report writes cat's message for a file it could not read.
func (c *catStage) report(name string, err error) {
	if c.stderr == nil {
		return
	}
	msg := err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		msg = errno.Error()
	}
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:] // strerror's text, as Go has it in lower case
	}
	fmt.Fprintf(c.stderr, "%s: %s: %s\n", c.prog, name, msg)
}

// stop ends the copy once the pipeline's processes have exited: a reader
// of the pipe that left their process group would otherwise keep it
// blocked, where cat would have been killed with the group.
func (c *catStage) stop() {
	_ = c.w.Close()
	<-c.done
}
