// Package sigkey holds the key files of per-writer signatures: a writer's
// Ed25519 key pair, parsed, loaded, generated, written and fingerprinted.
// It is apart from cache because the files are the command line's and
// people's business (keygen, trusted_keys, cairn why), while the store
// only signs and checks bytes with keys it is handed.
package sigkey

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode"
)

// A writer's own signing key (see cache/FORMAT.md, "Signed entries"). The
// private key is a PEM block holding the 32-byte Ed25519 seed:
//
//	-----BEGIN CAIRN ED25519 PRIVATE KEY-----
//	Comment: alice@laptop
//
//	<base64 of the 32-byte seed>
//	-----END CAIRN ED25519 PRIVATE KEY-----
//
// and the public key one line:
//
//	cairn-ed25519 <base64 of the 32-byte public key> <comment>
//
// The comment names the writer to people (cairn cache verify, cairn why);
// the fingerprint, "SHA256:" and the unpadded base64 of the public key's
// SHA-256 (as OpenSSH prints one), names it unambiguously.

const (
	privateKeyPEMType = "CAIRN ED25519 PRIVATE KEY"
	publicKeyPrefix   = "cairn-ed25519 "
	maxKeyFile        = 16 << 10
	maxKeyComment     = 200
)

// PublicKey is a writer's Ed25519 public key and its comment.
type PublicKey struct {
	Key     ed25519.PublicKey
	Comment string
}

// Fingerprint returns "SHA256:" and the unpadded base64 of the key's SHA-256.
func (k *PublicKey) Fingerprint() string { return Fingerprint(k.Key) }

// Fingerprint returns "SHA256:" and the unpadded base64 of pub's SHA-256.
func Fingerprint(pub []byte) string {
	sum := sha256.Sum256(pub)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// String names the key for people: "comment (fingerprint)", or the
// fingerprint alone when the key has no comment.
func (k *PublicKey) String() string {
	if k.Comment == "" {
		return k.Fingerprint()
	}
	return k.Comment + " (" + k.Fingerprint() + ")"
}

// Marshal returns the key's one-line file form.
func (k *PublicKey) Marshal() []byte {
	s := publicKeyPrefix + base64.StdEncoding.EncodeToString(k.Key)
	if k.Comment != "" {
		s += " " + k.Comment
	}
	return []byte(s + "\n")
}

// ParsePublicKey parses a public key file: one line "cairn-ed25519
// <base64> [comment]", an optional final newline, nothing else.
func ParsePublicKey(b []byte) (*PublicKey, error) {
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%d bytes: not a cairn public key", len(b))
	}
	line := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	rest, ok := strings.CutPrefix(line, publicKeyPrefix)
	if !ok {
		return nil, fmt.Errorf("does not start with %q: not a cairn public key (cairn cache keygen writes one)", strings.TrimSpace(publicKeyPrefix))
	}
	enc, comment, _ := strings.Cut(rest, " ")
	raw, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, errors.New("the key is not the base64 of 32 bytes")
	}
	if err := checkComment(comment); err != nil {
		return nil, err
	}
	return &PublicKey{Key: ed25519.PublicKey(raw), Comment: comment}, nil
}

// LoadPublicKey reads a public key file.
func LoadPublicKey(path string) (*PublicKey, error) {
	b, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	return k, nil
}

// checkComment refuses a comment that would not stay on one line or
// could disguise itself in a terminal.
func checkComment(c string) error {
	if len(c) > maxKeyComment {
		return fmt.Errorf("comment is %d bytes, over %d", len(c), maxKeyComment)
	}
	for _, r := range c {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) && r != ' ' {
			return fmt.Errorf("comment holds %q: use printable characters", r)
		}
	}
	return nil
}

// PrivateKey is a writer's Ed25519 signing key. It prints as its public
// key's fingerprint, never as its secret, and has no exported fields, so
// no log line or JSON encoding can carry the secret.
type PrivateKey struct {
	key     ed25519.PrivateKey
	comment string
}

// GenerateKey returns a new key with comment.
func GenerateKey(comment string) (*PrivateKey, error) {
	if err := checkComment(comment); err != nil {
		return nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return &PrivateKey{key: priv, comment: comment}, nil
}

// Public returns the key's public half, with its comment.
func (k *PrivateKey) Public() *PublicKey {
	return &PublicKey{Key: k.key.Public().(ed25519.PublicKey), Comment: k.comment}
}

// String names the key by its public half.
func (k *PrivateKey) String() string { return "private key of " + k.Public().String() }

// GoString is String, so %#v shows no secret either.
func (k *PrivateKey) GoString() string { return k.String() }

// Sign returns the Ed25519 signature of b.
func (k *PrivateKey) Sign(b []byte) []byte { return ed25519.Sign(k.key, b) }

// MarshalPEM returns the key's file form.
func (k *PrivateKey) MarshalPEM() []byte {
	blk := &pem.Block{Type: privateKeyPEMType, Bytes: k.key.Seed()}
	if k.comment != "" {
		blk.Headers = map[string]string{"Comment": k.comment}
	}
	return pem.EncodeToMemory(blk)
}

// ParsePrivateKey parses a private key file: exactly one PEM block of
// type "CAIRN ED25519 PRIVATE KEY" holding the 32-byte seed, with an
// optional Comment header.
func ParsePrivateKey(b []byte) (*PrivateKey, error) {
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%d bytes: not a cairn private key", len(b))
	}
	blk, rest := pem.Decode(b)
	if blk == nil || blk.Type != privateKeyPEMType {
		return nil, fmt.Errorf("no %q PEM block: not a cairn private key (cairn cache keygen writes one)", privateKeyPEMType)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("text after the key block")
	}
	if len(blk.Bytes) != ed25519.SeedSize {
		return nil, fmt.Errorf("the key holds %d bytes, not %d", len(blk.Bytes), ed25519.SeedSize)
	}
	for h := range blk.Headers {
		if h != "Comment" {
			return nil, fmt.Errorf("unknown header %q in the key block", h)
		}
	}
	comment := blk.Headers["Comment"]
	if err := checkComment(comment); err != nil {
		return nil, err
	}
	return &PrivateKey{key: ed25519.NewKeyFromSeed(blk.Bytes), comment: comment}, nil
}

// LoadPrivateKey reads a private key file. Like ssh, it refuses a file
// that others than its owner may read or write: a key others could read
// is no longer only its writer's.
func LoadPrivateKey(path string) (*PrivateKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("signing key %s: mode %04o lets others read or change it: run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := readKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	k, err := ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return k, nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// WriteKeyPair writes k to prefix (mode 0600) and its public half to
// prefix+".pub" (mode 0644). It refuses to overwrite either file, and
// leaves neither behind when it fails.
func WriteKeyPair(prefix string, k *PrivateKey) (priv, pub string, err error) {
	priv, pub = prefix, prefix+".pub"
	for _, p := range []string{priv, pub} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", fmt.Errorf("%s exists: choose another --out, or remove it first", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
	}
	if err := writeNew(priv, k.MarshalPEM(), 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(pub, k.Public().Marshal(), 0o644); err != nil {
		os.Remove(priv)
		return "", "", err
	}
	return priv, pub, nil
}

// writeNew creates path (never replacing a file) with exactly mode.
func writeNew(path string, b []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	err = f.Chmod(mode) // the umask may have taken bits from a public key
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
