package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote/remotetest"
	"github.com/cairn-run/cairn/cache/sigkey"
)

// signersSpec has one phase per writer; each writes who ran it, from
// WHO, which is passed through and so in no key.
const signersSpec = `phase "a" {
  command  = "echo $WHO > a.txt"
  outputs  = ["a.txt"]
  pass_env = ["WHO"]
}
phase "b" {
  command  = "echo $WHO > b.txt"
  outputs  = ["b.txt"]
  pass_env = ["WHO"]
}
phase "c" {
  command  = "echo $WHO > c.txt"
  outputs  = ["c.txt"]
  pass_env = ["WHO"]
}
`

// TestWritersSignatures: three writers share a cache, one signing with the
// key a reader trusts (ci, phase a), one with another key (mallory, phase
// b), one not signing (phase c). The reader restores a and runs b and c
// again, warning about each; cairn why names a's signer; cache verify
// names the signers and reports the entries the policy refuses. An entry
// changed after it was signed (its checksum made to match) is caught and
// its phase runs again. All of it on one shared cache directory and on
// the Bazel HTTP remote (there the readers trust by the spec's
// cache.trusted_keys, on the shared directory by CAIRN_TRUSTED_KEYS).
func TestWritersSignatures(t *testing.T) {
	bin := buildCairn(t)
	keys := t.TempDir()
	keygen := func(name string) (priv, pub string) {
		t.Helper()
		out, err := exec.Command(bin, "cache", "keygen", "--out", filepath.Join(keys, name), "--comment", name+"@build").CombinedOutput()
		if err != nil {
			t.Fatalf("cairn cache keygen: %v\n%s", err, out)
		}
		return filepath.Join(keys, name), filepath.Join(keys, name+".pub")
	}
	ciKey, ciPub := keygen("ci")
	malloryKey, _ := keygen("mallory")
	ci, err := sigkey.LoadPublicKey(ciPub)
	if err != nil {
		t.Fatal(err)
	}
	malloryPriv, err := sigkey.LoadPrivateKey(malloryKey)
	if err != nil {
		t.Fatal(err)
	}
	malloryFP := malloryPriv.Public().Fingerprint()

	for _, mode := range []string{"shared-dir", "remote"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			var srv *remotetest.Server
			if mode == "remote" {
				srv = remotetest.New(t, remotetest.Options{})
			}
			// cacheFor is the cache a workspace uses: the one shared
			// directory, or its own in front of the remote.
			cacheFor := func(ws string) string {
				if srv == nil {
					return filepath.Join(root, "shared-cache")
				}
				return filepath.Join(root, "cache-"+ws)
			}
			cairn := func(ws string, env []string, wantCode int, args ...string) (stdout, stderr string) {
				t.Helper()
				d := filepath.Join(root, ws)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				spec := signersSpec
				if srv != nil && strings.HasPrefix(ws, "reader") {
					// Here the readers trust ci by their spec, relative to it.
					spec = "experiment \"e\" {\n  cache { trusted_keys = [\"keys/ci.pub\"] }\n}\n" + spec
					pub, err := os.ReadFile(ciPub)
					if err != nil {
						t.Fatal(err)
					}
					os.MkdirAll(filepath.Join(d, "keys"), 0o755)
					if err := os.WriteFile(filepath.Join(d, "keys", "ci.pub"), pub, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(d, "experiment.hcl"), []byte(spec), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(bin, args...)
				cmd.Dir = d
				cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+cacheFor(ws), "NO_COLOR=1", "WHO="+ws)
				if srv != nil {
					cmd.Env = append(cmd.Env, "CAIRN_REMOTE_CACHE="+srv.URL)
				}
				cmd.Env = append(cmd.Env, env...)
				var o, e bytes.Buffer
				cmd.Stdout, cmd.Stderr = &o, &e
				err := cmd.Run()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != wantCode {
					t.Fatalf("cairn %v in %s: exit %d, want %d\n%s%s", args, ws, code, wantCode, o.String(), e.String())
				}
				return o.String(), e.String()
			}
			status := func(out, phase, want string) {
				t.Helper()
				if !regexp.MustCompile(`(?m)^` + phase + `: ` + want + `( in .*)?$`).MatchString(out) {
					t.Errorf("want %s %s in:\n%s", phase, want, out)
				}
			}
			read := func(ws, file string) string {
				t.Helper()
				b, err := os.ReadFile(filepath.Join(root, ws, file))
				if err != nil {
					t.Fatal(err)
				}
				return strings.TrimSpace(string(b))
			}

			cairn("ci", []string{"CAIRN_SIGNING_KEY=" + ciKey}, 0, "run", "a")
			cairn("mallory", []string{"CAIRN_SIGNING_KEY=" + malloryKey}, 0, "run", "b")
			cairn("anon", nil, 0, "run", "c")
			noSecret(t, root, srv, ciKey)

			trustCI := []string{"CAIRN_TRUSTED_KEYS=" + ciPub}
			if srv != nil {
				trustCI = nil // the readers' spec says it
			}
			if srv == nil {
				out, _ := cairn("reader", trustCI, 2, "cache", "verify")
				for _, want := range []string{
					"signed by " + ci.String() + ": 1 entry\n",
					"signed by " + malloryFP + " (not a trusted key): 1 entry\n",
					"untrusted entry: signed by " + malloryFP + ", which is not a trusted key",
					"untrusted entry: not signed by a writer's key",
				} {
					if !strings.Contains(out, want) {
						t.Errorf("cache verify does not say %q:\n%s", want, out)
					}
				}
			}

			out, errOut := cairn("reader", trustCI, 0, "run")
			status(out, "a", "restored")
			status(out, "b", "ran")
			status(out, "c", "ran")
			for ph, want := range map[string]string{"a": "ci", "b": "reader", "c": "reader"} {
				if got := read("reader", ph+".txt"); got != want {
					t.Errorf("reader's %s.txt = %q, want %q's", ph, got, want)
				}
			}
			if srv == nil {
				for _, want := range []string{"signed by " + malloryFP + ", which is not a trusted key; the phase runs again", "not signed by a writer's key; the phase runs again"} {
					if !strings.Contains(errOut, want) {
						t.Errorf("no warning %q:\n%s", want, errOut)
					}
				}
			} else {
				for _, want := range []string{"rejected: untrusted entry: signed by " + malloryFP, "rejected: untrusted entry: not signed by a writer's key"} {
					if !strings.Contains(errOut, want) {
						t.Errorf("no warning %q:\n%s", want, errOut)
					}
				}
			}
			why, _ := cairn("reader", trustCI, 0, "why", "a")
			if !strings.Contains(why, "  signed by "+ci.String()+"\n") {
				t.Errorf("cairn why a does not name the signer %s:\n%s", ci, why)
			}
			// The reader's own results are unsigned: it trusts them no
			// more than before, so only a is cached on a second run.
			out, _ = cairn("reader", trustCI, 0, "run")
			status(out, "a", "cached")
			status(out, "b", "ran")

			// Tamper with a's entry: its body now says a.txt holds
			// another blob, with a checksum to match, under ci's signature.
			aKey, signed := findEntry(t, root, srv, cacheFor("ci"), "a")
			tampered := tamperEntry(t, signed)
			if srv != nil {
				srv.Set("ac/"+aKey.String(), tampered)
			} else {
				c, err := cache.Open(cacheFor("ci"))
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(c.Root(), cache.ACDir, aKey.String()[:2], aKey.String())
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, tampered, 0o444); err != nil {
					t.Fatal(err)
				}
				out, _ := cairn("reader2", trustCI, 3, "cache", "verify")
				if !strings.Contains(out, "corrupt entry "+aKey.Short()) || !strings.Contains(out, "the entry was changed after it was signed") {
					t.Errorf("cache verify does not report the tampered entry:\n%s", out)
				}
			}
			out, errOut = cairn("reader2", trustCI, 0, "run", "a")
			status(out, "a", "ran")
			if got := read("reader2", "a.txt"); got != "reader2" {
				t.Errorf("a.txt after a tampered entry = %q, want the reader's own run", got)
			}
			if srv != nil && !strings.Contains(errOut, "the entry was changed after it was signed") {
				t.Errorf("no warning about the tampered remote entry:\n%s", errOut)
			}
			if srv == nil {
				q, _ := filepath.Glob(filepath.Join(cacheFor("reader2"), cache.QuarantineDir, "entry-"+aKey.String()+"*"))
				if len(q) != 1 {
					t.Errorf("the tampered entry is not in quarantine: %q", q)
				}
			}
		})
	}
}

