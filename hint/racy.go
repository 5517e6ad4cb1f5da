package hint

// The racy rule (git's): a hint that remembers a file by its stat is
// trusted only when the file's timestamps lie clearly before the moment
// the hint was recorded. A file modified again within the same timestamp
// tick after recording would otherwise keep its stat and hide the change.

// slack is how long before the recording a timestamp t (ns) must lie for
// a hint to be trusted: the timestamp granularity (taken as two seconds,
// FAT's, where times are whole seconds) plus the lag of the kernel's
// coarse clock that stamps files behind the wall clock we read (up to a
// jiffy; 50 ms is ample). An edit made after recording gets a time no
// earlier than the tick holding (recording time - lag), so a time before
// that tick cannot be reproduced by it.
func slack(t int64) int64 {
	const lag = 50e6
	if t%1e9 == 0 {
		return 2e9 + lag
	}
	return lag
}

// Recent reports whether an edit made at or after at (ns) could leave a
// file with timestamp t (ns): t lies within the racy window of at.
func Recent(t, at int64) bool { return t >= at-slack(t) }

// Racy reports whether an edit made at or after at could leave a file
// with this mtime and ctime (ns). The ctime counts too: a file rewritten
// with its mtime put back (cp -p, rsync -a, tar x, touch -d) has an old
// mtime but a ctime of the rewrite, and a second such rewrite within the
// same tick of a coarse ctime clock (Linux before 6.13) keeps size, mtime,
// ctime and inode.
func Racy(mtime, ctime, at int64) bool { return Recent(mtime, at) || Recent(ctime, at) }
