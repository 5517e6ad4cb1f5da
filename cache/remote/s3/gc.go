package s3

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-run/cairn/cache"
)

// MinGCAge is the shortest --max-age GC accepts: use is recorded at most
// once a day, so a younger LastModified says nothing about recent use.
const MinGCAge = 2 * touchAfter

// GCOptions says what [Client.GC] removes.
type GCOptions struct {
	MaxAge time.Duration // evict entries not used for longer than this
	DryRun bool          // list, remove nothing
}

// GCItem is one object GC removed (or would remove).
type GCItem struct {
	Kind    string    `json:"kind"` // "entry", "blob" or "upload"
	ID      string    `json:"id"`
	Size    int64     `json:"size"`
	LastUse time.Time `json:"last_use"`
}

// GCReport says what GC did.
type GCReport struct {
	Removed        []GCItem `json:"removed"`
	EntriesRemoved int      `json:"entries_removed"`
	BlobsRemoved   int      `json:"blobs_removed"`
	UploadsAborted int      `json:"uploads_aborted"`
	BytesRemoved   int64    `json:"bytes_removed"`
	EntriesKept    int      `json:"entries_kept"`
	BlobsKept      int      `json:"blobs_kept"`
	Warnings       []string `json:"warnings,omitempty"`
}

type object struct {
	key  string
	size int64
	mod  time.Time
}

// list returns the objects under prefix/kind/.
func (c *Client) list(ctx context.Context, kind string) ([]object, error) {
	if err := c.ready(); err != nil {
		return nil, fmt.Errorf("remote cache %s: %w", c.name, err)
	}
	p := c.prefix + kind + "/"
	pg := awss3.NewListObjectsV2Paginator(c.api, &awss3.ListObjectsV2Input{Bucket: &c.bucket, Prefix: &p})
	var out []object
	for pg.HasMorePages() {
		var page *awss3.ListObjectsV2Output
		err := c.call(ctx, func(ctx context.Context) error {
			var err error
			page, err = pg.NextPage(ctx)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("remote cache %s: list %s: %w", c.name, p, err)
		}
		for _, o := range page.Contents {
			out = append(out, object{key: aws.ToString(o.Key), size: aws.ToInt64(o.Size), mod: aws.ToTime(o.LastModified)})
		}
	}
	return out, nil
}

// GC evicts the entries whose last use (their upload, or the last use a
// hit recorded in their metadata) is older than MaxAge, then the blobs no remaining
// entry references that are older than MaxAge too, and multipart uploads
// left unfinished for that long. What a run in progress uses is kept: an
// entry it fetched was renewed when fetched, and a blob it uploaded is
// younger than MaxAge; an entry is checked again just before it is
// deleted. If a kept entry cannot be read, no blob is removed.
func (c *Client) GC(ctx context.Context, o GCOptions) (*GCReport, error) {
	if o.MaxAge < MinGCAge {
		return nil, fmt.Errorf("--max-age %v is too short for a remote cache: use is recorded at most once a day, so the shortest is %v", o.MaxAge, MinGCAge)
	}
	if c.readOnly && !o.DryRun {
		return nil, fmt.Errorf("remote cache %s is read-only here: gc would delete", c.name)
	}
	cutoff := c.now().Add(-o.MaxAge)
	rep := &GCReport{}
	entries, err := c.list(ctx, "ac")
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	refsKnown := true
	keep := func(k string) {
		rep.EntriesKept++
		if !c.addRefs(ctx, k, live) {
			refsKnown = false
		}
	}
	for _, e := range entries {
		hex := strings.TrimPrefix(e.key, c.prefix+"ac/")
		if !e.mod.Before(cutoff) {
			keep(e.key)
			continue
		}
		// Its recorded use is in its metadata; and a run may have used it
		// since the listing.
		var head *awss3.HeadObjectOutput
		if err := c.call(ctx, func(ctx context.Context) error {
			var err error
			head, err = c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &c.bucket, Key: &e.key})
			return err
		}); err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("remote cache %s: head %s: %v", c.name, e.key, err))
			keep(e.key)
			continue
		}
		if used := lastUse(head.LastModified, head.Metadata); !used.Before(cutoff) {
			keep(e.key)
			continue
		} else {
			e.mod = used
		}
		if !o.DryRun {
			if err := c.delete(ctx, e.key); err != nil {
				rep.Warnings = append(rep.Warnings, err.Error())
				keep(e.key)
				continue
			}
		}
		rep.Removed = append(rep.Removed, GCItem{"entry", hex, e.size, e.mod})
		rep.EntriesRemoved++
		rep.BytesRemoved += e.size
	}
	if !refsKnown {
		rep.Warnings = append(rep.Warnings, "some entries could not be read, so no blob was removed")
	} else {
		blobs, err := c.list(ctx, "cas")
		if err != nil {
			return rep, err
		}
		for _, b := range blobs {
			hex := strings.TrimPrefix(b.key, c.prefix+"cas/")
			if live[hex] || !b.mod.Before(cutoff) {
				rep.BlobsKept++
				continue
			}
			if !o.DryRun {
				if err := c.delete(ctx, b.key); err != nil {
					rep.Warnings = append(rep.Warnings, err.Error())
					continue
				}
			}
			rep.Removed = append(rep.Removed, GCItem{"blob", hex, b.size, b.mod})
			rep.BlobsRemoved++
			rep.BytesRemoved += b.size
		}
	}
	c.abortStale(ctx, cutoff, o.DryRun, rep)
	return rep, nil
}

