package cache

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cairn-run/cairn/cache/zblob"
	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/internal/fsx"
)

// emptyDigest is the digest of no bytes, the only blob that may be stored as
// an empty file.
var emptyDigest = HashBytes(nil)

// sampleSize is how much of a blob is test-compressed, and the size
// below which it is compressed in one call, in memory.
const sampleSize = zblob.SampleSize

var sampleBufs = sync.Pool{New: func() any { b := make([]byte, sampleSize); return &b }}

// PutFile stores the content of the file at path and returns its digest and
// size. The file is read once. If its size changes while it is read, PutFile
// fails rather than store a torn copy. When PutFile returns nil, the blob is
// durable (see FORMAT.md).
func (c *Dir) PutFile(path string) (Digest, int64, error) {
	b, err := c.StageFile(path, nil)
	if err != nil {
		return Digest{}, 0, err
	}
	if err := b.Commit(); err != nil {
		return Digest{}, 0, err
	}
	return b.Digest, b.Size, nil
}

// StageFile reads and hashes the file at path as PutFile does, and keeps
// its content (in memory when small, else in a temp file of the cache)
// for [PendingBlob.Commit] to make durable. A caller that needs only the
// digest to go on (a phase's dependents) need not wait for the fsyncs.
// Every PendingBlob must be committed or discarded. beforeTemp, if not
// nil, is called before a temp file is made (content too large to keep in
// memory), so a caller can bound the temp files in flight.
func (c *Dir) StageFile(path string, beforeTemp func()) (*PendingBlob, error) {
	f, err := fsx.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("cache put %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cache put %s: %w", path, err)
	}
	want := int64(-1)
	if st.Mode().IsRegular() {
		want = st.Size()
	}
	b, err := c.stage(f, want, Digest{}, beforeTemp)
	if err != nil {
		return nil, fmt.Errorf("cache put %s: %w", path, fsx.NoSpace(err, c.root))
	}
	b.what = path
	return b, nil
}

// PendingBlob is content read and hashed, not yet durable in the cache.
type PendingBlob struct {
	Digest Digest
	Size   int64

	c          *Dir
	what       string    // the file it was read from, for messages
	present    bool      // the cache already holds the blob
	data       []byte    // small content, to be written (compressed if so)
	small      bool      // data is content of at most InlineMax bytes, raw, not looked up in cas/ yet
	t          *tempFile // large content, written, not yet committed
	compressed bool
}

// Inline returns the content of a blob small enough to be stored inside
// an entry ([Entry.Inline], at most [InlineMax] bytes). A caller that
// stores it so discards b instead of committing it.
func (b *PendingBlob) Inline() ([]byte, bool) {
	if !b.small {
		return nil, false
	}
	return b.data, true
}

// Commit makes the blob durable in the cache, unless it was there
// already: when it returns nil, the blob may be referenced.
func (b *PendingBlob) Commit() error {
	if err := b.c.commit(b); err != nil {
		if b.what != "" {
			return fmt.Errorf("cache put %s: %w", b.what, fsx.NoSpace(err, b.c.root))
		}
		return fsx.NoSpace(err, b.c.root)
	}
	return nil
}

// Discard drops the staged content.
func (b *PendingBlob) Discard() {
	b.t.abort()
	b.t, b.data, b.small = nil, nil, false
}

// PutReader stores everything read from r until EOF and returns its digest
// and size. When it returns nil, the blob is durable.
func (c *Dir) PutReader(r io.Reader) (Digest, int64, error) {
	d, n, err := c.put(r, -1, Digest{})
	if err != nil {
		return Digest{}, 0, fmt.Errorf("cache put: %w", fsx.NoSpace(err, c.root))
	}
	return d, n, nil
}

