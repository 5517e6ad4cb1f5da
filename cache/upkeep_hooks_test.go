package cache

import "time"

// The store's tests cross-check it with package upkeep's Verify and GC.
// upkeep imports this package, so the tests reach them through these
// hooks, set by upkeep_link_test.go (package cache_test), and these
// copies of the parts of upkeep's options and reports they read.

var (
	VerifyHook func(*Dir, VerifyOptions) (*VerifyReport, error)
	GCHook     func(*Dir, GCOptions) (*GCReport, error)
	StatsHook  func(*Dir, int) (*Stats, error)
)

// Verify runs upkeep.Verify on c.
func (c *Dir) Verify(o VerifyOptions) (*VerifyReport, error) { return VerifyHook(c, o) }

// GC runs upkeep.GC on c.
func (c *Dir) GC(o GCOptions) (*GCReport, error) { return GCHook(c, o) }

// Stats runs upkeep.StatsOf on c.
func (c *Dir) Stats(recent int) (*Stats, error) { return StatsHook(c, recent) }

type Stats struct {
	Entries, Blobs        int
	EntryBytes, BlobBytes int64
}

type VerifyOptions struct{ Repair bool }

type ProblemClass string

const (
	ProblemCorrupt    ProblemClass = "corrupt"
	ProblemOrphanTemp ProblemClass = "orphan-tmp"
)

type Problem struct {
	Class                         ProblemClass
	Kind, ID, Path, Cause, Repair string
}

type VerifyReport struct {
	Problems                            []Problem
	Blobs, BlobsRead, Entries           int
	Bytes, CompressedBytes, ReadBytes   int64
	InFlight, Quarantined, NewerEntries int
	Exit                                int // upkeep's ExitCode()
}

func (r *VerifyReport) ExitCode() int { return r.Exit }

type GCOptions struct {
	MaxSize int64
	Grace   time.Duration
	Now     func() time.Time
}

type GCItem struct {
	Kind, ID, Path string
	Size           int64
}

type GCReport struct {
	EntriesBefore, BlobsBefore   int
	BytesBefore, BytesAfter      int64
	EntriesRemoved, BlobsRemoved int
	BytesRemoved                 int64
	Removed                      []GCItem
}
