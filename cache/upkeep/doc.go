// Package upkeep keeps a cache directory in good order over time: usage
// sessions (which entries each run used), GC (evicting the least recently
// used entries, then unreferenced blobs), Verify (re-checking every object,
// and repairing), StatsOf (sizes and hit rates) and MakeShared (handing a
// cache to a Unix group).
//
// It is apart from package cache, the store every run reads and writes,
// because none of it is needed to store or find a result: a run works the
// same without a session, and a cache never gc'd or verified only grows.
// It reaches the store through what cache exports for it (the layout
// names, OpenObject and ReadEntryFile, the quarantine, the modes of a
// shared cache) and follows the same protocol: FORMAT.md, "Garbage
// collection" and "Usage sessions". The files it creates and removes
// itself go through files.go.
package upkeep
