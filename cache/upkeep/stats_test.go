package upkeep

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestStats(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	now := time.Now()
	raw := plantBlob(t, c, randomBytes(t, 1000), false, time.Time{})
	text := textBytes(8000)
	small := plantBlob(t, c, text, true, time.Time{})
	// Over the sample size, PutBytes compresses as a stream: the frame
	// header does not record the content size.
	big, err := c.PutBytes(textBytes(sampleSize + 1000))
	if err != nil {
		t.Fatal(err)
	}
	e := testEntry("stats", raw, small, big)
	ep := plantEntry(t, c, e, time.Time{})
	plantTemp(t, c, "blob-0000000000000001", now)
	plantTemp(t, c, ".nfs0000000000000001", now) // not counted
	qp := filepath.Join(c.Root(), cache.QuarantineDir, "blob-x.0000000000000001")
	os.WriteFile(qp, []byte("bad bytes"), 0o444)

	k := cache.ComputeKey(nil).String()
	plantSession(t, c, now.Add(-3*time.Hour), 1, []string{"label oldest", "hit " + k, "end"}, now.Add(-3*time.Hour))
	plantSession(t, c, now.Add(-2*time.Hour), 2, []string{"label middle", "hit " + k, "hit " + k, "hit " + k, "miss " + k, "end"}, now.Add(-2*time.Hour))
	plantSession(t, c, now.Add(-time.Hour), 3, []string{"label newest", "hit " + k, "miss " + k, "miss " + k, "miss " + k, "put " + k}, now.Add(-time.Minute))

	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	smallDisk, bigDisk := size(blobPath(c, small, true)), size(blobPath(c, big, true))
	want := &Stats{
		Root:              c.Root(),
		Entries:           1,
		EntryBytes:        size(ep),
		Blobs:             3,
		BlobBytes:         1000 + smallDisk + bigDisk,
		Bytes:             size(ep) + 1000 + smallDisk + bigDisk,
		CompressedBlobs:   2,
		UncompressedBytes: 1000 + 8000,
		UnknownSizeBlobs:  1,
		UnknownSizeBytes:  bigDisk,
		CompressionRatio:  float64(1000+8000) / float64(1000+smallDisk),
		TempFiles:         1,
		TempBytes:         int64(len("partial")),
		Quarantined:       1,
		QuarantineBytes:   int64(len("bad bytes")),
		Sessions: []SessionStats{
			{PID: 3, Label: "newest", State: SessionLive, Hits: 1, Misses: 3, Puts: 1},
			{PID: 2, Label: "middle", State: SessionEnded, Hits: 3, Misses: 1},
		},
		Hits: 4, Misses: 4, Puts: 1, HitRate: 0.5,
	}
	got, err := StatsOf(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(SessionStats{}, "Name", "Start", "LastActive")); diff != "" {
		t.Errorf("Stats(2) (-want +got):\n%s", diff)
	}
	all, err := StatsOf(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Sessions) != 3 || all.Hits != 5 || all.Misses != 4 {
		t.Errorf("Stats(0): %d sessions, %d hits, %d misses; want 3, 5, 4", len(all.Sessions), all.Hits, all.Misses)
	}
}

func TestStatsEmpty(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	got, err := StatsOf(c, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Stats{Root: c.Root()}, got); diff != "" {
		t.Errorf("Stats of an empty cache (-want +got):\n%s", diff)
	}
}