// PutBytes stores b and returns its digest. If the blob is already present
// (and, when raw, of the right size) it writes nothing. When it returns nil, the blob is durable.
func (c *Dir) PutBytes(b []byte) (Digest, error) {
	d := HashBytes(b)
	if p, st, ok := c.lstatBlob(d); ok && plausibleBlob(st, p == c.blobPath(d, false), int64(len(b))) {
		touchObject(p) // about to be referenced: keep GC's grace period from ending under us
		return d, nil
	}
	got, _, err := c.put(bytes.NewReader(b), int64(len(b)), Digest{})
	if err != nil {
		return Digest{}, fmt.Errorf("cache put %s: %w", d.Short(), fsx.NoSpace(err, c.root))
	}
	return got, nil
}

// put streams r into a temp file while hashing, compressing if a sample
// says so, and publishes it under its digest. want, if not -1, is the length
// r must have; expect, if not zero, the digest it must have (content from a
// remote): anything else is discarded before it is published.
func (c *Dir) put(r io.Reader, want int64, expect Digest) (Digest, int64, error) {
	b, err := c.stage(r, want, expect, nil)
	if err != nil {
		return Digest{}, 0, err
	}
	if err := c.commit(b); err != nil {
		return Digest{}, 0, err
	}
	return b.Digest, b.Size, nil
}

// stage reads r to its end and hashes it for put. Small content is hashed
// before any file is made, and kept in memory: a blob already present (an
// empty log, a repeated output) costs one lstat, no temp file. Larger
// content is streamed into a temp file while hashing.
func (c *Dir) stage(r io.Reader, want int64, expect Digest, beforeTemp func()) (*PendingBlob, error) {
	bp := sampleBufs.Get().(*[]byte)
	defer sampleBufs.Put(bp)
	m, err := io.ReadFull(r, *bp)
	sample := (*bp)[:m]
	whole := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !whole {
		return nil, err
	}
	if whole {
		d, n := Digest(sha256.Sum256(sample)), int64(m)
		if want >= 0 && n != want {
			return nil, fmt.Errorf("read %d bytes, want %d: file changed while being stored", n, want)
		}
		if !expect.IsZero() && d != expect {
			return nil, fmt.Errorf("content hashes to %s, want %s: %w", d.Short(), expect.Short(), ErrWrongContent)
		}
		b := &PendingBlob{Digest: d, Size: n, c: c}
		if n <= InlineMax {
			// Small enough to go inside the entry (see Inline): look
			// for it in cas/ and compress it only if it is committed.
			b.data, b.small = append([]byte(nil), sample...), true
			return b, nil
		}
		if p, st, ok := c.lstatBlob(d); ok && plausibleBlob(st, p == c.blobPath(d, false), n) {
			touchObject(p)
			b.present = true
			return b, nil
		}
		if z, compressed := zblob.CompressSample(sample); compressed {
			b.data, b.compressed = z, true
		} else {
			b.data = append([]byte(nil), sample...)
		}
		return b, nil
	}
	if beforeTemp != nil {
		beforeTemp()
	}
	t, err := c.newTemp("blob")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			t.abort()
		}
	}()
	_, compressed := zblob.CompressSample(sample)
	var d Digest
	var n int64
	if compressed {
		enc, err := zblob.NewStreamEncoder(t)
		if err != nil {
			return nil, err
		}
		d, n, err = copyHashed(enc, io.MultiReader(bytes.NewReader(sample), r))
		if cerr := enc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	} else {
		d, n, err = copyHashed(t, io.MultiReader(bytes.NewReader(sample), r))
		if err != nil {
			return nil, err
		}
	}
	if want >= 0 && n != want {
		return nil, fmt.Errorf("read %d bytes, want %d: file changed while being stored", n, want)
	}
	if !expect.IsZero() && d != expect {
		return nil, fmt.Errorf("content hashes to %s, want %s: %w", d.Short(), expect.Short(), ErrWrongContent)
	}
	ok = true
	return &PendingBlob{Digest: d, Size: n, c: c, t: t, compressed: compressed}, nil
}

// commit writes staged content out if it is not yet in a temp file and
// publishes it (see publishBlob). The temp file is removed in any case.
func (c *Dir) commit(b *PendingBlob) error {
	t, err := c.writeOut(b, true)
	if t == nil || err != nil {
		return err
	}
	defer t.abort()
	if err := c.publishBlob(t, b.Digest, b.Size, b.compressed, true); err != nil {
		return err
	}
	b.present = true
	return nil
}

