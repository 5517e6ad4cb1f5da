package cache

import (
	"os"
	"path/filepath"
	"testing"
)

func commitTemp(t *testing.T, dir, content string) *tempFile {
	t.Helper()
	tf, err := createTemp(dir, "x-", tempPerm, perms{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tf.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tf.commit(true); err != nil {
		t.Fatal(err)
	}
	return tf
}

func TestCreateTempUnique(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		tf, err := createTemp(dir, "blob-", tempPerm, perms{})
		if err != nil {
			t.Fatal(err)
		}
		if seen[tf.path] {
			t.Fatalf("temp name %q reused", tf.path)
		}
		seen[tf.path] = true
		tf.abort()
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("after abort: %q left behind", got)
	}
}

func TestCommitMakesReadOnly(t *testing.T) {
	tf := commitTemp(t, t.TempDir(), "hello")
	st, err := os.Stat(tf.path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o222 != 0 {
		t.Errorf("mode after commit = %v, want no write bits", st.Mode())
	}
	tf.abort()
	tf.abort() // twice is fine
}

func TestPublishWriteOnce(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "shard", "obj") // shard does not exist yet
	first := commitTemp(t, dir, "first")
	existed, err := publish(first, dst)
	if err != nil || existed {
		t.Fatalf("first publish = %v, %v; want false, nil", existed, err)
	}
	second := commitTemp(t, dir, "second")
	existed, err = publish(second, dst)
	if err != nil || !existed {
		t.Fatalf("second publish = %v, %v; want true, nil", existed, err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "first" {
		t.Errorf("dst = %q after second publish, want %q", b, "first")
	}
	first.abort()
	second.abort()
	if b, _ := os.ReadFile(dst); string(b) != "first" {
		t.Errorf("dst = %q after removing temps, want %q", b, "first")
	}
}

func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("a"), 0o644)
	existed, err := renameNoReplace(a, b)
	if err != nil {
		t.Skipf("renameat2 unsupported here: %v", err)
	}
	if existed {
		t.Fatal("existed = true for a new name")
	}
	os.WriteFile(a, []byte("a2"), 0o644)
	existed, err = renameNoReplace(a, b)
	if err != nil || !existed {
		t.Fatalf("second rename = %v, %v; want true, nil", existed, err)
	}
	if got, _ := os.ReadFile(b); string(got) != "a" {
		t.Errorf("b = %q, want %q", got, "a")
	}
}

func TestSyncDir(t *testing.T) {
	if err := syncDir(t.TempDir()); err != nil {
		t.Error(err)
	}
	if err := syncDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("syncDir of a missing directory succeeded")
	}
}
