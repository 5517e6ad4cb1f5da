//go:build linux

package watch

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// mask is every change to a directory or to a file directly in it that
// would change what a stat walk finds: content (IN_MODIFY, and
// IN_CLOSE_WRITE, which also ends a writer that stored only through a
// mapping), metadata (IN_ATTRIB), names (create, delete, both halves of
// a rename) and the directory itself going away. IN_ONLYDIR refuses a
// descriptor that is not a directory. IN_DONT_FOLLOW is left out on
// purpose: the path is /proc/self/fd/N, a link that must be followed to
// reach the open directory.
const mask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_CREATE | unix.IN_DELETE | unix.IN_DELETE_SELF |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// localFS names the filesystems whose every change passes through this
// kernel's VFS, keyed by statfs f_type. Anything else is not quiet.
var localFS = map[uint32]string{
	unix.EXT4_SUPER_MAGIC:  "ext2/3/4", // one magic for all three
	unix.XFS_SUPER_MAGIC:   "xfs",
	unix.BTRFS_SUPER_MAGIC: "btrfs",
	unix.TMPFS_MAGIC:       "tmpfs",
	unix.F2FS_SUPER_MAGIC:  "f2fs",
}

// maxUnvouched bounds the files File hands back to the caller: past it,
// statting them one by one is no cheaper than the walk Quiet would save.
const maxUnvouched = 4096

// Watch watches the directories handed to Dir. Its methods may be called
// from several goroutines at once; a nil *Watch is never quiet.
type Watch struct {
	// mu is held shared while a watch is added and exclusively to give
	// up, read events or close, so no descriptor is closed under a Dir.
	mu        sync.RWMutex
	fd        int   // the inotify instance; -1 once given up
	mounts    int   // /proc/self/mountinfo, which polls POLLPRI after a mount or unmount; -1 when closed
	why       error // the first reason not to be quiet; never reset
	unvouched []string
}

// New starts a watch with no directory. When inotify is unavailable the
// watch is never quiet.
func New() *Watch {
	w := &Watch{fd: -1, mounts: -1}
	// A raw descriptor, not an *os.File: Go's poller would register the
	// file with its epoll, whose poll of it consumes the mount event.
	mounts, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		w.why = fmt.Errorf("cannot watch for mounts: %w", err)
		return w
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		unix.Close(mounts)
		w.why = fmt.Errorf("cannot start inotify: %w", err)
		return w
	}
	w.fd, w.mounts = fd, mounts
	return w
}

// Dir watches the open directory dir. The caller calls it before reading
// the directory, so every change after the read raises an event.
func (w *Watch) Dir(dir *os.File) {
	if w == nil {
		return
	}
	w.DirFD(int(dir.Fd()), dir.Name())
	runtime.KeepAlive(dir)
}

// DirFD is Dir for a directory open as the descriptor fd; name says
// which directory in a reason not to be quiet.
func (w *Watch) DirFD(fd int, name string) {
	if w == nil {
		return
	}
	w.mu.RLock()
	if w.why != nil {
		w.mu.RUnlock()
		return
	}
	err := w.add(fd, name)
	w.mu.RUnlock()
	if err != nil {
		w.giveUp(err)
	}
}

// add watches the directory open as fd; w.mu is held shared.
func (w *Watch) add(fd int, name string) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return fmt.Errorf("cannot watch %s: %w", name, err)
	}
	if _, ok := localFS[uint32(st.Type)]; !ok {
		return fmt.Errorf("cannot watch %s: its filesystem (type %#x) is not one whose every change this kernel sees", name, uint32(st.Type))
	}
	_, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), mask)
	if errors.Is(err, unix.ENOSPC) {
		return fmt.Errorf("cannot watch %s: %w (the limit is sysctl fs.inotify.max_user_watches)", name, err)
	}
	if err != nil {
		return fmt.Errorf("cannot watch %s: %w", name, err)
	}
	return nil
}

// File tells whether the caller must stat the file abs itself, the watch
// not vouching for it: a symlink (its target may live in a directory not
// watched) or a file with more than one link (it can be written through
// another directory). nlink and symlink describe the entry as found in a
// watched directory. Such files are listed by Unvouched.
func (w *Watch) File(abs string, nlink uint64, symlink bool) bool {
	if !symlink && nlink <= 1 {
		return false
	}
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.why != nil {
		return true
	}
	if len(w.unvouched) >= maxUnvouched {
		w.stopLocked(fmt.Errorf("more than %d files are symlinks or have several links", maxUnvouched))
		return true
	}
	w.unvouched = append(w.unvouched, abs)
	return true
}

// Unvouched returns the files File said the caller must stat itself.
func (w *Watch) Unvouched() []string {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.unvouched...)
}

// Quiet reports whether nothing changed in the watched directories since
// each was handed to Dir (File's files aside).
func (w *Watch) Quiet() bool { return w.Check() == nil }

// Check is Quiet with the reason: nil when quiet, else why not (the
// first reason found; it never changes after).
func (w *Watch) Check() error {
	if w == nil {
		return errors.New("no watch")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.why != nil {
		return w.why
	}
	if err := w.mountsChanged(); err != nil {
		w.stopLocked(err)
		return err
	}
	// Events are queued before the system call that caused them returns,
	// so every change already made is here; one read is enough, since any
	// event at all means not quiet.
	var buf [64 << 10]byte
	n, err := unix.Read(w.fd, buf[:])
	for err == unix.EINTR {
		n, err = unix.Read(w.fd, buf[:])
	}
	switch {
	case err == unix.EAGAIN:
		return nil
	case err != nil:
		err = fmt.Errorf("cannot read inotify events: %w", err)
	case n <= 0:
		err = errors.New("cannot read inotify events: empty read")
	default:
		err = verdict(buf[:n])
	}
	w.stopLocked(err)
	return err
}

// mountsChanged reports a mount or unmount in this mount namespace since
// New: a filesystem mounted over a watched directory's child changes what
// a walk finds without an event in the directory.
func (w *Watch) mountsChanged() error {
	fds := []unix.PollFd{{Fd: int32(w.mounts), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, 0)
	for err == unix.EINTR {
		n, err = unix.Poll(fds, 0)
	}
	if err != nil {
		return fmt.Errorf("cannot poll for mounts: %w", err)
	}
	if n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR|unix.POLLNVAL) != 0 {
		return errors.New("a filesystem was mounted or unmounted")
	}
	return nil
}

// giveUp makes the watch not quiet for good, for the reason err.
func (w *Watch) giveUp(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked(err)
}

// stopLocked records why (unless a reason is known) and releases the
// kernel's watches at once, since nothing can be quiet any more.
func (w *Watch) stopLocked(why error) {
	if w.why == nil {
		w.why = why
	}
	if w.fd >= 0 {
		// Closing an inotify descriptor waits for the kernel to free its
		// marks, a sleep that grows with the number of watches; nothing
		// needs to wait for it.
		go unix.Close(w.fd)
		w.fd = -1
	}
	if w.mounts >= 0 {
		unix.Close(w.mounts)
		w.mounts = -1
	}
}

// Close releases the watch; it is not quiet after.
func (w *Watch) Close() error {
	if w == nil {
		return nil
	}
	w.giveUp(errors.New("the watch is closed"))
	return nil
}
