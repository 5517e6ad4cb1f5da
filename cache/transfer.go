package cache

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// This file is what a second cache level (package remote) needs of a
// Dir: the stored form of entries to upload, and the checks that make
// content from elsewhere safe to publish. The content is untrusted: a blob
// is published only once it hashes to its name, and an entry only once it
// decodes, holds the key it was asked for, passes the signing policy and
// has every blob it references.

// ErrWrongContent marks content that does not hash to the digest it was
// offered under (see [Dir.PutVerified]).
var ErrWrongContent = errors.New("wrong content")

// BlobRef is a blob an entry references in cas/: what it is for messages
// (stdout, an output's path), its digest, and the size the entry records
// for it, or -1 where it records none (a log).
type BlobRef struct {
	What   string
	Digest Digest
	Size   int64
}

// Blobs lists the blobs in cas/ that e references, each once: not those it
// holds inline, nor its temporary outputs, which are stored nowhere.
func (e *Entry) Blobs() []BlobRef {
	refs := entryRefs(e)
	out := make([]BlobRef, len(refs))
	for i, r := range refs {
		out[i] = BlobRef{r.what, r.d, r.size}
	}
	return out
}

// PutVerified publishes the content of r as blob d if it hashes to d; else
// it publishes nothing and returns an error wrapping [ErrWrongContent].
func (c *Dir) PutVerified(r io.Reader, d Digest) error {
	_, _, err := c.put(r, -1, d)
	return err
}

// CheckEntry decodes b, the stored form of the entry for key received from
// elsewhere, and checks it as a read of the local entry would: its size,
// its form, that it holds key, and the signing policy.
func (c *Dir) CheckEntry(key ActionID, b []byte) (*Entry, error) {
	if len(b) > maxEntrySize {
		return nil, fmt.Errorf("%d bytes", len(b))
	}
	e, err := ParseEntry(b)
	if err == nil && e.Key != key {
		err = fmt.Errorf("holds key %s", e.Key.Short())
	}
	if err == nil {
		err = c.checkTrust(b, e)
	}
	if err != nil {
		return nil, err
	}
	c.nameSigner(e)
	return e, nil
}

// PutEntryBytes publishes b, the stored form of e as [Dir.CheckEntry]
// accepted it, once every blob e references is in the cache.
func (c *Dir) PutEntryBytes(e *Entry, b []byte) error {
	return c.putEntryBytes(e.Key, b, entryRefs(e))
}

// ReadEntryBytes returns the stored form of the local entry for key, after
// the checks GetEntry makes, for uploading it.
func (c *Dir) ReadEntryBytes(key ActionID) (*Entry, []byte, error) {
	e, err := c.getLocalEntry(key)
	if err != nil {
		return nil, nil, fmt.Errorf("cache get %s: %w", key.Short(), err)
	}
	f, err := OpenObject(c.entryPath(key))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, _, bad, err := ReadEntryFile(f, key)
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

// BlobSize returns the uncompressed size of blob d: the file's size if
// stored raw, else found by decoding it.
func (c *Dir) BlobSize(d Digest) (int64, error) {
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
		bad, err := c.ReadVerified(pw, f, compressed, d)
		if err == nil && bad != nil {
			err = c.QuarantineFile("blob", d.String(), f, bad)
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}
