package httpcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/cairn-run/cairn/cache"
)

// OpenBlob starts reading blob d. A miss is an error wrapping
// [cache.ErrNotFound]. The reader fails (never returns io.EOF early) if
// the body is shorter or longer than announced or stalls; it does not
// hash: the caller must, and must discard what does not match. Retries
// happen only before OpenBlob returns.
func (c *Client) OpenBlob(ctx context.Context, d cache.Digest) (io.ReadCloser, error) {
	r := &request{op: "get blob", id: d.Short(), method: http.MethodGet, path: "cas/" + d.String(), max500: -1}
	resp, a, err := c.do(ctx, r)
	if err != nil {
		return nil, c.fail(r, err)
	}
	br := c.newBlobReader(r, resp.Body, a, resp.ContentLength)
	if err := c.checkEncoding(resp); err != nil {
		br.Close()
		return nil, c.fail(r, err)
	}
	return br, nil
}

// HasBlob reports whether the server holds blob d (HEAD: 2xx true, 404
// false).
func (c *Client) HasBlob(ctx context.Context, d cache.Digest) (bool, error) {
	r := &request{op: "head blob", id: d.Short(), method: http.MethodHead, path: "cas/" + d.String(), max500: -1}
	resp, a, err := c.do(ctx, r)
	if errors.Is(err, cache.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, c.fail(r, err)
	}
	resp.Body.Close()
	a.end()
	return true, nil
}

// PutBlob uploads blob d of size bytes, calling open for a fresh reader for
// each attempt. If the reader fails (the local copy is not d), the upload
// is aborted before its last byte and the error returned without retry. A
// 500 answer, bazel-remote's for a body that does not hash to d, is retried
// once. Every reader is closed before PutBlob returns; as with any HTTP
// request body, Close may come while the transport's writer goroutine is
// in a Read (os.File and io.Pipe allow that), which releases a Read stuck
// on a hung disk.
func (c *Client) PutBlob(ctx context.Context, d cache.Digest, size int64, open func() (io.ReadCloser, error)) error {
	r := &request{op: "put blob", id: d.Short(), method: http.MethodPut, path: "cas/" + d.String(), open: open, size: size, max500: 1}
	if c.readOnly {
		return c.fail(r, ErrReadOnly)
	}
	if size < 0 {
		return c.fail(r, fmt.Errorf("negative size %d", size))
	}
	if size == 0 {
		// Send no body, but let the reader check that d is empty content.
		if err := readEmpty(open); err != nil {
			return c.fail(r, err)
		}
		r.open = nil
	}
	return c.put(ctx, r)
}

// PutEntry uploads the stored bytes of the entry for key.
func (c *Client) PutEntry(ctx context.Context, key cache.ActionID, b []byte) error {
	r := &request{op: "put entry", id: key.Short(), method: http.MethodPut, path: "ac/" + key.String(), size: int64(len(b)), max500: -1,
		open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}
	if c.readOnly {
		return c.fail(r, ErrReadOnly)
	}
	if len(b) == 0 {
		r.open = nil
	}
	return c.put(ctx, r)
}

func (c *Client) put(ctx context.Context, r *request) error {
	resp, a, err := c.do(ctx, r)
	if err != nil {
		return c.fail(r, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	a.end()
	c.stats.puts.Add(1)
	return nil
}

// GetEntry returns the stored bytes of the entry for key, refusing more
// than [MaxEntrySize]. A miss is an error wrapping [cache.ErrNotFound].
func (c *Client) GetEntry(ctx context.Context, key cache.ActionID) ([]byte, error) {
	r := &request{op: "get entry", id: key.Short(), method: http.MethodGet, path: "ac/" + key.String(), max500: -1}
	resp, a, err := c.do(ctx, r)
	if err != nil {
		return nil, c.fail(r, err)
	}
	br := c.newBlobReader(r, resp.Body, a, resp.ContentLength)
	defer br.Close()
	if err := c.checkEncoding(resp); err != nil {
		return nil, c.fail(r, err)
	}
	if resp.ContentLength > c.maxEntry {
		return nil, c.fail(r, fmt.Errorf("entry of %d bytes refused: more than the %d bytes an entry may have", resp.ContentLength, c.maxEntry))
	}
	b, err := io.ReadAll(io.LimitReader(br, c.maxEntry+1))
	if err != nil {
		return nil, err // already prefixed by the reader
	}
	if int64(len(b)) > c.maxEntry {
		return nil, c.fail(r, fmt.Errorf("entry refused: more than the %d bytes an entry may have", c.maxEntry))
	}
	return b, nil
}

// checkEncoding refuses a body the server encoded although the request
// asked for identity: its length and bytes are not the blob's.
func (c *Client) checkEncoding(resp *http.Response) error {
	for _, ce := range resp.Header.Values("Content-Encoding") {
		if ce != "" && ce != "identity" {
			return fmt.Errorf("server sent Content-Encoding %q though the request asked for identity; a proxy or server in between is misconfigured", c.sanitize(ce))
		}
	}
	if resp.Uncompressed {
		return fmt.Errorf("the HTTP transport decompressed the body; use a client that does not ask for compression")
	}
	return nil
}

// readEmpty reads open's content, which must be empty, to its end, so a
// verifying reader checks it.
func readEmpty(open func() (io.ReadCloser, error)) error {
	rc, err := open()
	if err != nil {
		return fmt.Errorf("open local copy: %w", err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(rc, 1))
	if err == nil && n > 0 {
		err = fmt.Errorf("local copy is longer than its size 0")
	}
	if err != nil {
		return fmt.Errorf("read local copy: %w", err)
	}
	return nil
}
