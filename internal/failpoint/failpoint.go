// Package failpoint lets tests stop cairn at a named step of its write
// protocols and make that step fail, kill the process, pause or panic. It
// is modelled on etcd's gofail and containerd's failpoint package.
//
// Code marks a step with [Hit]:
//
//	if err := failpoint.Hit("blob.fsync"); err != nil {
//		return err
//	}
//
// Hit costs one atomic load while no failpoint is configured, which is
// always the case in production. Tests configure failpoints in the
// environment of a cairn process, or in-process with [Set]:
//
//	CAIRN_FAILPOINTS='blob.fsync=2*off->kill;state.rename=error(ENOSPC)'
//
// Each term is label=actions; actions are tried in order, each with an
// optional count: "2*off->kill" does nothing at the first two hits and
// kills at the third (and every later one). Actions:
//
//	off           nothing
//	kill          SIGKILL to this process
//	exit(n)       os.Exit(n) without cleanup
//	error(ERRNO)  Hit returns that errno (EIO, ENOSPC, EACCES, EROFS, ...)
//	sleep(ms)     pause for ms milliseconds, then go on
//	await(FILE)   pause until FILE exists (a test makes it once it saw
//	              what it waits for), then go on
//	panic         panic
//
// With CAIRN_FAILPOINT_TRACE=<file>, every hit appends its label and a
// newline to the file with one write, so a test that kills the process
// knows which steps it had passed.
package failpoint