// writeOut puts staged content in a committed temp file, synced if sync,
// and returns it; none (nil) if the cache holds the blob already.
func (c *Dir) writeOut(b *PendingBlob, sync bool) (*tempFile, error) {
	if b.small {
		// Staged for inlining, stored in cas/ after all: now look for
		// it there, and decide whether to compress it.
		b.small = false
		d, n := b.Digest, b.Size
		if p, st, ok := c.lstatBlob(d); ok && plausibleBlob(st, p == c.blobPath(d, false), n) {
			touchObject(p)
			b.present, b.data = true, nil
			return nil, nil
		}
		if z, compressed := zblob.CompressSample(b.data); compressed {
			b.data, b.compressed = z, true
		}
	}
	if b.present {
		return nil, nil
	}
	t := b.t
	if t == nil {
		var err error
		if t, err = c.newTemp("blob"); err != nil {
			return nil, err
		}
		if _, err := t.Write(b.data); err != nil {
			t.abort()
			return nil, err
		}
	}
	b.t, b.data = nil, nil
	d, n := b.Digest, b.Size
	// A blob already present needs no fsync of a copy that will be thrown
	// away: content-addressed objects are write-once.
	if p, st, ok := c.lstatBlob(d); ok && plausibleBlob(st, p == c.blobPath(d, false), n) {
		touchObject(p)
		b.present = true
		t.abort()
		return nil, nil
	}
	if err := t.commit(sync); err != nil {
		t.abort()
		return nil, err
	}
	return t, nil
}

// batchMin is the number of blobs from which CommitAll makes them
// durable together.
const batchMin = 16

// CommitAll commits every staged blob, as Commit does each, and discards
// the rest after a failure. Many blobs of one cache are made durable
// together (FORMAT.md, "Many blobs at once"): all written, one syncfs,
// all linked, one more syncfs, instead of two fsyncs per blob.
func CommitAll(pend []*PendingBlob) error {
	done, err := commitBatch(pend)
	for i := 0; !done && i < len(pend) && err == nil; i++ {
		if err = pend[i].Commit(); err != nil {
			pend = pend[i+1:]
		}
	}
	if err != nil {
		for _, b := range pend {
			b.Discard()
		}
	}
	return err
}

// commitBatch is CommitAll's batch; done is false, with nothing done, if
// the blobs are too few, of several caches, or the platform cannot sync
// a filesystem.
func commitBatch(pend []*PendingBlob) (done bool, err error) {
	if len(pend) < batchMin || slices.ContainsFunc(pend, func(b *PendingBlob) bool { return b.c != pend[0].c }) {
		return false, nil
	}
	c := pend[0].c
	s, err := fsx.Get().OpenFS(c.root) // before any write: its Sync reports theirs
	if err != nil {
		return false, nil
	}
	defer s.Close()
	temps := make([]*tempFile, len(pend))
	defer func() {
		for _, t := range temps {
			t.abort()
		}
	}()
	for i, b := range pend {
		if temps[i], err = c.writeOut(b, false); err != nil {
			return true, fmt.Errorf("cache put %s: %w", b.what, fsx.NoSpace(err, c.root))
		}
	}
	sync := func() error {
		if err := failpoint.Hit("blob.syncfs"); err != nil {
			return err
		}
		return fsx.NoSpace(s.Sync(), c.root)
	}
	if err := sync(); err != nil {
		return true, fmt.Errorf("cache put: %w", err)
	}
	// Each content is durable: its name may now be published.
	for i, b := range pend {
		if temps[i] != nil {
			if err := c.publishBlob(temps[i], b.Digest, b.Size, b.compressed, false); err != nil {
				return true, fmt.Errorf("cache put %s: %w", b.what, fsx.NoSpace(err, c.root))
			}
		}
	}
	if err := sync(); err != nil {
		return true, fmt.Errorf("cache put: %w", err)
	}
	return true, nil
}

