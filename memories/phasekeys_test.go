package memories

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/workspace"
)

// TestPhaseKeysFileDamage: a damaged, truncated or foreign file is an
// empty memory.
func TestPhaseKeysFileDamage(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "phasekeys")
	racy := []RacyInput{{Path: "data/new.csv", Stat: workspace.FileStat{Size: 5, MTime: 1700000000123456789, CTime: 1700000000123456789, Ino: 42, Mode: 0o755}, Digest: cache.Digest{7}}}
	entries := map[string]phaseKey{"a": {fp: [32]byte{1}, key: cache.ActionID{2}}, "b[\"x\"]": {fp: [32]byte{3}, key: cache.ActionID{4}, racy: racy}}
	good := encodePhaseKeys(entries, hint.ExeID())
	if err := os.WriteFile(p, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(entries, LoadPhaseKeys(p).entries, cmp.AllowUnexported(phaseKey{})); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	for name, b := range map[string][]byte{
		"flipped byte":  func() []byte { c := append([]byte(nil), good...); c[len(phaseKeysFormat.Header())+3] ^= 1; return c }(),
		"cut short":     good[:len(good)-1],
		"other header":  append([]byte("cairn-phase-keys 9\n"), good[len(phaseKeysFormat.Header()):]...),
		"another build": encodePhaseKeys(entries, hint.ExeID()+" rebuilt"),
	} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := LoadPhaseKeys(p).entries; len(got) != 0 {
			t.Errorf("%s: loaded %d entries", name, len(got))
		}
	}
}

// FuzzPhaseKeys feeds the decoder damaged files; with fixSum the input
// gets a valid checksum so the fuzzer reaches the records.
func FuzzPhaseKeys(f *testing.F) {
	good := encodePhaseKeys(map[string]phaseKey{"a": {fp: [32]byte{1}, key: cache.ActionID{2}, racy: []RacyInput{{Path: "in.txt", Stat: workspace.FileStat{Size: 3, MTime: -1, Mode: 0o644}}}}}, "build")
	f.Add(good, false)
	f.Add(good[:len(good)-hint.TrailerSize], true)
	f.Add([]byte(phaseKeysFormat.Header()), true)
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		if fixSum {
			b = hint.AppendTrailer(b[:len(b):len(b)])
		}
		r, err := phaseKeysFormat.Open(b)
		if err != nil {
			return
		}
		got, err := readPhaseKeys(r, "build")
		if err != nil {
			return
		}
		r2, err := phaseKeysFormat.Open(encodePhaseKeys(got, "build"))
		if err != nil {
			t.Fatal(err)
		}
		again, err := readPhaseKeys(r2, "build")
		if err != nil {
			t.Fatalf("re-encoded memory does not decode: %v", err)
		}
		if diff := cmp.Diff(got, again, cmp.AllowUnexported(phaseKey{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip changed the memory (-first +second):\n%s", diff)
		}
	})
}

// TestPhaseKeysRacyLookup: a key remembered with racy inputs answers only
// when they still have the content listed (same says so), is asked of
// them alone, and survives a save.
func TestPhaseKeysRacyLookup(t *testing.T) {
	racy := []RacyInput{{Path: "in.txt", Stat: workspace.FileStat{Size: 3, MTime: 5, CTime: 5, Ino: 9, Mode: 0o644}, Digest: cache.Digest{1}}}
	type result struct {
		Key   cache.ActionID
		OK    bool
		Asked []RacyInput
	}
	tests := []struct {
		name string
		racy []RacyInput
		fp   [32]byte
		same bool
		want result
	}{
		{"calm inputs: no question", nil, [32]byte{1}, false, result{Key: cache.ActionID{2}, OK: true}},
		{"racy inputs unchanged", racy, [32]byte{1}, true, result{Key: cache.ActionID{2}, OK: true, Asked: racy}},
		{"racy input changed", racy, [32]byte{1}, false, result{Asked: racy}},
		{"other fingerprint: no question", racy, [32]byte{3}, true, result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "phasekeys")
			pk := LoadPhaseKeys(p)
			pk.Record("a", [32]byte{1}, cache.ActionID{2}, tt.racy)
			if err := pk.Save(); err != nil {
				t.Fatal(err)
			}
			var got result
			got.Key, _, got.OK = LoadPhaseKeys(p).Lookup("a", tt.fp, func(r []RacyInput) bool {
				got.Asked = append(got.Asked, r...)
				return tt.same
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lookup (-want +got):\n%s", diff)
			}
		})
	}
}
