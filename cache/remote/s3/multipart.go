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
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// putMultipart uploads size bytes from open as parts of PartSize, several
// at once. Each part is read into a pooled buffer while holding a transfer
// slot, so memory is bounded by the slots, not the blob. Each part carries
// its SHA-256; the upload is completed only once the caller's reader has
// reached its end without error (it checks the whole content's digest
// there), and aborted otherwise.
func (c *Client) putMultipart(ctx context.Context, k string, sum [32]byte, size int64, open func() (io.ReadCloser, error)) (err error) {
	orc, err := open()
	if err != nil {
		return &localError{err}
	}
	defer orc.Close()
	// The parts' checksums guard each part; this guards the whole, so the
	// object is completed only if it is the blob its name says, whatever
	// the caller's reader checks.
	whole := sha256.New()
	rc := io.TeeReader(orc, whole)
	var id string
	err = c.call(ctx, func(ctx context.Context) error {
		out, err := c.api.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{
			Bucket: &c.bucket, Key: &k, ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		})
		if err == nil {
			id = aws.ToString(out.UploadId)
		}
		return err
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer func() {
		if err != nil {
			c.abort(ctx, k, id)
		}
	}()

	n := int((size + PartSize - 1) / PartSize)
	parts := make([]types.CompletedPart, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	setErr := func(e error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = e
			cancel(e)
		}
		mu.Unlock()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if err := acquire(ctx); err != nil {
			break
		}
		bp, err := getBuf(ctx)
		if err != nil {
			release()
			break
		}
		buf := (*bp)[:min(PartSize, size-int64(i)*PartSize)]
		if _, rerr := io.ReadFull(rc, buf); rerr != nil {
			putBuf(bp)
			release()
			setErr(&localError{fmt.Errorf("part %d: %w", i+1, rerr)})
			break
		}
		wg.Add(1)
		go func(i int, buf []byte) {
			defer wg.Done()
			defer release()
			defer putBuf(bp)
			if err := c.uploadPart(ctx, k, id, int32(i+1), buf, &parts[i]); err != nil {
				setErr(fmt.Errorf("part %d of %d: %w", i+1, n, err))
			}
		}(i, buf)
	}
	if firstErr == nil && ctx.Err() == nil {
		// The verifying reader checks the digest when it reaches its end.
		var one [1]byte
		if m, rerr := io.ReadFull(rc, one[:]); m > 0 {
			setErr(&localError{fmt.Errorf("local copy is longer than its size %d", size)})
		} else if rerr != io.EOF {
			setErr(&localError{rerr})
		}
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if got := whole.Sum(nil); !bytes.Equal(got, sum[:]) {
		return &localError{fmt.Errorf("local copy hashes to %x, not to its name", got[:6])}
	}
	return c.call(ctx, func(ctx context.Context) error {
		_, err := c.api.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
			Bucket: &c.bucket, Key: &k, UploadId: &id,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
		return err
	})
}

func (c *Client) uploadPart(ctx context.Context, k, id string, num int32, buf []byte, out *types.CompletedPart) error {
	sum := sha256.Sum256(buf)
	b64 := base64.StdEncoding.EncodeToString(sum[:])
	hexSum := hex.EncodeToString(sum[:])
	return c.call(ctx, func(ctx context.Context) error {
		res, err := c.api.UploadPart(ctx, &awss3.UploadPartInput{
			Bucket: &c.bucket, Key: &k, UploadId: &id, PartNumber: &num,
			Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf))),
			ChecksumSHA256: &b64,
		}, withPayloadHash(hexSum))
		if err != nil {
			return err
		}
		*out = types.CompletedPart{ETag: res.ETag, PartNumber: &num, ChecksumSHA256: &b64}
		return nil
	})
}

// abort gives up a multipart upload so its parts stop costing storage; it
// runs even when ctx is done, bounded on its own.
func (c *Client) abort(ctx context.Context, k, id string) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := c.api.AbortMultipartUpload(actx, &awss3.AbortMultipartUploadInput{Bucket: &c.bucket, Key: &k, UploadId: &id})
	_ = err // a leftover upload is removed by cairn cache gc --remote
}

var errClosed = errors.New("read after close")
