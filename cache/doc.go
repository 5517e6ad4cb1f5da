// Package cache stores cairn's phase results: a content-addressed store of
// blobs (CAS) and an action cache that maps a phase key to the outputs it
// produced, both in one directory.
//
// The main entry point is [Open], which returns a [*Dir]. Blobs go in with
// [Dir.PutFile], [Dir.PutReader] and [Dir.PutBytes] and come back out with
// [Dir.ReadBlob] and [Dir.RestoreFile]; they are named by the [Digest]
// (SHA-256) of their uncompressed content. A phase key is an [ActionID]
// computed by [ComputeKey] from a list of typed [Component] records, and
// [Dir.PutEntry] / [Dir.GetEntry] store and load the [Entry] for a key.
//
// Contracts that hold for every operation:
//
//   - A [*Dir] is safe for concurrent use by many goroutines and by many
//     processes, on one or many machines, sharing the same directory. Writers
//     may duplicate work; they never corrupt each other. Reads and writes
//     take no lock (only upkeep.GC does, against other GCs).
//   - Objects are published atomically and are write-once: a reader sees an
//     object either absent or complete, and an existing valid object is never
//     replaced. A process appends the entries it stores to one pack file and
//     publishes each as a hard link to it (pack.go; [Dir.Close] ends the
//     pack), so an entry costs no inode of its own.
//   - Everything read is verified (digest of a blob, checksum, key and
//     references of an entry). A bad object is moved to quarantine/ and
//     reported as a [*CorruptError], which matches [ErrCorrupt]; callers
//     treat it as a miss. A missing object is [ErrNotFound].
//
// This package is the store: what every run reads and writes. Keeping a
// cache in order over time (usage sessions, GC, Verify, Stats, sharing
// with a group) is package cache/upkeep, which reaches the store through
// the layout names, the object reads and the quarantine exported here;
// a second cache level behind a Dir (read-through on a miss, upload on a
// put) is package cache/remote.
//
// The on-disk layout, the write protocol and the key encoding are written
// down in FORMAT.md beside this file; change them only together with it.
//
// This package knows nothing about HCL, phases or processes: the engine
// decides what goes into a key and which files are outputs. Every file
// create, write, sync, rename and link of the store goes through atomic.go
// (upkeep's through its files.go), so permissions, fault injection and
// alternative filesystems have one place to hook in.
package cache