// addRefs adds the blobs entry object k references to live; false if the
// entry could not be read or decoded.
func (c *Client) addRefs(ctx context.Context, k string, live map[string]bool) bool {
	var b []byte
	err := c.call(ctx, func(ctx context.Context) error {
		out, err := c.api.GetObject(ctx, &awss3.GetObjectInput{Bucket: &c.bucket, Key: &k})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		b, err = readBody(out.Body, aws.ToInt64(out.ContentLength), MaxEntrySize)
		return err
	})
	if err != nil {
		return false
	}
	e, err := cache.DecodeEntry(b)
	if err != nil {
		return false
	}
	for _, d := range []cache.Digest{e.Stdout, e.Stderr} {
		if !d.IsZero() {
			live[d.String()] = true
		}
	}
	for _, o := range e.Outputs {
		if !o.Digest.IsZero() {
			live[o.Digest.String()] = true
		}
	}
	return true
}

func (c *Client) delete(ctx context.Context, k string) error {
	err := c.call(ctx, func(ctx context.Context) error {
		_, err := c.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &c.bucket, Key: &k})
		return err
	})
	if err != nil {
		return fmt.Errorf("remote cache %s: delete %s: %w", c.name, k, err)
	}
	return nil
}

// abortStale aborts multipart uploads under the prefix started before
// cutoff: an interrupted upload leaves its parts behind.
func (c *Client) abortStale(ctx context.Context, cutoff time.Time, dry bool, rep *GCReport) {
	var out *awss3.ListMultipartUploadsOutput
	err := c.call(ctx, func(ctx context.Context) error {
		var err error
		out, err = c.api.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &c.bucket, Prefix: aws.String(c.prefix + "cas/")})
		return err
	})
	if err != nil {
		return // listing uploads is optional for a store
	}
	for _, u := range out.Uploads {
		if !aws.ToTime(u.Initiated).Before(cutoff) {
			continue
		}
		if !dry {
			c.abort(ctx, aws.ToString(u.Key), aws.ToString(u.UploadId))
		}
		rep.UploadsAborted++
		rep.Removed = append(rep.Removed, GCItem{"upload", strings.TrimPrefix(aws.ToString(u.Key), c.prefix+"cas/"), 0, aws.ToTime(u.Initiated)})
	}
}

// Usage is what the bucket holds under the prefix.
type Usage struct {
	Entries    int   `json:"entries"`
	EntryBytes int64 `json:"entry_bytes"`
	Blobs      int   `json:"blobs"`
	BlobBytes  int64 `json:"blob_bytes"`
}

// Usage lists the prefix and adds up what is there.
func (c *Client) Usage(ctx context.Context) (*Usage, error) {
	u := &Usage{}
	for _, kind := range []string{"ac", "cas"} {
		objs, err := c.list(ctx, kind)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if kind == "ac" {
				u.Entries++
				u.EntryBytes += o.size
			} else {
				u.Blobs++
				u.BlobBytes += o.size
			}
		}
	}
	return u, nil
}
