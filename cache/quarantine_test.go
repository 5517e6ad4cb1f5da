package cache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestQuarantineMovesObject(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d, _ := c.PutBytes([]byte("x"))
	p := c.blobPath(d, false)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cause := errors.New("bad")
	ce := c.QuarantineFile("blob", d.String(), f, cause)
	if ce.Moved == "" || filepath.Dir(ce.Moved) != filepath.Join(c.Root(), QuarantineDir) {
		t.Errorf("Moved = %q, want a path in quarantine/", ce.Moved)
	}
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("object still in place: %v", err)
	}
	if !errors.Is(ce, cause) || !errors.Is(ce, ErrCorrupt) {
		t.Errorf("error %v does not match its cause and ErrCorrupt", ce)
	}
}

// TestQuarantineSparesReplacement covers the race where the bad object was
// already quarantined and a good copy published before our move.
func TestQuarantineSparesReplacement(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d, _ := c.PutBytes([]byte("good"))
	p := c.blobPath(d, false)
	bad, err := os.Open(writeFile(t, []byte("bad"))) // the file we found bad
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	st, _ := bad.Stat()
	ce := c.Quarantine("blob", d.String(), p, st, errors.New("bad"))
	if ce.Moved != "" {
		t.Errorf("Moved = %q, want empty: the good copy must stay", ce.Moved)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "good" {
		t.Errorf("object = %q, %v; want the good copy in place", b, err)
	}
	if q := listDir(t, filepath.Join(c.Root(), QuarantineDir)); len(q) != 0 {
		t.Errorf("quarantine/ holds %q, want empty", q)
	}
}

func TestQuarantineAlreadyGone(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	ce := c.quarantinePath("blob", "00", filepath.Join(c.Root(), "cas", "00", "missing"), errors.New("bad"))
	if ce.Moved != "" {
		t.Errorf("Moved = %q for a missing object", ce.Moved)
	}
}

func TestQuarantineRecreatesDir(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d, _ := c.PutBytes([]byte("x"))
	os.Remove(filepath.Join(c.Root(), QuarantineDir))
	ce := c.quarantinePath("blob", d.String(), c.blobPath(d, false), errors.New("bad"))
	if ce.Moved == "" {
		t.Error("not moved when quarantine/ was missing")
	}
}