// publishBlob links the committed temp file into cas/ as blob d and syncs
// the shard directory if sync. An existing copy (raw or compressed) is kept unless
// it is visibly broken, in which case it is quarantined and replaced.
func (c *Dir) publishBlob(t *tempFile, d Digest, size int64, compressed, sync bool) error {
	dst := c.blobPath(d, compressed)
	for try := 0; try < 3; try++ {
		// A batch (!sync) has just looked for the blob: it links first.
		if p, st, ok := c.lookBlob(d, sync || try > 0); ok {
			if plausibleBlob(st, p == c.blobPath(d, false), size) {
				touchObject(p)
				return nil // keep the existing copy: first writer wins
			}
			c.Quarantine("blob", d.String(), p, st, fmt.Errorf("found %v of %d bytes", st.Mode().Type(), st.Size()))
			continue
		}
		existed, err := publish(t, dst)
		if err != nil {
			return err
		}
		if !existed && sync {
			return t.syncDir(filepath.Dir(dst))
		}
		if !existed {
			return nil
		}
		// Lost a race; check what won on the next turn.
	}
	return errors.New("a damaged copy is in the way and could not be moved")
}

// lookBlob is lstatBlob if look, else nothing found.
func (c *Dir) lookBlob(d Digest, look bool) (string, fs.FileInfo, bool) {
	if !look {
		return "", nil, false
	}
	return c.lstatBlob(d)
}

// lstatBlob returns whatever is at blob d's raw path, else at its
// compressed path, whether or not it looks valid.
func (c *Dir) lstatBlob(d Digest) (string, fs.FileInfo, bool) {
	for _, compressed := range []bool{false, true} {
		p := c.blobPath(d, compressed)
		if st, err := os.Lstat(p); err == nil {
			return p, st, true
		}
	}
	return "", nil, false
}

// plausibleBlob is the cheap check made before trusting an existing blob:
// a regular file, of the content's size if raw, not empty if compressed.
// Compressed blobs are fully checked on read.
func plausibleBlob(st fs.FileInfo, raw bool, size int64) bool {
	if !st.Mode().IsRegular() {
		return false
	}
	if raw {
		return st.Size() == size
	}
	return st.Size() > 0
}

// HasBlob reports whether blob d is present. It only stats files; the blob
// is verified when it is read. An empty raw file counts as absent unless d
// is the digest of empty content, since that is what a crash on a
// filesystem without honest fsync leaves.
func (c *Dir) HasBlob(d Digest) bool {
	_, ok := c.statBlob(d)
	return ok
}

// statBlob returns the path of blob d if it is present, preferring raw.
func (c *Dir) statBlob(d Digest) (string, bool) {
	for _, compressed := range []bool{false, true} {
		p := c.blobPath(d, compressed)
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if st.Size() == 0 && (compressed || d != emptyDigest) {
			continue
		}
		return p, true
	}
	return "", false
}

// openBlob opens blob d, raw if present, else compressed. Something other
// than a regular file at either path is quarantined and reported as a
// *CorruptError.
func (c *Dir) openBlob(d Digest) (f *os.File, compressed bool, err error) {
	for _, compressed := range []bool{false, true} {
		p := c.blobPath(d, compressed)
		f, err := OpenObject(p)
		if err == nil {
			return f, compressed, nil
		}
		if Unusable(err) {
			return nil, false, c.quarantinePath("blob", d.String(), p, err)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, false, err
		}
	}
	return nil, false, ErrNotFound
}

// ReadEntryBlob returns the content of blob d, which entry e references:
// from e itself if it holds d inline, else from cas/ as [Dir.ReadBlob]
// does. Either way the content is checked against d; inline content that
// fails is an error wrapping ErrCorrupt (e was not read from the cache, or
// was changed in memory).
func (c *Dir) ReadEntryBlob(e *Entry, d Digest) ([]byte, error) {
	if b, ok := e.InlineData(d); ok {
		if got := HashBytes(b); got != d {
			return nil, fmt.Errorf("inline blob %s of entry %s: %w: its content hashes to %s", d.Short(), e.Key.Short(), ErrCorrupt, got.Short())
		}
		return b, nil
	}
	return c.ReadBlob(d)
}