// findEntry returns the key of phase's entry and its stored bytes, as
// the remote or the local cache holds them.
func findEntry(t *testing.T, root string, srv *remotetest.Server, cacheDir, phase string) (cache.ActionID, []byte) {
	t.Helper()
	if srv != nil {
		for path, b := range srv.Objects() {
			if !strings.HasPrefix(path, "ac/") {
				continue
			}
			if e, err := cache.DecodeEntry(b); err == nil && e.Phase == phase {
				return e.Key, b
			}
		}
		t.Fatalf("no entry for %s on the remote", phase)
	}
	c, err := cache.Open(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.EntryKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if e, b, err := c.ReadEntryBytes(k); err == nil && e.Phase == phase && e.SignedBy != nil {
			return k, b
		}
	}
	t.Fatalf("no signed entry for %s in %s", phase, cacheDir)
	return cache.ActionID{}, nil
}

// tamperEntry changes the body of a signed entry (an output's digest, so
// a restore would write other bytes) and fixes its checksum, leaving the
// signature as it was: what someone who can write to the cache, but has
// not the writer's key, can do.
func tamperEntry(t *testing.T, b []byte) []byte {
	t.Helper()
	lines := strings.SplitAfterN(string(b), "\n", 5) // envelope, sig, inner header, checksum, body
	if len(lines) != 5 || lines[0] != "cairn-ac 5\n" {
		t.Fatalf("not a signed entry: %q", b)
	}
	body := lines[4]
	re := regexp.MustCompile(`"digest":"[0-9a-f]{64}"`)
	if !re.MatchString(body) {
		t.Fatalf("no digest in %q", body)
	}
	body = re.ReplaceAllString(body, `"digest":"`+cache.HashBytes([]byte("planted\n")).String()+`"`)
	sum := sha256.Sum256([]byte(body))
	return []byte(lines[0] + lines[1] + lines[2] + hex.EncodeToString(sum[:]) + "\n" + body)
}

// noSecret fails if the secret of the private key file priv is in any
// file under root (workspaces, their state and logs, caches) or on the
// remote.
func noSecret(t *testing.T, root string, srv *remotetest.Server, priv string) {
	t.Helper()
	b, err := os.ReadFile(priv)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	secrets := [][]byte{blk.Bytes, []byte(base64.StdEncoding.EncodeToString(blk.Bytes))}
	check := func(where string, b []byte) {
		for _, s := range secrets {
			if bytes.Contains(b, s) {
				t.Errorf("the signing key's secret is in %s", where)
			}
		}
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil {
				check(p, b)
			}
		}
		return nil
	})
	if srv != nil {
		for p, b := range srv.Objects() {
			check("the remote's "+p, b)
		}
	}
}
