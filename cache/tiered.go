package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cairn-run/cairn/internal/failpoint"
)

// This file is the second cache level: how a local miss is filled from the
// remote, and how a local put reaches it. The remote is untrusted: a blob is
// published locally only once its content hashes to its name, and an entry
// only once it decodes, holds the key it was asked for, passes the signing
// policy and has every blob it references. A remote failure of any kind is a
// miss, and a failed upload is a warning: the remote only ever saves work.

// errWrongContent marks remote content that does not hash to its name.
var errWrongContent = errors.New("wrong content")

// RemoteStats counts what the remote level did in this process.
type RemoteStats struct {
	Hits, Misses, Rejected int64 // entries fetched, not there, or refused (bad bytes, bad signature)
	BlobsDown, BlobsUp     int64
	EntriesUp              int64
	UploadErrors           int64
}

type remoteCounters struct {
	hits, misses, rejected, blobsDown, blobsUp, entriesUp, uploadErrors atomic.Int64
	warnOnce                                                            sync.Once
}

func (c *Dir) rc() *remoteCounters { return c.remote }

// RemoteStats returns what the remote level did so far.
func (c *Dir) RemoteStats() RemoteStats {
	r := c.rc()
	return RemoteStats{
		Hits: r.hits.Load(), Misses: r.misses.Load(), Rejected: r.rejected.Load(),
		BlobsDown: r.blobsDown.Load(), BlobsUp: r.blobsUp.Load(),
		EntriesUp: r.entriesUp.Load(), UploadErrors: r.uploadErrors.Load(),
	}
}

// Remote returns the remote level, or nil.
func (c *Dir) Remote() Remote { return c.opts.Remote }

// fetchEntry fills a local miss for key from the remote.
func (c *Dir) fetchEntry(key ActionID) (*Entry, error) {
	ctx := c.fetchContext()
	r := c.opts.Remote
	b, err := r.GetEntry(ctx, key)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			c.rc().misses.Add(1)
		}
		return nil, err
	}
	if len(b) > maxEntrySize {
		return nil, c.rejectRemote("entry", key.String(), fmt.Errorf("%d bytes", len(b)))
	}
	e, err := decodeEntry(b)
	if err == nil && e.Key != key {
		err = fmt.Errorf("holds key %s", e.Key.Short())
	}
	if err == nil {
		err = c.checkTrust(b)
	}
	if err != nil {
		return nil, c.rejectRemote("entry", key.String(), err)
	}
	for _, ref := range entryRefs(e) {
		if c.HasBlob(ref.d) {
			continue
		}
		if err := c.fetchBlob(ctx, ref.d, ref.size); err != nil {
			return nil, err
		}
	}
	if err := c.putEntryBytes(key, b, entryRefs(e)); err != nil {
		return nil, err
	}
	c.rc().hits.Add(1)
	return c.getLocalEntry(key)
}

// maxUnsizedBlob bounds the download of a blob whose size the entry does
// not record (a phase's captured stdout or stderr), so a server that
// streams without end cannot fill the disk.
const maxUnsizedBlob = 4 << 30

// fetchBlob downloads blob d into the local cache, publishing it only if
// its content hashes to d. size is the length the entry records for it, or
// -1; the download is cut one byte past it, so a longer body is rejected
// without being read to its end.
func (c *Dir) fetchBlob(ctx context.Context, d Digest, size int64) error {
	body, err := c.opts.Remote.OpenBlob(ctx, d)
	if err != nil {
		return err
	}
	defer body.Close()
	_ = failpoint.Hit("remote.read")
	limit := int64(maxUnsizedBlob)
	if size >= 0 {
		limit = size
	}
	_, _, err = c.put(io.LimitReader(body, limit+1), -1, d)
	if err != nil {
		if errors.Is(err, errWrongContent) {
			return c.rejectRemote("blob", d.String(), err)
		}
		return err
	}
	c.rc().blobsDown.Add(1)
	return nil
}

// FetchBlob downloads blob d from the remote into the local cache if it is
// not there yet (for cairn cache pull).
func (c *Dir) FetchBlob(d Digest) error {
	if c.HasBlob(d) {
		return nil
	}
	if c.opts.Remote == nil {
		return ErrNotFound
	}
	return c.fetchBlob(c.fetchContext(), d, -1)
}