// CopyEntryBlob writes the content of blob d, which entry e references, to
// w, as [Dir.ReadEntryBlob] returns it but without holding it in memory:
// a blob in cas/ is read twice, once to verify it, then to copy it, so
// nothing reaches w unless it verified. The same errors as ReadEntryBlob
// (ErrNotFound, *CorruptError) mean nothing was written; any other error
// may come after a part of the content was (w failed, or the blob changed
// between the reads, wrapping ErrCorrupt).
func (c *Dir) CopyEntryBlob(w io.Writer, e *Entry, d Digest) error {
	if b, ok := e.InlineData(d); ok {
		if got := HashBytes(b); got != d {
			return fmt.Errorf("inline blob %s of entry %s: %w: its content hashes to %s", d.Short(), e.Key.Short(), ErrCorrupt, got.Short())
		}
		_, err := w.Write(b)
		return err
	}
	for try := 0; ; try++ {
		f, compressed, err := c.openBlob(d)
		if err != nil {
			return fmt.Errorf("cache get %s: %w", d.Short(), err)
		}
		bad, err := c.ReadVerified(io.Discard, f, compressed, d)
		if err == nil && bad != nil && try == 0 {
			f.Close()
			continue
		}
		if err == nil && bad != nil {
			err = c.QuarantineFile("blob", d.String(), f, bad)
		}
		if err == nil {
			if _, err = f.Seek(0, io.SeekStart); err == nil {
				if bad, err = c.ReadVerified(w, f, compressed, d); err == nil && bad != nil {
					err = fmt.Errorf("%w: changed while being copied: %v", ErrCorrupt, bad)
				}
			}
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("cache get %s: %w", d.Short(), err)
		}
		return nil
	}
}

// ReadBlob returns the content of blob d, verified against d. A missing blob
// is ErrNotFound. A blob whose content does not hash to d, or that does not
// decode, is read a second time; if it is still bad it is moved to
// quarantine/ and ReadBlob returns a *CorruptError.
func (c *Dir) ReadBlob(d Digest) ([]byte, error) {
	for try := 0; ; try++ {
		f, compressed, err := c.openBlob(d)
		if err != nil {
			return nil, fmt.Errorf("cache get %s: %w", d.Short(), err)
		}
		var buf bytes.Buffer
		if !compressed {
			if st, err := f.Stat(); err == nil {
				buf.Grow(int(st.Size()))
			}
		}
		bad, err := c.ReadVerified(&buf, f, compressed, d)
		if err == nil && bad != nil && try == 0 {
			f.Close()
			continue
		}
		if err == nil && bad != nil {
			err = c.QuarantineFile("blob", d.String(), f, bad)
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("cache get %s: %w", d.Short(), err)
		}
		return buf.Bytes(), nil
	}
}

// readVerified copies blob d from f (decoding it if compressed) to w while
// hashing. It separates two kinds of failure: err is an I/O error (reading
// f or writing w) and says nothing about the blob; bad says the blob itself
// is wrong (undecodable, or the wrong digest).
func (c *Dir) ReadVerified(w io.Writer, f *os.File, compressed bool, d Digest) (bad, err error) {
	src := &recordingReader{r: f}
	var r io.Reader = src
	if compressed {
		dec, err := zblob.NewDecoder(src)
		if err != nil {
			return nil, err
		}
		defer dec.Release()
		r = dec
	}
	rw := &recordingWriter{w: w}
	got, _, cerr := copyHashed(rw, r)
	switch {
	case src.err != nil:
		return nil, src.err
	case rw.err != nil:
		return nil, rw.err
	case cerr != nil:
		return fmt.Errorf("decode: %w", cerr), nil
	case got != d:
		return fmt.Errorf("content hashes to %s", got.Short()), nil
	}
	return nil, nil
}

// recordingReader remembers the first read error other than EOF, so a
// decoder failure can be told apart from an I/O failure underneath it.
type recordingReader struct {
	r   io.Reader
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// recordingWriter remembers the first write error.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}
