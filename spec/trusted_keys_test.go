package spec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTrustedKeys: cache.trusted_keys lists public key files, made
// absolute against the spec's directory; an empty path is an error at
// its place.
func TestTrustedKeys(t *testing.T) {
	src := `experiment "e" {
  cache {
    trusted_keys = ["keys/ci.pub", "/etc/cairn/alice.pub"]
  }
}
phase "p" {
  command = "true"
}
`
	s, diags := load(t, "experiment.hcl", []byte(src), Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	want := []string{testDir + "/keys/ci.pub", "/etc/cairn/alice.pub"}
	if diff := cmp.Diff(want, s.Experiment.CacheTrustedKeys); diff != "" {
		t.Errorf("CacheTrustedKeys (-want +got):\n%s", diff)
	}

	_, diags = load(t, "experiment.hcl", []byte(strings.Replace(src, `"keys/ci.pub"`, `""`, 1)), Options{})
	if !diags.HasErrors() || diags[0].Summary != "Invalid cache.trusted_keys" || diags[0].Subject.Start.Line != 3 {
		t.Errorf("empty path: %v", diags)
	}
}
