// Package hint keeps the workspace's hint files: files derived from
// others that make cairn faster and are never needed for a right answer
// (the spec memo, the for_each memo, the input digests, the phase keys,
// the last keys, the entry memo). The name is the contract: whatever a
// hint file says may be ignored, and is, whenever it is missing, damaged,
// of another version or racy; deleting one costs time, never a wrong
// result.
//
// Every hint file has the same lifecycle, kept here once: a header line
// naming the file and its layout's version, a body written with Writer,
// a checksum trailer, an atomic save (a temp file and a rename, so a
// reader sees the old or the new file), a load that takes a damaged or
// foreign file for an empty one, and the racy rule (Racy) by which a
// remembered stat is trusted. A memory declares only what it records: a
// Store of its type with the functions that write and read it.
//
// The package sits below spec, cache and engine, which all keep hints,
// and imports nothing of cairn's but internal packages.
package hint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/cairn-run/cairn/internal/fsx"
)

// Format is a hint file's layout, named by its header line.
type Format struct {
	header string
	label  string // the failpoint label of its writes
}

// NewFormat returns the format whose header is "cairn-<name> <version>":
// a file of another version is not read. label names the write protocol's
// failpoints (package failpoint): "ws" for the workspace's state files.
func NewFormat(name string, version int, label string) Format {
	return Format{header: fmt.Sprintf("cairn-%s %d\n", name, version), label: label}
}

// WithLayout returns f with layout (a hash of a generated layout) added
// to its header: a file of another layout is not read either.
func (f Format) WithLayout(layout string) Format {
	f.header = f.header[:len(f.header)-1] + " " + layout + "\n"
	return f
}

// Header is the first line of a file of this format.
func (f Format) Header() string { return f.header }

// Writer starts a file of this format; sizeHint is the body's expected
// size.
func (f Format) Writer(sizeHint int) *Writer { return NewWriter(f.header, sizeHint) }

// Open checks b's header and trailer and returns a Reader of its body
// (a copy: b may change later).
func (f Format) Open(b []byte) (*Reader, error) { return Open(b, f.header) }

// OpenOwned is Open without the copy: b is handed over and must never
// change again.
func (f Format) OpenOwned(b []byte) (*Reader, error) { return OpenOwned(b, f.header) }

// Read reads the file at path and returns a Reader of its body, or false
// if the file is missing, damaged or of another format.
func (f Format) Read(path string) (*Reader, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	// b is dropped here, so what is read may share its memory.
	r, err := f.OpenOwned(b)
	return r, err == nil
}

// Save writes data (a finished Writer's bytes) to path atomically, never
// fsynced: a file lost to a power cut is a miss.
func (f Format) Save(path string, data []byte, perm fs.FileMode) error {
	return fsx.WriteFileAtomic(path, data, perm, f.label, false, false)
}

// Store is a hint file holding one T: its format, and how a T is written
// and read. Decode must check what it reads (r.OK) where a damaged value
// could make it loop or allocate; Store checks r.Err after it.
type Store[T any] struct {
	Format Format
	Perm   fs.FileMode
	// SizeHint guesses the encoded size of v (nil: no guess).
	SizeHint func(v T) int
	Encode   func(w *Writer, v T)
	Decode   func(r *Reader) (T, error)
}

// Marshal returns the file's bytes for v.
func (s *Store[T]) Marshal(v T) []byte { return s.writer(v).Finish() }

func (s *Store[T]) writer(v T) *Writer {
	n := 0
	if s.SizeHint != nil {
		n = s.SizeHint(v)
	}
	w := s.Format.Writer(n)
	s.Encode(w, v)
	return w
}

// Unmarshal decodes the file's bytes b (copied: b may change later).
func (s *Store[T]) Unmarshal(b []byte) (T, error) {
	r, err := s.Format.Open(b)
	return s.decode(r, err)
}

// UnmarshalOwned is Unmarshal without the copy: what it returns may share
// b's memory, which must never change again.
func (s *Store[T]) UnmarshalOwned(b []byte) (T, error) {
	r, err := s.Format.OpenOwned(b)
	return s.decode(r, err)
}

func (s *Store[T]) decode(r *Reader, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	v, err := s.Decode(r)
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		return zero, err
	}
	return v, nil
}

// Load reads the file at path; ok is false (and v the zero T) if it is
// missing, damaged or of another format: a miss.
func (s *Store[T]) Load(path string) (v T, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return v, false
	}
	v, err = s.UnmarshalOwned(b) // b is dropped: v may share it
	return v, err == nil
}

// Save writes v to path atomically.
func (s *Store[T]) Save(path string, v T) error {
	return s.Format.Save(path, s.Marshal(v), s.Perm)
}

// Remove deletes the file at path; a missing file is no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
