package s3

import (
	"context"
	"crypto/rand"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
)

// TestGCEvictsUnused: gc removes entries not used for MaxAge and the blobs
// only they referenced, and keeps an entry a run fetched (its use was
// recorded), the blobs it references and a blob just uploaded. A dry run
// removes nothing.
func TestGCEvictsUnused(t *testing.T) {
	c := newTestClient(t, Options{})
	ctx := context.Background()
	blob := func() cache.Digest {
		b := make([]byte, 100)
		rand.Read(b)
		d := cache.HashBytes(b)
		if err := c.PutBlob(ctx, d, 100, opener(b)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	entry := func(d cache.Digest) cache.ActionID {
		comps := []cache.Component{{Kind: "param", Name: "n", Value: rand.Text()}}
		key := cache.ComputeKey(comps)
		e := &cache.Entry{Format: cache.EntryFormat, Key: key, Phase: "p", Created: time.Now().UTC(), Components: comps,
			Outputs: []cache.OutputFile{{Path: "out", Type: cache.TypeFile, Mode: 0o644, Digest: d, Size: 100}}}
		b, err := cache.EncodeEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PutEntry(ctx, key, b); err != nil {
			t.Fatal(err)
		}
		return key
	}
	oldBlob, liveBlob, orphan := blob(), blob(), blob()
	oldEntry, liveEntry := entry(oldBlob), entry(liveBlob)
	k := c.key("ac", oldEntry.String())
	head, err := c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &c.bucket, Key: &k})
	if err != nil {
		t.Fatal(err)
	}
	t0 := aws.ToTime(head.LastModified)
	// LastModified has a resolution of one second: what follows must be
	// stamped at a later second than t0 by the server's clock.
	time.Sleep(1100 * time.Millisecond)

	// A run three days later fetches liveEntry, which records its use,
	// and uploads a new blob.
	later := c.withClock(func() time.Time { return t0.Add(72 * time.Hour) })
	if _, err := later.GetEntry(ctx, liveEntry); err != nil {
		t.Fatal(err)
	}
	newBlob := blob()

	gcc := c.withClock(func() time.Time { return t0.Add(MinGCAge + 500*time.Millisecond) })
	ids := func(r *GCReport) []string {
		var s []string
		for _, it := range r.Removed {
			s = append(s, it.Kind+" "+it.ID)
		}
		sort.Strings(s)
		return s
	}
	want := []string{"blob " + oldBlob.String(), "blob " + orphan.String(), "entry " + oldEntry.String()}
	sort.Strings(want)
	dry, err := gcc.GC(ctx, GCOptions{MaxAge: MinGCAge, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, ids(dry)); diff != "" {
		t.Fatalf("dry run (-want +got):\n%s", diff)
	}
	if has, _ := c.HasBlob(ctx, orphan); !has {
		t.Fatal("a dry run removed a blob")
	}
	rep, err := gcc.GC(ctx, GCOptions{MaxAge: MinGCAge})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, ids(rep)); diff != "" {
		t.Fatalf("gc (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		d    cache.Digest
		want bool
	}{{oldBlob, false}, {orphan, false}, {liveBlob, true}, {newBlob, true}} {
		if has, err := c.HasBlob(ctx, tc.d); err != nil || has != tc.want {
			t.Errorf("blob %s after gc: %v, %v; want %v", tc.d.Short(), has, err, tc.want)
		}
	}
	if _, err := c.GetEntry(ctx, oldEntry); err == nil {
		t.Error("the unused entry survived gc")
	}
	if _, err := c.GetEntry(ctx, liveEntry); err != nil {
		t.Errorf("the entry a run used was removed: %v", err)
	}
	if _, err := gcc.GC(ctx, GCOptions{MaxAge: time.Hour}); err == nil {
		t.Error("gc accepted a max age shorter than the use-recording interval")
	}
}

// withClock is c with another clock.
func (c *Client) withClock(now func() time.Time) *Client {
	c.ready()
	return &Client{load: c.load, api: c.api, bucket: c.bucket, prefix: c.prefix, name: c.name, retries: c.retries, retryDelay: c.retryDelay, now: now}
}
