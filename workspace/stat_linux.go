package workspace

import (
	"io/fs"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StatPath is os.Stat for the digest memory's purposes, without building
// an fs.FileInfo: a no-op run stats every input, and os.Stat allocates
// for each. The mode is converted exactly as
// package os does, so its entries compare equal to StatOf's.
func StatPath(abs string) (FileStat, error) {
	return statAtFD(unix.AT_FDCWD, abs, abs)
}

// StatAt is StatPath of rel resolved from the open directory dir (abs
// names the file in errors).
func StatAt(dir *os.File, rel, abs string) (FileStat, error) {
	st, err := statAtFD(int(dir.Fd()), rel, abs)
	runtime.KeepAlive(dir)
	return st, err
}

// LstatPath is StatPath of the link itself when abs is a symbolic link.
func LstatPath(abs string) (FileStat, error) {
	return fstatat(unix.AT_FDCWD, abs, abs, unix.AT_SYMLINK_NOFOLLOW)
}

// lstatAt is LstatPath of rel resolved from the open directory dir.
func lstatAt(dir *os.File, rel, abs string) (FileStat, error) {
	st, err := fstatat(int(dir.Fd()), rel, abs, unix.AT_SYMLINK_NOFOLLOW)
	runtime.KeepAlive(dir)
	return st, err
}

func statAtFD(dirfd int, name, abs string) (FileStat, error) {
	return fstatat(dirfd, name, abs, 0)
}

func fstatat(dirfd int, name, abs string, flags int) (FileStat, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(dirfd, name, &st, flags)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return FileStat{}, &fs.PathError{Op: "stat", Path: abs, Err: err}
		}
	}
	return StatOfUnix(&st), nil
}

// StatOfUnix reduces a stat's result to a FileStat.
func StatOfUnix(st *unix.Stat_t) FileStat {
	return FileStat{
		Size:  st.Size,
		MTime: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		CTime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
		Ino:   st.Ino,
		Mode:  ModeOfUnix(st.Mode),
	}
}

// sysCtimeIno reads the ctime (ns) and inode number from a FileInfo's
// Sys(); zero where the system gives none.
func sysCtimeIno(sys any) (ctime int64, ino uint64) {
	if st, ok := sys.(*syscall.Stat_t); ok {
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec, st.Ino
	}
	return 0, 0
}

// ModeOfUnix is the fs.FileMode of a stat's st_mode m, converted exactly
// as package os converts it.
func ModeOfUnix(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// noStatx is set once statx is found missing (an old kernel, or a
// sandbox that forbids it): fstatat then, at the cost of a copy of each
// name.
var noStatx atomic.Bool

// StatNameAt stats the NUL-ended name at name relative to the directory
// fd (flags: 0 or AT_SYMLINK_NOFOLLOW), as StatPath would, and gives its
// number of links (which no key or fingerprint holds): statx reads the
// name in place, where fstatat would need it copied into a string. The
// error is the bare errno.
func StatNameAt(fd int, name *byte, flags int) (FileStat, uint64, error) {
	if !noStatx.Load() {
		var sx unix.Statx_t
		for {
			_, _, e := unix.Syscall6(unix.SYS_STATX, uintptr(fd), uintptr(unsafe.Pointer(name)),
				uintptr(flags|unix.AT_STATX_SYNC_AS_STAT), unix.STATX_BASIC_STATS, uintptr(unsafe.Pointer(&sx)), 0)
			switch e {
			case 0:
				return FileStat{
					Size:  int64(sx.Size),
					MTime: sx.Mtime.Sec*1e9 + int64(sx.Mtime.Nsec),
					CTime: sx.Ctime.Sec*1e9 + int64(sx.Ctime.Nsec),
					Ino:   sx.Ino,
					Mode:  ModeOfUnix(uint32(sx.Mode)),
				}, uint64(sx.Nlink), nil
			case unix.EINTR:
				continue
			case unix.ENOSYS, unix.EPERM:
				noStatx.Store(true)
			default:
				return FileStat{}, 0, e
			}
			break
		}
	}
	var st unix.Stat_t
	for {
		err := unix.Fstatat(fd, unix.BytePtrToString(name), &st, flags)
		if err == nil {
			return StatOfUnix(&st), uint64(st.Nlink), nil
		}
		if err != unix.EINTR {
			return FileStat{}, 0, err
		}
	}
}
