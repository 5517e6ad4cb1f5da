package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/cairn-run/cairn/cache/remote/remotetest"
)

// A forced run's result replaces the entry in the local cache and on the
// HTTP remote alike: the forcing workspace then finds its forced bytes
// cached, and a workspace with an empty local cache gets the same bytes
// from the remote.
func TestForcedResultReachesRemote(t *testing.T) {
	bin := buildCairn(t)
	srv := remotetest.New(t, remotetest.Options{})
	root := t.TempDir()
	const spec = `phase "p" {
  command = "od -An -N8 -tu8 /dev/urandom > out.txt"
  outputs = ["out.txt"]
}
`
	ws := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "experiment.hcl"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	run := func(dir, cacheDir string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"run"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+filepath.Join(root, cacheDir), "NO_COLOR=1", "CAIRN_REMOTE_CACHE="+srv.URL)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cairn run %v: %v\n%s", args, err, out)
		}
		return out
	}
	read := func(dir string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	expect := func(out []byte, status string) {
		t.Helper()
		if !regexp.MustCompile(`(?m)^p: ` + status).Match(out) {
			t.Fatalf("want p %s in:\n%s", status, out)
		}
	}

	a := ws("a")
	expect(run(a, "cache-a"), "ran")
	first := read(a)
	expect(run(a, "cache-a", "--force", "p"), "ran")
	forced := read(a)
	if bytes.Equal(first, forced) {
		t.Fatalf("the forced run wrote the same random number %q", forced)
	}
	expect(run(a, "cache-a"), "cached$")
	if got := read(a); !bytes.Equal(got, forced) {
		t.Errorf("after a plain run the forcing workspace holds %q, want the forced %q", got, forced)
	}

	b := ws("b")
	expect(run(b, "cache-b"), "restored$")
	if got := read(b); !bytes.Equal(got, forced) {
		t.Errorf("a workspace with an empty local cache got %q from the remote, want the forced %q", got, forced)
	}
}
