package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/failpoint"
)

// Tiered is a local [cache.Dir] with a [Backend] behind it: a local miss
// is filled from the backend, and every entry stored locally is uploaded
// to it (blobs first), unless read-only. Every other method is the local
// Dir's. Without a backend it is the local Dir alone.
//
// The backend is untrusted: a blob is published locally only once its
// content hashes to its name, and an entry only once it decodes, holds
// the key it was asked for, passes the signing policy and has every blob
// it references. A backend failure of any kind is a miss, and a failed
// upload is a warning: the remote only ever saves work.
type Tiered struct {
	*cache.Dir
	backend  Backend
	readOnly bool
	warn     func(string)
	counts   counters
	// fetchCtx, if set, ends downloads once it is done (see
	// SetRemoteContext).
	fetchCtx atomic.Pointer[context.Context]
}

// NewTiered puts backend (nil: none) behind local. readOnly: nothing is
// uploaded. warn (nil: discard) receives one-line warnings.
func NewTiered(local *cache.Dir, backend Backend, readOnly bool, warn func(string)) *Tiered {
	if warn == nil {
		warn = func(string) {}
	}
	return &Tiered{Dir: local, backend: backend, readOnly: readOnly, warn: warn}
}

// Stats counts what the remote level did in this process.
type Stats struct {
	Hits, Misses, Rejected int64 // entries fetched, not there, or refused (bad bytes, bad signature)
	BlobsDown, BlobsUp     int64
	EntriesUp              int64
	UploadErrors           int64
}

type counters struct {
	hits, misses, rejected, blobsDown, blobsUp, entriesUp, uploadErrors atomic.Int64
	warnOnce                                                            sync.Once
}

// RemoteStats returns what the remote level did so far.
func (t *Tiered) RemoteStats() Stats {
	r := &t.counts
	return Stats{
		Hits: r.hits.Load(), Misses: r.misses.Load(), Rejected: r.rejected.Load(),
		BlobsDown: r.blobsDown.Load(), BlobsUp: r.blobsUp.Load(),
		EntriesUp: r.entriesUp.Load(), UploadErrors: r.uploadErrors.Load(),
	}
}

// Remote returns the backend, or nil.
func (t *Tiered) Remote() Backend { return t.backend }

// SetRemoteContext makes downloads from the backend (an entry and its
// blobs filling a local miss) give up once ctx is done: the lookup is then
// a miss. An interrupted run sets it so that a slow remote body does not
// hold it up.
func (t *Tiered) SetRemoteContext(ctx context.Context) {
	t.fetchCtx.Store(&ctx)
}

// ClearRemoteContext restores the default: downloads are never cancelled.
func (t *Tiered) ClearRemoteContext() {
	t.fetchCtx.Store(nil)
}

// fetchContext is the context downloads from the backend run under.
func (t *Tiered) fetchContext() context.Context {
	if p := t.fetchCtx.Load(); p != nil {
		return *p
	}
	return context.Background()
}

// GetEntry is [cache.Dir.GetEntry]; on a local miss it asks the backend,
// if there is one: the entry and the blobs it references are verified,
// stored locally, and returned. A backend failure of any kind is a miss.
func (t *Tiered) GetEntry(key cache.ActionID) (*cache.Entry, error) {
	e, err := t.Dir.GetEntry(key)
	return t.orFetch(key, e, err)
}

// GetEntryLean is [cache.Dir.GetEntryLean], filling a local miss as
// GetEntry does.
func (t *Tiered) GetEntryLean(key cache.ActionID) (*cache.Entry, error) {
	e, err := t.Dir.GetEntryLean(key)
	return t.orFetch(key, e, err)
}

// GetEntryHead is [cache.Dir.GetEntryHead], filling a local miss as
// GetEntry does.
func (t *Tiered) GetEntryHead(key cache.ActionID) (*cache.Entry, error) {
	e, err := t.Dir.GetEntryHead(key)
	return t.orFetch(key, e, err)
}

// orFetch returns e, or on a local miss (err) the entry from the backend
// if it has a good one.
func (t *Tiered) orFetch(key cache.ActionID, e *cache.Entry, err error) (*cache.Entry, error) {
	if err != nil && t.backend != nil && errors.Is(err, cache.ErrNotFound) {
		if re, rerr := t.fetchEntry(key); rerr == nil {
			return re, nil
		}
	}
	return e, err
}

// PutEntry is [cache.Dir.PutEntry], then uploads the entry.
func (t *Tiered) PutEntry(e *cache.Entry) error { return t.store(e, false) }

// ReplaceEntry is [cache.Dir.ReplaceEntry], then uploads the entry.
func (t *Tiered) ReplaceEntry(e *cache.Entry) error { return t.store(e, true) }

func (t *Tiered) store(e *cache.Entry, replace bool) error {
	b, err := t.Dir.StoreEntry(e, replace)
	if err != nil {
		return err
	}
	t.upload(e, b)
	return nil
}