// rejectRemote counts and reports a bad object from the remote.
func (c *Dir) rejectRemote(kind, id string, cause error) error {
	c.rc().rejected.Add(1)
	if len(id) > 12 {
		id = id[:12]
	}
	err := fmt.Errorf("remote cache %s: %s %s rejected: %w", c.opts.Remote, kind, id, cause)
	c.warn("warning: %v; treated as a miss", err)
	return err
}

// upload sends an entry just stored locally, and the blobs it references
// (first, so the remote never holds an entry whose blobs it lacks), to the
// remote. Failures are counted and reported once; they never fail the put.
func (c *Dir) upload(e *Entry, b []byte) {
	if c.opts.Remote == nil || c.opts.RemoteReadOnly {
		return
	}
	if err := c.Upload(e, b); err != nil {
		rc := c.rc()
		rc.uploadErrors.Add(1)
		if errors.Is(err, ErrRemoteUnavailable) {
			return // the remote has said so once already
		}
		rc.warnOnce.Do(func() {
			c.warn("warning: upload to remote cache %s failed: %v; results stay in the local cache (later upload failures are counted, not shown)", c.opts.Remote, err)
		})
	}
}

// Upload sends entry e, stored as b, and its blobs to the remote: blobs
// the remote does not have, then the entry.
func (c *Dir) Upload(e *Entry, b []byte) error {
	r := c.opts.Remote
	if r == nil {
		return errors.New("no remote cache configured")
	}
	if c.opts.RemoteReadOnly {
		return errors.New("the remote cache is read-only here")
	}
	ctx := context.Background()
	for _, ref := range entryRefs(e) {
		if has, err := r.HasBlob(ctx, ref.d); err == nil && has {
			continue
		}
		size, err := c.blobSize(ref.d)
		if err != nil {
			return err
		}
		d := ref.d
		if err := r.PutBlob(ctx, d, size, func() (io.ReadCloser, error) { return c.OpenBlob(d) }); err != nil {
			return err
		}
		c.rc().blobsUp.Add(1)
	}
	if err := r.PutEntry(ctx, e.Key, b); err != nil {
		return err
	}
	c.rc().entriesUp.Add(1)
	return nil
}

// ReadEntryBytes returns the stored form of the local entry for key, after
// the checks GetEntry makes, for uploading it.
func (c *Dir) ReadEntryBytes(key ActionID) (*Entry, []byte, error) {
	e, err := c.getLocalEntry(key)
	if err != nil {
		return nil, nil, fmt.Errorf("cache get %s: %w", key.Short(), err)
	}
	f, err := openObject(c.entryPath(key))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, _, bad, err := readEntryFile(f, key)
	if err == nil && bad != nil {
		err = fmt.Errorf("%w: %w", ErrCorrupt, bad)
	}
	if err != nil {
		return nil, nil, err
	}
	e2, err := DecodeEntry(b)
	if err != nil || e2.Key != e.Key {
		return nil, nil, fmt.Errorf("cache get %s: entry changed while read", key.Short())
	}
	return e2, b, nil
}

// blobSize returns the uncompressed size of blob d: the file's size if
// stored raw, else found by decoding it.
func (c *Dir) blobSize(d Digest) (int64, error) {
	if p, ok := c.statBlob(d); ok && p == c.blobPath(d, false) {
		if st, err := os.Lstat(p); err == nil {
			return st.Size(), nil
		}
	}
	rc, err := c.OpenBlob(d)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return io.Copy(io.Discard, rc)
}

// OpenBlob returns a reader of blob d's content that fails, instead of
// returning io.EOF, if the content does not hash to d (the bad blob is
// then quarantined).
func (c *Dir) OpenBlob(d Digest) (io.ReadCloser, error) {
	f, compressed, err := c.openBlob(d)
	if err != nil {
		return nil, fmt.Errorf("cache get %s: %w", d.Short(), err)
	}
	pr, pw := io.Pipe()
	go func() {
		defer f.Close()
		bad, err := c.readVerified(pw, f, compressed, d)
		if err == nil && bad != nil {
			err = c.quarantineFile("blob", d.String(), f, bad)
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}
