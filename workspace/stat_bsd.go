//go:build darwin || freebsd || netbsd

package workspace

import "syscall"

// sysCtimeIno reads the ctime (ns) and inode number from a FileInfo's
// Sys(); zero where the system gives none.
func sysCtimeIno(sys any) (ctime int64, ino uint64) {
	if st, ok := sys.(*syscall.Stat_t); ok {
		return int64(st.Ctimespec.Sec)*1e9 + int64(st.Ctimespec.Nsec), uint64(st.Ino)
	}
	return 0, 0
}
