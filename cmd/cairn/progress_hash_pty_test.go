package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/internal/testkit"
)

// On a terminal, hashing that lasts shows a live line (files and bytes
// done, rate, time left) in the live region, and the line is erased when
// hashing ends: it never stays among the permanent lines.
func TestTerminalHashProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn")
	}
	bin := buildCairn(t)
	dir := t.TempDir()
	spec := `phase "scan" {
  command = "ls data | wc -l > out/count.txt"
  inputs  = ["data"]
  outputs = ["out/count.txt"]
}
`
	if err := os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 300; i++ {
		if err := os.WriteFile(filepath.Join(dir, "data", fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Hashing is held after the 100th file until the test saw the line.
	seen := filepath.Join(dir, "seen")
	t.Setenv(failpoint.EnvVar, "hash.file=100*off->await("+seen+")")
	r := startInPty(t, bin, dir, "run")
	// A first run reads the directory's small files as it finds them:
	// the totals are what was found so far, and no time left is told.
	r.waitOutput(`hashing inputs of scan: 1\d\d of at least 300 files, [\d.]+ B, [\d.]+ (B|KiB)/s`)
	touch(t, seen)
	out, code := r.wait()
	t.Logf("output:\n%s", testkit.Visible(out))
	if code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	// The last hashing line is followed by the rest of its region and
	// then the erase of that region: back to column one, up, erase below.
	last := strings.LastIndex(out, "hashing inputs of scan:")
	if !regexp.MustCompile(`^hashing inputs of scan:[^\x1b]*\r\x1b\[\d+A\x1b\[J`).MatchString(out[last:]) {
		t.Errorf("the last hashing line is not erased with its region:\n%s", testkit.Visible(out[last:]))
	}
	if !strings.Contains(out[last:], "scan: ran in") {
		t.Errorf("no %q after the hashing line", "scan: ran in")
	}
	testkit.CheckCleanEnd(t, out)
}
