package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDigestRoundTrip(t *testing.T) {
	for _, content := range []string{"", "a", "hello\n", strings.Repeat("x", 1000)} {
		d := HashBytes([]byte(content))
		s := d.String()
		if len(s) != 64 || strings.ToLower(s) != s {
			t.Errorf("String() = %q, want 64 lowercase hex", s)
		}
		if d.Short() != s[:12] {
			t.Errorf("Short() = %q, want %q", d.Short(), s[:12])
		}
		got, err := ParseDigest(s)
		if err != nil || got != d {
			t.Errorf("ParseDigest(%q) = %v, %v; want %v", s, got, err, d)
		}
		a, err := ParseActionID(s)
		if err != nil || a.String() != s || a.Short() != s[:12] {
			t.Errorf("ParseActionID(%q) = %v, %v", s, a, err)
		}
	}
	// The well-known SHA-256 of empty input.
	if got, want := HashBytes(nil).String(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("HashBytes(nil) = %s, want %s", got, want)
	}
}

func TestParseDigestErrors(t *testing.T) {
	good := HashBytes(nil).String()
	for name, s := range map[string]string{
		"empty":     "",
		"short":     good[:63],
		"long":      good + "0",
		"uppercase": strings.ToUpper(good),
		"non-hex":   "g" + good[1:],
		"space":     " " + good[1:],
	} {
		if _, err := ParseDigest(s); err == nil {
			t.Errorf("%s: ParseDigest(%q) succeeded, want error", name, s)
		}
		if _, err := ParseActionID(s); err == nil {
			t.Errorf("%s: ParseActionID(%q) succeeded, want error", name, s)
		}
	}
}

func TestIsZero(t *testing.T) {
	if !(Digest{}).IsZero() || !(ActionID{}).IsZero() {
		t.Error("zero values: IsZero() = false")
	}
	if HashBytes(nil).IsZero() {
		t.Error("digest of empty content: IsZero() = true")
	}
}

func TestDigestJSON(t *testing.T) {
	type doc struct {
		D Digest   `json:"d"`
		A ActionID `json:"a"`
		Z Digest   `json:"z,omitzero"`
	}
	in := doc{D: HashBytes([]byte("d")), A: ActionID(HashBytes([]byte("a")))}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"d":"` + in.D.String() + `","a":"` + in.A.String() + `"}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
	if err := json.Unmarshal([]byte(`{"d":"xyz"}`), &out); err == nil {
		t.Error("unmarshal of a bad digest succeeded")
	}
}

func TestHashFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, copyBufSize - 1, copyBufSize, copyBufSize + 1, 3*copyBufSize + 7} {
		b := randomBytes(t, size)
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, n, err := HashFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if d != HashBytes(b) || n != int64(size) {
			t.Errorf("size %d: HashFile = %s, %d; want %s, %d", size, d.Short(), n, HashBytes(b).Short(), size)
		}
	}
	if _, _, err := HashFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("HashFile of a missing file succeeded")
	}
}
