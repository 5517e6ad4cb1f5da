package sigkey

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFiles: a key pair written by WriteKeyPair loads back, with safe
// modes; it is not overwritten; a private key others can read is refused;
// the private key never prints its secret.
func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	k, err := GenerateKey("alice@laptop")
	if err != nil {
		t.Fatal(err)
	}
	priv, pub, err := WriteKeyPair(filepath.Join(dir, "alice"), k)
	if err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{priv: 0o600, pub: 0o644} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", p, st.Mode(), err, mode)
		}
	}
	k2, err := LoadPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := LoadPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !k2.key.Equal(k.key) || k2.comment != "alice@laptop" || p2.String() != k.Public().String() {
		t.Errorf("loaded %v / %v, want %v", k2, p2, k.Public())
	}
	pubText, _ := os.ReadFile(pub)
	if !strings.HasPrefix(string(pubText), "cairn-ed25519 ") || !strings.HasSuffix(string(pubText), " alice@laptop\n") {
		t.Errorf("public key file %q", pubText)
	}
	other, err := GenerateKey("")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := WriteKeyPair(filepath.Join(dir, "alice"), other); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("overwrite: %v", err)
	}
	if k3, _ := LoadPrivateKey(priv); k3 == nil || !k3.key.Equal(k.key) {
		t.Error("the refused overwrite changed the key")
	}
	os.Chmod(priv, 0o640)
	if _, err := LoadPrivateKey(priv); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("group-readable private key: %v", err)
	}
	seed := base64.StdEncoding.EncodeToString(k.key.Seed())
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), mustJSON(t, k)} {
		if strings.Contains(s, seed) || strings.Contains(s, base64.StdEncoding.EncodeToString(k.key)) {
			t.Errorf("the private key printed its secret: %s", s)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzKeyFiles checks that the key parsers never panic and that a key
// they accept writes back to a file they read as the same key.
func FuzzKeyFiles(f *testing.F) {
	k, err := GenerateKey("alice@laptop")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(k.MarshalPEM())
	f.Add(k.Public().Marshal())
	f.Add([]byte("cairn-ed25519 AAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if pk, err := ParsePublicKey(b); err == nil {
			again, err := ParsePublicKey(pk.Marshal())
			if err != nil || !again.Key.Equal(pk.Key) || again.Comment != pk.Comment {
				t.Fatalf("public key %q: written back %q: %v", b, pk.Marshal(), err)
			}
		}
		if sk, err := ParsePrivateKey(b); err == nil {
			again, err := ParsePrivateKey(sk.MarshalPEM())
			if err != nil || !again.key.Equal(sk.key) || again.comment != sk.comment {
				t.Fatalf("private key %q: written back: %v", b, err)
			}
		}
	})
}
