package cache

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// An entry whose temporary output was never stored is whole: it is
// stored, read back, verified clean and kept by GC, and only a restore of
// the temporary output fails, saying why.
func TestEntryWithTemporaryOutput(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	kept, err := c.PutBytes(textBytes(InlineMax + 100)) // a blob in cas/
	if err != nil {
		t.Fatal(err)
	}
	temp := HashBytes([]byte("a large intermediate, never stored"))
	e := testEntry("temporary", kept, temp)
	e.Format = EntryFormatTemp
	e.Outputs[1].Temporary = true
	if err := c.PutEntry(e); err != nil {
		t.Fatalf("PutEntry: %v", err)
	}
	got, err := c.GetEntry(e.Key)
	if err != nil {
		t.Fatalf("GetEntry: %v", err)
	}
	if diff := cmp.Diff(e.Outputs, got.Outputs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if c.HasBlob(temp) {
		t.Errorf("the temporary output's blob is in the cache")
	}
	rep, err := c.Verify(VerifyOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 || rep.Quarantined > 0 {
		t.Errorf("Verify found %+v, quarantined %d; want nothing", rep.Problems, rep.Quarantined)
	}
	later := time.Now().Add(48 * time.Hour)
	gc, err := c.GC(GCOptions{Grace: time.Minute, Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	if gc.EntriesRemoved != 0 || gc.BlobsRemoved != 0 {
		t.Errorf("GC removed %d entries, %d blobs; want none", gc.EntriesRemoved, gc.BlobsRemoved)
	}
	if _, err := c.GetEntry(e.Key); err != nil {
		t.Errorf("GetEntry after verify and GC: %v", err)
	}
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := c.RestoreTree(context.Background(), root, got.Outputs[:1], nil); err != nil {
		t.Errorf("restore of the stored output: %v", err)
	}
	if err := c.RestoreTree(context.Background(), root, got.Outputs[1:], nil); !errors.Is(err, ErrTemporary) {
		t.Errorf("restore of the temporary output = %v, want ErrTemporary", err)
	}
}
