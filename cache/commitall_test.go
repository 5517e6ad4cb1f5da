package cache

import (
	"bytes"
	crand "crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/internal/fsx/fsxtest"
)

// batchRun is CommitAll of a batch of staged blobs, then an entry
// referencing them all, recorded for the power-loss model.
type batchRun struct {
	root, cacheRoot string
	blobs           [][]byte
	ds              []Digest
	key             ActionID
	rec             *fsxtest.Recorder
}

func recordBatch(t *testing.T, wrap func(fsx.FS) fsx.FS) *batchRun {
	t.Helper()
	r := &batchRun{root: t.TempDir()}
	r.cacheRoot = filepath.Join(r.root, "cache")
	c, err := Open(r.cacheRoot)
	if err != nil {
		t.Fatal(err)
	}
	noPack(c)
	src := t.TempDir()
	var paths []string
	for i := range batchMin + 4 {
		b := []byte(strings.Repeat(fmt.Sprintf("output %d\n", i), 20*(i+1)))
		p := filepath.Join(src, fmt.Sprint(i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r.blobs, r.ds, paths = append(r.blobs, b), append(r.ds, HashBytes(b)), append(paths, p)
	}
	r.rec = &fsxtest.Recorder{Base: fsx.OS{}, Root: r.root}
	if err := r.rec.Start(); err != nil {
		t.Fatal(err)
	}
	var layer fsx.FS = r.rec
	if wrap != nil {
		layer = wrap(r.rec)
	}
	defer fsx.Set(layer)()
	var pend []*PendingBlob
	for _, p := range paths {
		b, err := c.StageFile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		pend = append(pend, b)
	}
	if err := CommitAll(pend); err != nil {
		t.Fatal(err)
	}
	r.rec.Mark("blobs")
	e := testEntry("batch", r.ds...)
	for i := range e.Outputs {
		e.Outputs[i].Size = int64(len(r.blobs[i]))
	}
	r.key = e.Key
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	r.rec.Mark("entry")
	return r
}

// violations materialises the crash states of the recorded batch and
// returns what is wrong in them: a visible blob or entry that is not
// valid (verify's problems: corrupt, dangling), or an acknowledged blob
// or entry missing.
func (r *batchRun) violations(t *testing.T, limit int) (states int, bad []string) {
	t.Helper()
	scratch := scratchDir(t)
	states, err := r.rec.CrashStates(limit, 1, func(cs fsxtest.CrashState) error {
		dst := filepath.Join(scratch, "s")
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		if err := cs.WriteTo(dst); err != nil {
			return err
		}
		c, err := Open(filepath.Join(dst, "cache"))
		if err != nil {
			return err
		}
		rep, err := c.Verify(VerifyOptions{})
		if err != nil {
			return err
		}
		var v []string
		for _, p := range rep.Problems {
			v = append(v, fmt.Sprintf("verify: %s %s %s", p.Class, p.Kind, p.ID))
		}
		for _, a := range cs.Acked {
			switch a {
			case "blobs":
				for i, d := range r.ds {
					if b, err := c.ReadBlob(d); err != nil || !bytes.Equal(b, r.blobs[i]) {
						v = append(v, fmt.Sprintf("acknowledged blob %d: %v", i, err))
					}
				}
			case "entry":
				if _, err := c.GetLocalEntry(r.key); err != nil {
					v = append(v, fmt.Sprintf("acknowledged entry: %v", err))
				}
			}
		}
		if len(v) > 0 {
			bad = append(bad, fmt.Sprintf("after %d ops (%s): %s", cs.Prefix, cs.Choice, strings.Join(v, "; ")))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return states, bad
}

// TestPowerLossBatch is RELIABILITY.md T4 for CommitAll's batch: blobs
// written without an fsync each, one syncfs, all linked, one more
// syncfs, then an entry. No crash state may show a blob that does not
// hash to its name, an entry whose blobs are missing, or lose what was
// acknowledged; dropping either syncfs must let the checker find a
// violation (negative controls).
func TestPowerLossBatch(t *testing.T) {
	if _, err := (fsx.OS{}).OpenFS(t.TempDir()); err != nil {
		t.Skipf("no syncfs here: %v", err)
	}
	limit := 24
	if longTier() {
		limit = 1024
	}
	r := recordBatch(t, nil)
	syncs, syncfs := 0, 0
	for _, e := range r.rec.Log() {
		if e.Kind == "mark" {
			break // the blobs are acknowledged: the entry's own fsyncs follow
		}
		switch e.Kind {
		case "sync":
			syncs++
		case "syncfs":
			syncfs++
		}
	}
	if syncfs != 2 || syncs != 0 {
		t.Errorf("the batch of %d blobs made %d fsyncs and %d syncfs calls, want 0 and 2", len(r.ds), syncs, syncfs)
	}
	states, bad := r.violations(t, limit)
	for _, v := range bad[:min(len(bad), 10)] {
		t.Errorf("violation %s", v)
	}
	t.Logf("%d crash states", states)
	for n := 1; n <= 2; n++ {
		nr := recordBatch(t, func(base fsx.FS) fsx.FS {
			return &fsxtest.Fault{Base: base, Op: fsxtest.OpSyncFS, N: n, Drop: true}
		})
		if _, v := nr.violations(t, limit/4); len(v) == 0 {
			t.Errorf("negative control: without syncfs %d of the batch the checker found no violation", n)
		} else {
			t.Logf("negative control: without syncfs %d: %d violations, e.g. %s", n, len(v), v[0])
		}
	}
}

// benchCommit stages n new files of 1 KiB (a phase's directory output)
// and commits them with commit; the figure is per blob.
func benchCommit(b *testing.B, n int, commit func([]*PendingBlob) error) {
	c := newDir(b)
	dir := b.TempDir()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var pend []*PendingBlob
		for j := range n {
			p := filepath.Join(dir, fmt.Sprint(j))
			data := make([]byte, 1024)
			crand.Read(data) // new content: none of the blobs is in the cache yet
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
			pb, err := c.StageFile(p, nil)
			if err != nil {
				b.Fatal(err)
			}
			pend = append(pend, pb)
		}
		b.StartTimer()
		if err := commit(pend); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/blob")
}

// BenchmarkCommit1000Batch commits 1,000 blobs of 1 KiB as CommitAll
// does: two syncfs calls in all.
func BenchmarkCommit1000Batch(b *testing.B) { benchCommit(b, 1000, CommitAll) }

// BenchmarkCommit1000Each commits the same blobs one by one, an fsync of
// each blob and of its shard directory (the protocol of a single blob).
func BenchmarkCommit1000Each(b *testing.B) {
	benchCommit(b, 1000, func(pend []*PendingBlob) error {
		for _, p := range pend {
			if err := p.Commit(); err != nil {
				return err
			}
		}
		return nil
	})
}
