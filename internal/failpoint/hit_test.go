package failpoint

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestHitCounts(t *testing.T) {
	restore, err := Set("a=2*off->1*error(ENOSPC)->off;b=0*off->error(EIO);c=1*error(EROFS)")
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	want := []struct {
		label string
		err   error
	}{
		{"a", nil}, {"a", nil}, {"a", syscall.ENOSPC}, {"a", nil},
		{"b", syscall.EIO}, {"b", syscall.EIO},
		{"c", syscall.EROFS}, {"c", nil},
		{"other", nil},
	}
	for i, w := range want {
		err := Hit(w.label)
		if (w.err == nil) != (err == nil) || (w.err != nil && !errors.Is(err, w.err)) {
			t.Errorf("hit %d of %s: %v, want %v", i, w.label, err, w.err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"x", "=kill", "a=boom", "a=error(EWHAT)", "a=sleep(x)", "a=kill(1)", "a=x*kill", "a=error(EIO", "a=await()", "a=await"} {
		if _, err := Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

func TestUnsetIsFree(t *testing.T) {
	restore, _ := Set("")
	defer restore()
	if n := testing.AllocsPerRun(100, func() { _ = Hit("blob.fsync") }); n != 0 {
		t.Errorf("Hit allocates %v times with no failpoints", n)
	}
}

func BenchmarkHitUnset(b *testing.B) {
	for b.Loop() {
		_ = Hit("blob.fsync")
	}
}

// await holds the hit until the file exists, and only the hits its term
// covers.
func TestAwait(t *testing.T) {
	file := filepath.Join(t.TempDir(), "release")
	restore, err := Set("a=1*off->await(" + file + ")")
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if err := Hit("a"); err != nil {
		t.Fatal(err)
	}
	passed := make(chan struct{})
	go func() {
		_ = Hit("a")
		close(passed)
	}()
	// Hits of other labels pass meanwhile.
	if err := Hit("b"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-passed:
		t.Fatal("the second hit passed before the file existed")
	default:
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-passed
}
