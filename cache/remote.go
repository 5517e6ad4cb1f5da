package cache

import (
	"context"
	"errors"
	"io"
)

// ErrRemoteUnavailable is what a [Remote] returns, wrapped, once it has
// found its server unreachable and stopped trying; it has warned the user
// itself, so Dir does not warn again.
var ErrRemoteUnavailable = errors.New("server unreachable")

// Remote is a second cache level behind a local [Dir]: a server speaking
// the Bazel HTTP cache protocol (package cache/remote), or anything else
// that stores opaque bytes under a blob digest or an action key.
//
// Nothing a Remote returns is trusted. Dir hash-verifies every blob before
// it is published locally and decodes, checks and (when required) checks
// the signature of every entry before it is used. Implementations must
// report a miss as an error wrapping [ErrNotFound], and should keep their
// own timeouts and retries bounded.
type Remote interface {
	// OpenBlob starts reading the uncompressed content of blob d. The
	// returned reader must fail (not return io.EOF) if the body ends before
	// its announced length.
	OpenBlob(ctx context.Context, d Digest) (io.ReadCloser, error)
	// HasBlob reports whether the server holds blob d.
	HasBlob(ctx context.Context, d Digest) (bool, error)
	// PutBlob uploads blob d of the given size. open returns a fresh
	// reader of the content each time it is called, so an upload can be
	// retried; the reader fails if the local copy does not hash to d.
	PutBlob(ctx context.Context, d Digest, size int64, open func() (io.ReadCloser, error)) error
	// GetEntry returns the stored bytes of the entry for key, as written
	// by [EncodeEntry] (and signed, if signing is on).
	GetEntry(ctx context.Context, key ActionID) ([]byte, error)
	// PutEntry uploads the stored bytes of the entry for key.
	PutEntry(ctx context.Context, key ActionID, b []byte) error
	// String names the remote for messages, without credentials.
	String() string
}
