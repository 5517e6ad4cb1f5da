package cache

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestCorruptError(t *testing.T) {
	ce := &CorruptError{Kind: "blob", ID: HashBytes(nil).String(), Path: "/c/cas/e3/x", Moved: "/c/quarantine/y", Err: io.ErrUnexpectedEOF}
	err := fmt.Errorf("cache get e3b0c44298fc: %w", ce)
	if !errors.Is(err, ErrCorrupt) {
		t.Error("errors.Is(err, ErrCorrupt) = false")
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("cause not unwrapped")
	}
	if errors.Is(err, ErrNotFound) {
		t.Error("errors.Is(err, ErrNotFound) = true")
	}
	var got *CorruptError
	if !errors.As(err, &got) || got.ID != ce.ID {
		t.Error("errors.As did not find the *CorruptError")
	}
	want := "cache get e3b0c44298fc: corrupt blob e3b0c44298fc: unexpected EOF (moved to /c/quarantine/y)"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}