// fetchEntry fills a local miss for key from the backend.
func (t *Tiered) fetchEntry(key cache.ActionID) (*cache.Entry, error) {
	ctx := t.fetchContext()
	b, err := t.backend.GetEntry(ctx, key)
	if err != nil {
		if errors.Is(err, cache.ErrNotFound) {
			t.counts.misses.Add(1)
		}
		return nil, err
	}
	e, err := t.Dir.CheckEntry(key, b)
	if err != nil {
		return nil, t.reject("entry", key.String(), err)
	}
	err = eachBlob(ctx, e.Blobs(), func(ctx context.Context, ref cache.BlobRef) error {
		if t.HasBlob(ref.Digest) {
			return nil
		}
		return t.fetchBlob(ctx, ref.Digest, ref.Size)
	})
	if err != nil {
		return nil, err
	}
	if err := t.Dir.PutEntryBytes(e, b); err != nil {
		return nil, err
	}
	t.counts.hits.Add(1)
	return t.Dir.GetLocalEntry(key)
}

// maxUnsizedBlob bounds the download of a blob whose size the entry does
// not record (a phase's captured stdout or stderr), so a server that
// streams without end cannot fill the disk.
const maxUnsizedBlob = 4 << 30

// fetchBlob downloads blob d into the local cache, publishing it only if
// its content hashes to d. size is the length the entry records for it, or
// -1; the download is cut one byte past it, so a longer body is rejected
// without being read to its end.
func (t *Tiered) fetchBlob(ctx context.Context, d cache.Digest, size int64) error {
	body, err := t.backend.OpenBlob(ctx, d)
	if err != nil {
		return err
	}
	defer body.Close()
	_ = failpoint.Hit("remote.read")
	limit := int64(maxUnsizedBlob)
	if size >= 0 {
		limit = size
	}
	if err := t.Dir.PutVerified(io.LimitReader(body, limit+1), d); err != nil {
		if errors.Is(err, cache.ErrWrongContent) {
			return t.reject("blob", d.String(), err)
		}
		return err
	}
	t.counts.blobsDown.Add(1)
	return nil
}

// FetchBlob downloads blob d from the backend into the local cache if it
// is not there yet (for cairn cache pull, and verify's repair).
func (t *Tiered) FetchBlob(d cache.Digest) error {
	if t.HasBlob(d) {
		return nil
	}
	if t.backend == nil {
		return cache.ErrNotFound
	}
	return t.fetchBlob(t.fetchContext(), d, -1)
}

// reject counts and reports a bad object from the backend.
func (t *Tiered) reject(kind, id string, cause error) error {
	t.counts.rejected.Add(1)
	if len(id) > 12 {
		id = id[:12]
	}
	err := fmt.Errorf("remote cache %s: %s %s rejected: %w", t.backend, kind, id, cause)
	t.warn(fmt.Sprintf("warning: %v; treated as a miss", err))
	return err
}

// upload sends an entry just stored locally, and the blobs it references
// (first, so the backend never holds an entry whose blobs it lacks), to
// the backend. Failures are counted and reported once; they never fail
// the put.
func (t *Tiered) upload(e *cache.Entry, b []byte) {
	if t.backend == nil || t.readOnly {
		return
	}
	if err := t.Upload(e, b); err != nil {
		t.counts.uploadErrors.Add(1)
		if errors.Is(err, ErrUnavailable) {
			return // the backend has said so once already
		}
		t.counts.warnOnce.Do(func() {
			t.warn(fmt.Sprintf("warning: upload to remote cache %s failed: %v; results stay in the local cache (later upload failures are counted, not shown)", t.backend, err))
		})
	}
}

// Upload sends entry e, stored as b, and its blobs to the backend: blobs
// the backend does not have, then the entry.
func (t *Tiered) Upload(e *cache.Entry, b []byte) error {
	r := t.backend
	if r == nil {
		return errors.New("no remote cache configured")
	}
	if t.readOnly {
		return errors.New("the remote cache is read-only here")
	}
	ctx := context.Background()
	err := eachBlob(ctx, e.Blobs(), func(ctx context.Context, ref cache.BlobRef) error {
		if has, err := r.HasBlob(ctx, ref.Digest); err == nil && has {
			return nil
		}
		size, err := t.BlobSize(ref.Digest)
		if err != nil {
			return err
		}
		d := ref.Digest
		if err := r.PutBlob(ctx, d, size, func() (io.ReadCloser, error) { return t.OpenBlob(d) }); err != nil {
			return err
		}
		t.counts.blobsUp.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.PutEntry(ctx, e.Key, b); err != nil {
		return err
	}
	t.counts.entriesUp.Add(1)
	return nil
}

// blobWorkers is how many blobs of one entry move at once: a phase with
// many small outputs would otherwise pay one round trip after another.
// Backends bound their own transfers in flight across entries.
const blobWorkers = 8

// eachBlob calls fn for every ref, blobWorkers at a time; the first error
// stops the rest and is returned.
func eachBlob(ctx context.Context, refs []cache.BlobRef, fn func(context.Context, cache.BlobRef) error) error {
	if len(refs) <= 1 {
		for _, ref := range refs {
			if err := fn(ctx, ref); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  atomic.Int64
	)
	for range min(blobWorkers, len(refs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(refs) || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, refs[i]); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
