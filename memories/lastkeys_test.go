package memories

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
)

// TestKeyIndexHint: the last keys saved load back the same; a file cut
// anywhere, with a byte flipped, or of another format loads as empty
// (a miss costs a diff in `cairn why`, never a wrong key).
func TestKeyIndexHint(t *testing.T) {
	p := filepath.Join(t.TempDir(), "keys")
	want := map[string]cache.ActionID{"prep": {1}, `train["m1"]`: {2}, "é": {3, 4}}
	ki := LoadLastKeys(p)
	for addr, id := range want {
		ki.Set(addr, id)
	}
	if err := ki.Save(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, LoadLastKeys(p).keys); diff != "" {
		t.Fatalf("round trip (-saved +loaded):\n%s", diff)
	}
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var damaged [][]byte
	for i := range good {
		damaged = append(damaged, good[:i])
		c := append([]byte(nil), good...)
		c[i] ^= 0x20
		damaged = append(damaged, c)
	}
	damaged = append(damaged, []byte("{\n  \"prep\": \""+cache.ActionID{1}.String()+"\"\n}\n"))
	for _, b := range damaged {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := LoadLastKeys(p).keys; len(got) != 0 {
			t.Fatalf("damaged file %q loaded %v, want nothing", b, got)
		}
	}
}

func benchLoadKeyIndex(b *testing.B, name string) {
	p := filepath.Join(b.TempDir(), "keys")
	ki := LoadLastKeys(p)
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf(name, i)
		ki.Set(names[i], cache.ActionID{byte(i), byte(i >> 8)})
	}
	if err := ki.Save(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ki := LoadLastKeys(p)
		for _, n := range names {
			if _, ok := ki.Get(n); !ok {
				b.Fatal("miss")
			}
		}
	}
}

// The last keys of 1,000 phases loaded and each looked up, as a no-op run
// does, with plain addresses and with for_each instances' quoted keys.
func BenchmarkLoadKeyIndexPlain1000(b *testing.B)  { benchLoadKeyIndex(b, "cell-%04d") }
func BenchmarkLoadKeyIndexQuoted1000(b *testing.B) { benchLoadKeyIndex(b, `train["cell-%04d"]`) }
