package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/cairn-run/cairn/cache"
)

// HasBlob reports whether the bucket holds blob d (HEAD).
func (c *Client) HasBlob(ctx context.Context, d cache.Digest) (bool, error) {
	if err := c.ready(); err != nil {
		return false, c.fail("head blob", d.Short(), err)
	}
	key := c.key("cas", d.String())
	err := c.call(ctx, func(ctx context.Context) error {
		_, err := c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &c.bucket, Key: &key})
		return err
	})
	if errors.Is(err, cache.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, c.fail("head blob", d.Short(), err)
	}
	return true, nil
}

// GetEntry returns the stored bytes of the entry for key, refusing more
// than MaxEntrySize. A miss wraps [cache.ErrNotFound]. A hit on an entry
// whose LastModified is over a day old renews it (see package doc).
func (c *Client) GetEntry(ctx context.Context, key cache.ActionID) ([]byte, error) {
	if err := c.ready(); err != nil {
		return nil, c.fail("get entry", key.Short(), err)
	}
	k := c.key("ac", key.String())
	if err := acquire(ctx); err != nil {
		return nil, c.fail("get entry", key.Short(), err)
	}
	defer release()
	var (
		b   []byte
		mod time.Time
	)
	err := c.call(ctx, func(ctx context.Context) error {
		out, err := c.api.GetObject(ctx, &awss3.GetObjectInput{Bucket: &c.bucket, Key: &k})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		if n := aws.ToInt64(out.ContentLength); n > MaxEntrySize {
			return &localError{fmt.Errorf("entry of %d bytes refused: more than the %d bytes an entry may have", n, MaxEntrySize)}
		}
		b, err = readBody(out.Body, aws.ToInt64(out.ContentLength), MaxEntrySize)
		mod = lastUse(out.LastModified, out.Metadata)
		return err
	})
	if err != nil {
		return nil, c.fail("get entry", key.Short(), err)
	}
	if !c.readOnly && !mod.IsZero() && c.now().Sub(mod) > touchAfter {
		c.touch(ctx, k)
	}
	return b, nil
}

// readBody reads a whole body of the announced length (-1 or 0 if not
// announced), failing on a short or overlong one.
func readBody(r io.Reader, want, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read body after %d bytes: %w", len(b), err)
	}
	if int64(len(b)) > limit {
		return nil, &localError{fmt.Errorf("body longer than %d bytes refused", limit)}
	}
	if want > 0 && int64(len(b)) != want {
		return nil, fmt.Errorf("body of %d bytes, announced %d: %w", len(b), want, io.ErrUnexpectedEOF)
	}
	return b, nil
}

// useKey is the user metadata (x-amz-meta-cairn-used) holding the time of
// an entry's last recorded use.
const useKey = "cairn-used"

// lastUse is when an object was last written or recorded as used.
func lastUse(mod *time.Time, meta map[string]string) time.Time {
	t := aws.ToTime(mod)
	if u, err := time.Parse(time.RFC3339, meta[useKey]); err == nil && u.After(t) {
		t = u
	}
	return t
}

// touch records a use of object k: copying it onto itself with new
// metadata (the bytes stay) sets its use time, and on most stores renews
// its LastModified too. A failure only makes the entry look older; it is
// not reported.
func (c *Client) touch(ctx context.Context, k string) {
	src := url.PathEscape(c.bucket) + "/" + (&url.URL{Path: k}).EscapedPath()
	_ = c.call(ctx, func(ctx context.Context) error {
		_, err := c.api.CopyObject(ctx, &awss3.CopyObjectInput{
			Bucket: &c.bucket, Key: &k, CopySource: &src,
			MetadataDirective: types.MetadataDirectiveReplace,
			Metadata:          map[string]string{useKey: c.now().UTC().Format(time.RFC3339)},
		})
		return err
	})
}

