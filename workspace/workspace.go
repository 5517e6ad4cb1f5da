package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairn-run/cairn/internal/jsonx"
)

// StateDirName is the workspace's state directory beside the spec.
const StateDirName = ".cairn"

// Workspace is the directory holding the spec, its inputs and outputs, and
// cairn's state directory.
type Workspace struct {
	Root string // absolute

	// dir, when set (New sets it), holds the workspace directory
	// open, so inputs are stat'ed relative to it (StatRel).
	dir *rootDir
}

// rootDir is a workspace directory opened on first use and shared by
// copies of the Workspace; the os.File closes itself when unreachable.
type rootDir struct {
	once sync.Once
	f    *os.File
}

func (d *rootDir) open(root string) *os.File {
	d.once.Do(func() {
		if f, err := os.Open(root); err == nil {
			d.f = f
		}
	})
	return d.f
}

// StatRel stats the workspace file rel as StatPath does its absolute path
// (w.Abs(rel), which errors name). A clean relative path below the root
// is resolved from the open workspace directory, which walks two path
// components rather than every one of the root's and builds no absolute
// path: a no-op run stats every input. Paths with ".." or absolute ones go
// by the absolute path, so a symlink in the root's path means what it
// meant before.
func (w *Workspace) StatRel(rel string) (FileStat, error) {
	if w.dir != nil && rel != "" && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel) {
		if f := w.dir.open(w.Root); f != nil {
			st, err := StatAt(f, rel, "")
			if pe, ok := err.(*fs.PathError); ok {
				pe.Path = w.Abs(rel)
			}
			return st, err
		}
	}
	return StatPath(w.Abs(rel))
}

// LstatRel is StatRel that does not follow a final symbolic link.
func (w *Workspace) LstatRel(rel string) (FileStat, error) {
	if w.dir != nil && rel != "" && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel) {
		if f := w.dir.open(w.Root); f != nil {
			st, err := lstatAt(f, rel, "")
			if pe, ok := err.(*fs.PathError); ok {
				pe.Path = w.Abs(rel)
			}
			return st, err
		}
	}
	return LstatPath(w.Abs(rel))
}

// StateDir returns the absolute path of .cairn/.
func (w *Workspace) StateDir() string { return filepath.Join(w.Root, StateDirName) }

// RunsDir returns the absolute path of .cairn/runs/.
func (w *Workspace) RunsDir() string { return filepath.Join(w.StateDir(), "runs") }

// Abs returns the absolute path of a workspace path (slash-separated,
// relative unless absolute).
func (w *Workspace) Abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.FromSlash(p)
	}
	return filepath.Join(w.Root, filepath.FromSlash(p))
}

// Rel returns the slash path of an absolute path inside the workspace.
func (w *Workspace) Rel(abs string) string {
	r, err := filepath.Rel(w.Root, abs)
	if err != nil || !filepath.IsLocal(r) {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(r)
}

// Init creates .cairn/ with a .gitignore that ignores it whole.
func (w *Workspace) Init() error {
	if err := os.MkdirAll(w.RunsDir(), 0o755); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	gi := filepath.Join(w.StateDir(), ".gitignore")
	if _, err := os.Stat(gi); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(gi, []byte("# cairn's workspace state: run records, logs, digests\n*\n"), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", gi, err)
		}
	}
	return nil
}

// Lock is the held workspace lock.
type Lock struct {
	fl   *flock.Flock
	path string
}

// LockInfo tells who holds the workspace lock.
type LockInfo struct {
	PID   int    `json:"pid"`
	RunID string `json:"run_id"`
	Host  string `json:"host"`
}

// appendJSON appends the holder as json.Marshal writes it, without its
// reflection, which every run's start would pay.
func (li LockInfo) appendJSON(b []byte) []byte {
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, int64(li.PID), 10)
	b = append(b, `,"run_id":`...)
	b = jsonx.AppendString(b, li.RunID)
	b = append(b, `,"host":`...)
	b = jsonx.AppendString(b, li.Host)
	return append(b, '}')
}

// ErrLocked is returned (wrapped in a *LockedError) when another process
// holds the workspace lock.
var ErrLocked = errors.New("workspace is locked")

// LockedError says who holds the lock.
type LockedError struct {
	Path   string
	Holder LockInfo
}

func (e *LockedError) Error() string {
	who := "another cairn process"
	if e.Holder.PID != 0 {
		who = fmt.Sprintf("cairn pid %d", e.Holder.PID)
		if e.Holder.RunID != "" {
			who += fmt.Sprintf(" (run %s)", e.Holder.RunID)
		}
	}
	return fmt.Sprintf("workspace is locked by %s: %s; wait for that run to finish or stop it", who, e.Path)
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// TryLock takes the workspace lock without waiting. The lock is an flock
// on .cairn/lock, released by the kernel when the process dies, so a
// killed run never leaves a stale lock behind.
func (w *Workspace) TryLock(runID string) (*Lock, error) {
	if err := w.Init(); err != nil {
		return nil, err
	}
	path := filepath.Join(w.StateDir(), "lock")
	host, _ := os.Hostname()
	fl := flock.New(path)
	// A run killed with SIGKILL while it was starting a phase can leave
	// the lock held for a moment by the half-started child, which shares
	// the open lock file until its exec closes it. When the recorded
	// holder is a process of this machine that is gone, wait a little for
	// that to pass instead of refusing.
	deadline := time.Now().Add(3 * time.Second)
	for {
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			break
		}
		le := &LockedError{Path: path}
		if b, err := os.ReadFile(path); err == nil {
			_ = json.Unmarshal(b, &le.Holder)
		}
		if !holderGone(le.Holder, host) || time.Now().After(deadline) {
			return nil, le
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := writeLockInfo(path, LockInfo{PID: os.Getpid(), RunID: runID, Host: host}.appendJSON(nil)); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{fl: fl, path: path}, nil
}

// writeLockInfo writes who holds the lock into the lock file itself
// (empty while nobody does). Only the holder writes it; a reader that
// catches it half-written learns nothing, which costs it only the name
// of the holder in its error. A file of its own (lock.json, before) cost
// every run a new inode, a rename and an unlink.
func writeLockInfo(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Truncate(int64(len(b)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// holderGone reports whether the recorded lock holder was a process of
// this host that no longer exists.
func holderGone(h LockInfo, host string) bool {
	if h.PID <= 0 || h.Host != host || h.PID == os.Getpid() {
		return false
	}
	p, err := os.FindProcess(h.PID)
	if err != nil {
		return true
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// Unlock releases the lock, first emptying the holder's record.
func (l *Lock) Unlock() error {
	_ = os.Truncate(l.path, 0)
	return l.fl.Unlock()
}

// SafeName turns a phase address into a file name: harden["m1"] becomes
// harden[m1].
func SafeName(addr string) string { return safeNameReplacer.Replace(addr) }

// safeNameReplacer is built once: a Replacer builds its tables on first
// use, and SafeName is called several times per phase.
var safeNameReplacer = strings.NewReplacer(`"`, "", "/", "_", `\`, "_", "\x00", "_")

// New returns the workspace at root (absolute) that stats its files
// relative to the open root directory (StatRel).
func New(root string) Workspace { return Workspace{Root: root, dir: &rootDir{}} }
