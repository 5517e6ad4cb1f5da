package s3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-run/cairn/cache"
)

// OpenBlob starts reading blob d. The first PartSize bytes are one ranged
// GET streamed to the caller; the rest, if any, is fetched as ranged GETs
// of PartSize a few parts ahead, in parallel, each holding a transfer slot
// and a pooled buffer until the reader is done with it. The reader fails
// (never returns io.EOF early) if the content is shorter or longer than the
// object's size. It does not hash: the caller must.
func (c *Client) OpenBlob(ctx context.Context, d cache.Digest) (io.ReadCloser, error) {
	if err := c.ready(); err != nil {
		return nil, c.fail("get blob", d.Short(), err)
	}
	k := c.key("cas", d.String())
	if err := acquire(ctx); err != nil {
		return nil, c.fail("get blob", d.Short(), err)
	}
	var out *awss3.GetObjectOutput
	ranged := true
	err := c.call(ctx, func(ctx context.Context) error {
		in := &awss3.GetObjectInput{Bucket: &c.bucket, Key: &k}
		if ranged {
			in.Range = aws.String(fmt.Sprintf("bytes=0-%d", PartSize-1))
		}
		var err error
		out, err = c.api.GetObject(ctx, in)
		if status(err) == http.StatusRequestedRangeNotSatisfiable && ranged {
			ranged = false // an empty object has no byte 0
			out, err = c.api.GetObject(ctx, &awss3.GetObjectInput{Bucket: &c.bucket, Key: &k})
		}
		return err
	})
	if err != nil {
		release()
		return nil, c.fail("get blob", d.Short(), err)
	}
	first := aws.ToInt64(out.ContentLength)
	total, ok := totalSize(aws.ToString(out.ContentRange))
	if !ok {
		total = first // a whole-object answer
	}
	ctx, cancel := context.WithCancelCause(ctx)
	r := &partReader{c: c, ctx: ctx, cancel: cancel, k: k, id: d.Short(), etag: aws.ToString(out.ETag),
		body: out.Body, bodyLeft: first, total: total, next: first}
	if first < total {
		r.parts = make(chan *part, readAhead)
		r.ahead = make(chan struct{}, readAhead)
		r.wg.Add(1)
		go r.prefetch()
	}
	return r, nil
}

// totalSize parses "bytes 0-8388607/1073741824".
func totalSize(cr string) (int64, bool) {
	_, t, ok := strings.Cut(cr, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(t, 10, 64)
	return n, err == nil
}

type part struct {
	bp    *[]byte
	buf   []byte
	err   error
	ready chan struct{} // closed when buf and err are set
}

// partReader streams the first response's body, then the prefetched parts
// in order.
type partReader struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelCauseFunc
	k, id  string
	etag   string
	total  int64

	body     io.ReadCloser // the first response; holds a slot until done
	bodyLeft int64
	read     int64

	next  int64         // offset of the next part to fetch (prefetcher)
	parts chan *part    // fetched parts, in order
	ahead chan struct{} // bounds the parts fetched but not yet read
	wg    sync.WaitGroup

	cur    *part
	curOff int
	err    error
	once   sync.Once
}

func (r *partReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if r.body != nil {
		n, err := r.body.Read(p[:min(int64(len(p)), max(r.bodyLeft, 1))])
		if int64(n) > r.bodyLeft {
			n = int(r.bodyLeft)
			err = fmt.Errorf("body longer than its Content-Length")
		}
		r.bodyLeft -= int64(n)
		r.read += int64(n)
		switch {
		case err == io.EOF && r.bodyLeft > 0:
			err = fmt.Errorf("body ended %d bytes early: %w", r.bodyLeft, io.ErrUnexpectedEOF)
		case err == io.EOF || err == nil && r.bodyLeft == 0:
			r.body.Close()
			r.body = nil
			release()
			err = nil
			if r.read == r.total {
				err = io.EOF
			}
		}
		if err != nil {
			return n, r.setErr(err)
		}
		return n, nil
	}
	if r.cur == nil {
		if r.parts == nil || r.read >= r.total {
			return 0, r.setErr(io.EOF)
		}
		select {
		case pt, ok := <-r.parts:
			if !ok {
				return 0, r.setErr(fmt.Errorf("download stopped after %d of %d bytes: %w", r.read, r.total, context.Cause(r.ctx)))
			}
			<-pt.ready // the fetch ends early, with an error, if ctx ends
			r.cur, r.curOff = pt, 0
		case <-r.ctx.Done():
			return 0, r.setErr(context.Cause(r.ctx))
		}
		if r.cur.err != nil {
			return 0, r.setErr(r.cur.err)
		}
	}
	n := copy(p, r.cur.buf[r.curOff:])
	r.curOff += n
	r.read += int64(n)
	if r.curOff == len(r.cur.buf) {
		r.done(r.cur)
		r.cur = nil
	}
	return n, nil
}

// done returns a read part's buffer and slot, making room for the next.
func (r *partReader) done(pt *part) {
	if pt.bp != nil {
		putBuf(pt.bp)
		release()
	}
	<-r.ahead
}

func (r *partReader) setErr(err error) error {
	if err != io.EOF {
		err = r.c.fail("get blob", r.id, err)
	}
	r.err = err
	return err
}

// prefetch starts fetching the parts after the first, in order, at most
// readAhead ahead of the reader; they are fetched in parallel and handed
// over in order.
func (r *partReader) prefetch() {
	defer r.wg.Done()
	defer close(r.parts)
	for off := r.next; off < r.total; off += PartSize {
		select {
		case r.ahead <- struct{}{}:
		case <-r.ctx.Done():
			return
		}
		if err := acquire(r.ctx); err != nil {
			<-r.ahead
			return
		}
		bp, err := getBuf(r.ctx)
		if err != nil {
			release()
			<-r.ahead
			return
		}
		pt := &part{bp: bp, ready: make(chan struct{})}
		pt.buf = (*pt.bp)[:min(PartSize, r.total-off)]
		go func(off int64) {
			defer close(pt.ready)
			pt.err = r.fetch(off, pt.buf)
		}(off)
		r.parts <- pt // never blocks: the channel holds readAhead parts
	}
}

// fetch reads bytes [off, off+len(buf)) into buf, retrying as a whole.
func (r *partReader) fetch(off int64, buf []byte) error {
	rng := fmt.Sprintf("bytes=%d-%d", off, off+int64(len(buf))-1)
	return r.c.call(r.ctx, func(ctx context.Context) error {
		in := &awss3.GetObjectInput{Bucket: &r.c.bucket, Key: &r.k, Range: &rng}
		if r.etag != "" {
			in.IfMatch = &r.etag // the same object throughout
		}
		out, err := r.c.api.GetObject(ctx, in)
		if err != nil {
			return err
		}
		defer out.Body.Close()
		if n := aws.ToInt64(out.ContentLength); n != int64(len(buf)) {
			return fmt.Errorf("range %s answered with %d bytes", rng, n)
		}
		if _, err := io.ReadFull(out.Body, buf); err != nil {
			return fmt.Errorf("range %s: %w", rng, err)
		}
		return nil
	})
}

// Close stops the download and returns every slot and buffer it holds.
func (r *partReader) Close() error {
	r.once.Do(func() {
		r.cancel(errClosed)
		if r.body != nil {
			r.body.Close()
			r.body = nil
			release()
		}
		if r.cur != nil {
			r.done(r.cur)
			r.cur = nil
		}
		if r.parts != nil {
			for pt := range r.parts {
				<-pt.ready
				r.done(pt)
			}
		}
		r.wg.Wait()
	})
	return nil
}
