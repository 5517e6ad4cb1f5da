package testkit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata (in cmd/cairn also the cmp files inside testdata/script/*.txtar)")

// Updating reports whether the test binary runs with -update: golden
// files are then written from what the code produces, not compared.
func Updating() bool { return *update }

// Golden compares got with the content of the file at path and reports a
// difference as (-want +got). Under -update it writes got to path instead,
// making its directory if need be.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
