package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/cairn-run/cairn/cache/maphash"
	"github.com/cairn-run/cairn/internal/fsx"
)

// Digest is the SHA-256 of a blob's uncompressed content. It names the blob
// in the content-addressed store. The zero Digest means "no blob"; it is not
// the digest of empty content.
type Digest [32]byte

// ActionID is a phase key: the SHA-256 computed by [ComputeKey]. It names an
// entry in the action cache.
type ActionID [32]byte

// String returns the digest as 64 lowercase hex digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Short returns the first 12 hex digits, for messages.
func (d Digest) Short() string { return d.String()[:12] }

// IsZero reports whether d is the zero Digest.
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText encodes d as 64 lowercase hex digits, so JSON shows hex.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText is the inverse of [Digest.MarshalText].
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := parseHex32(string(b))
	if err != nil {
		return fmt.Errorf("parse digest: %w", err)
	}
	*d = v
	return nil
}

// ParseDigest parses 64 lowercase hex digits, as produced by [Digest.String].
func ParseDigest(s string) (Digest, error) {
	v, err := parseHex32(s)
	if err != nil {
		return Digest{}, fmt.Errorf("parse digest: %w", err)
	}
	return v, nil
}

// String returns the key as 64 lowercase hex digits.
func (a ActionID) String() string { return hex.EncodeToString(a[:]) }

// Short returns the first 12 hex digits, for messages.
func (a ActionID) Short() string { return a.String()[:12] }

// IsZero reports whether a is the zero ActionID.
func (a ActionID) IsZero() bool { return a == ActionID{} }

// MarshalText encodes a as 64 lowercase hex digits, so JSON shows hex.
func (a ActionID) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText is the inverse of [ActionID.MarshalText].
func (a *ActionID) UnmarshalText(b []byte) error {
	v, err := parseHex32(string(b))
	if err != nil {
		return fmt.Errorf("parse action id: %w", err)
	}
	*a = v
	return nil
}

// ParseActionID parses 64 lowercase hex digits, as produced by
// [ActionID.String].
func ParseActionID(s string) (ActionID, error) {
	v, err := parseHex32(s)
	if err != nil {
		return ActionID{}, fmt.Errorf("parse action id: %w", err)
	}
	return v, nil
}

var errBadHex = errors.New("want 64 lowercase hex digits")

// parseHex32 accepts only the canonical spelling (lowercase, exact length),
// so every ID has one string form and one file name.
func parseHex32(s string) ([32]byte, error) {
	var v [32]byte
	if len(s) != 64 {
		return v, fmt.Errorf("%d characters: %w", len(s), errBadHex)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return v, fmt.Errorf("character %d %q: %w", i, c, errBadHex)
		}
	}
	if _, err := hex.Decode(v[:], []byte(s)); err != nil {
		return v, err
	}
	return v, nil
}

// HashBytes returns the Digest of b.
func HashBytes(b []byte) Digest { return sha256.Sum256(b) }

// HashFile returns the Digest and size of the file at path, reading it once
// with a large buffer, or, if it is a large regular file, through mappings
// of it (package maphash).
//
// Only a regular file is hashed: a FIFO would block for ever and a device
// such as /dev/zero never end. The file is opened non-blocking (a FIFO
// opens at once, writer or not) and its type checked before any read.
func HashFile(path string) (Digest, int64, error) {
	return HashFileContext(context.Background(), path)
}

// HashFileContext is HashFile that gives up with ctx's error once ctx is
// done: it checks between windows of a mapped file and between buffers of
// a read one, so a huge input does not hold up an interrupted run.
func HashFileContext(ctx context.Context, path string) (Digest, int64, error) {
	if err := ctx.Err(); err != nil {
		return Digest{}, 0, err
	}
	f, err := fsx.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return Digest{}, 0, fmt.Errorf("hash %s: it is %s, not a regular file", path, fsx.FileKind(fi.Mode()))
	}
	sum, n, ok, err := maphash.Sum(ctx, f, fi.Size())
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	if ok {
		return sum, n, nil
	}
	d, n, err := copyHashedContext(ctx, nil, f)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	return d, n, nil
}
