// Package watch tells whether anything changed under a set of
// directories since they were watched, or that it cannot tell. A walk of
// input directories hands it each directory it opens, before reading it;
// later, Quiet answers true only when the kernel vouches that none of
// those directories, nor any file directly in them, was created, deleted,
// renamed, written, truncated or had its mode, owner or times changed
// since. Then a second stat walk of the same tree would find what the
// first one found, and can be skipped. Any doubt answers not quiet, and
// the caller walks again: a false "quiet" is the only wrong answer.
//
// On Linux it uses inotify: a watch per directory, added on the open
// directory itself (through /proc/self/fd), so the inode watched is the
// one read even if its path is renamed meanwhile. Quiet is false for
// good after any event, a queue overflow, any failed Dir (a full
// fs.inotify.max_user_watches, no file descriptors left, no /proc), a
// directory on a filesystem not in the allowlist, any mount or unmount
// in this process's mount namespace, and after Close. Elsewhere nothing
// is ever quiet.
//
// The allowlist holds local filesystems whose every change passes through
// this kernel's VFS and so raises an event: ext2/3/4, XFS, Btrfs, F2FS
// and tmpfs. Network filesystems (NFS, CIFS, 9p, Ceph, Lustre, GPFS),
// FUSE and overlayfs are out: another host or another layer can change
// them with no event here.
//
// What the watch cannot vouch for, and what the caller does about it:
//
//   - A file reached through a symlink lives in a directory that may not
//     be watched, and a file with several hard links can be written
//     through another directory's link, which raises the event only
//     there. File reports such files; the caller stats them itself (Quiet
//     says nothing about them). Past a limit of such files, Quiet is
//     false.
//   - A file with one link when its directory was watched that is then
//     given another link outside the watched directories (link(2) raises
//     IN_ATTRIB on the file alone, which no directory watch receives) and
//     written through it raises no event here: Quiet stays true. Only a
//     stat of every file would see it, which is what the watch saves.
//   - A store through a shared writable mapping raises no event. Closing
//     the descriptor the mapping was made from raises IN_CLOSE_WRITE
//     (also at process exit), so what escapes is a mapping whose file
//     was opened for writing before its directory was watched, or is
//     still open when Quiet is asked. The stat walk this replaces does
//     little better: the kernel updates the mtime only on the first
//     write fault after writeback, and the digest memory trusts stat, so
//     cairn claims nothing for files written that way while a phase runs.
//   - A file opened by handle (open_by_handle_at, the kernel NFS server
//     exporting the workspace) may have no parent directory the kernel
//     knows of, and its writes then raise no event on the watched
//     directory. Editing a workspace through a kernel NFS export while a
//     phase runs is out of scope.
//   - Subdirectories are watched only if Dir is called for them; a walk
//     that skips a subtree vouches for nothing in it (its creation,
//     removal or renaming still raises an event in its parent).
//
// A watch costs a statfs and an inotify_add_watch per directory, and
// pins the directory's inode in memory until Close; BenchmarkDir gives
// the figure beside BenchmarkStatWalk, the walk a quiet watch saves.
package watch
