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
//     take no lock (only [Dir.GC] does, against other GCs).
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
// Maintenance: [Dir.StartSession] records a process's hits, misses and puts
// in a [Session] (advisory: GC's least-recently-used order and its
// protection of runs in progress, and the hit rates of [Dir.Stats]);
// [Dir.GC] evicts entries and then unreferenced blobs (gc.go);
// [Dir.Verify] re-checks every object and can repair (verify.go).
//
// The on-disk layout, the write protocol and the key encoding are written
// down in FORMAT.md beside this file; change them only together with it.
//
// This package knows nothing about HCL, phases or processes: the engine
// decides what goes into a key and which files are outputs. Every file
// create, write, sync, rename and link goes through atomic.go, so
// permissions, fault injection and alternative filesystems have one place
// to hook in.
package cache