// PutEntry uploads the stored bytes of the entry for key, unless the
// bucket holds one already (write-once).
func (c *Client) PutEntry(ctx context.Context, key cache.ActionID, b []byte) error {
	if c.readOnly {
		return c.fail("put entry", key.Short(), ErrReadOnly)
	}
	if err := c.ready(); err != nil {
		return c.fail("put entry", key.Short(), err)
	}
	sum := sha256.Sum256(b)
	if err := acquire(ctx); err != nil {
		return c.fail("put entry", key.Short(), err)
	}
	defer release()
	err := c.putObject(ctx, c.key("ac", key.String()), sum, int64(len(b)), func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
	if err != nil {
		return c.fail("put entry", key.Short(), err)
	}
	return nil
}

// PutBlob uploads blob d of size bytes: one streamed PUT, or parts in
// parallel for a large one. open returns a fresh reader of the content;
// it fails at its end if the content is not d, and then nothing is stored.
func (c *Client) PutBlob(ctx context.Context, d cache.Digest, size int64, open func() (io.ReadCloser, error)) error {
	if c.readOnly {
		return c.fail("put blob", d.Short(), ErrReadOnly)
	}
	if size < 0 {
		return c.fail("put blob", d.Short(), fmt.Errorf("negative size %d", size))
	}
	if err := c.ready(); err != nil {
		return c.fail("put blob", d.Short(), err)
	}
	sum := [32]byte(d)
	k := c.key("cas", d.String())
	var err error
	if size > multipartAbove {
		err = c.putMultipart(ctx, k, sum, size, open)
	} else if err = acquire(ctx); err == nil {
		err = c.putObject(ctx, k, sum, size, open)
		release()
	}
	if err != nil {
		return c.fail("put blob", d.Short(), err)
	}
	return nil
}

// putObject is one PUT of size bytes whose SHA-256 is sum, signed with
// that hash and carrying it as x-amz-checksum-sha256: the store refuses a
// body that does not match. If-None-Match: * keeps an object that is there.
func (c *Client) putObject(ctx context.Context, k string, sum [32]byte, size int64, open func() (io.ReadCloser, error)) error {
	b64 := base64.StdEncoding.EncodeToString(sum[:])
	return c.call(ctx, func(ctx context.Context) error {
		rc, err := open()
		if err != nil {
			return &localError{err}
		}
		body := &localReader{r: rc}
		defer rc.Close()
		in := &awss3.PutObjectInput{
			Bucket: &c.bucket, Key: &k, Body: body, ContentLength: aws.Int64(size),
			ChecksumSHA256: &b64,
		}
		if !c.condOff.Load() {
			in.IfNoneMatch = aws.String("*")
		}
		_, err = c.api.PutObject(ctx, in, withPayloadHash(hex.EncodeToString(sum[:])))
		if body.err != nil {
			return &localError{body.err}
		}
		switch code := status(err); {
		case code == http.StatusPreconditionFailed || code == http.StatusConflict:
			return nil // there already (or being written by another writer)
		case code == http.StatusNotImplemented && in.IfNoneMatch != nil:
			c.condOff.Store(true) // the store does not do conditional writes
			return fmt.Errorf("store refused If-None-Match: %w", err)
		}
		return err
	})
}

// localReader records a failure of the caller's reader, so that it is
// told apart from the store's and not retried.
type localReader struct {
	r   io.Reader
	n   int64
	err error
}

func (l *localReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if err != nil && err != io.EOF {
		l.err = err
	}
	return n, err
}

// payloadHash sets the SigV4 payload hash from what the caller knows, so
// the SDK neither reads the body twice nor sends it unsigned.
type payloadHash string

func (h payloadHash) ID() string { return "cairnPayloadHash" }

func (h payloadHash) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	return next.HandleFinalize(v4.SetPayloadHash(ctx, string(h)), in)
}

func withPayloadHash(hexSum string) func(*awss3.Options) {
	return func(o *awss3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(payloadHash(hexSum), middleware.Before)
		})
	}
}

// fail prefixes err with the client and operation.
func (c *Client) fail(op, id string, err error) error {
	return fmt.Errorf("remote cache %s: %s %s: %w", c.name, op, id, err)
}
