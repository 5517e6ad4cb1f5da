// Package entrysig is the signature layer of a stored cache entry, as
// bytes: a writer's Ed25519 envelope (format 5) sealed and opened, and
// the team's HMAC line appended and split off. Which keys to trust, and
// what a failed check means for a lookup, is package cache's business.
package entrysig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/cairn-run/cairn/cache/sigkey"
)

// Entries may be signed with a team key so that readers can tell an entry
// written by a holder of the key from one planted by anyone else who can
// write to the shared directory or the remote (threat S1 of RELIABILITY.md:
// a valid blob under a key it was not built for). Blobs need no signature:
// their name is their content's hash.
//
// A signed entry is the stored form of FORMAT.md followed by one line:
//
//	sig hmac-sha256 <64 hex>\n
//
// the HMAC-SHA256, under the key, of everything before that line (header,
// checksum line and body), so the signature covers the key, the outputs'
// digests and the format version.

// SigPrefix starts the team signature line.
const SigPrefix = "sig hmac-sha256 "

// Entries may also be signed by their writer's own Ed25519 key (package sigkey),
// so that a reader trusts writers one by one and can tell who wrote an
// entry. Such an entry is an envelope (format 5) around the stored form of
// an entry of format 1, 2, 4 or 6:
//
//	cairn-ac 5\n
//	sig ed25519 <base64 public key> <base64 signature>\n
//	<the entry>
//
// the signature being Ed25519's over the enclosed entry's bytes. A cairn
// that predates it reads the header as a newer format: a miss, left in
// place. The team HMAC line, when there is one too, follows and covers
// the envelope.

// EnvelopeHeader and EdSigPrefix start an envelope's two lines.
const (
	EnvelopeHeader = "cairn-ac 5\n"
	EdSigPrefix    = "sig ed25519 "
)

// Seal returns the signed envelope around inner, a stored entry.
func Seal(inner []byte, k *sigkey.PrivateKey) []byte {
	pub := base64.StdEncoding.EncodeToString(k.Public().Key)
	sig := base64.StdEncoding.EncodeToString(k.Sign(inner))
	out := make([]byte, 0, len(EnvelopeHeader)+len(EdSigPrefix)+len(pub)+len(sig)+2+len(inner))
	out = append(out, EnvelopeHeader...)
	out = append(out, EdSigPrefix...)
	out = append(out, pub...)
	out = append(out, ' ')
	out = append(out, sig...)
	out = append(out, '\n')
	return append(out, inner...)
}

// Open returns the entry inside b and the key that signed it, once
// the signature checks; b itself and a nil key if b is not an envelope.
// A malformed envelope or a signature that does not check is an error.
func Open(b []byte) (inner []byte, signer ed25519.PublicKey, err error) {
	rest, ok := bytes.CutPrefix(b, []byte(EnvelopeHeader))
	if !ok {
		return b, nil, nil
	}
	line, inner, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, nil, errors.New("signed entry: missing signature line")
	}
	fields, ok := bytes.CutPrefix(line, []byte(EdSigPrefix))
	if !ok {
		return nil, nil, errors.New("signed entry: the line after the header is not an ed25519 signature")
	}
	pubB64, sigB64, ok := bytes.Cut(fields, []byte(" "))
	if !ok {
		return nil, nil, errors.New("signed entry: malformed signature line")
	}
	pub, err1 := base64.StdEncoding.Strict().DecodeString(string(pubB64))
	sig, err2 := base64.StdEncoding.Strict().DecodeString(string(sigB64))
	if err1 != nil || err2 != nil || len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return nil, nil, errors.New("signed entry: malformed signature line")
	}
	if bytes.HasPrefix(inner, []byte(EnvelopeHeader)) {
		return nil, nil, errors.New("signed entry: an envelope inside an envelope")
	}
	if !ed25519.Verify(pub, inner, sig) {
		return nil, nil, fmt.Errorf("signed entry: the signature of %s does not check: the entry was changed after it was signed", sigkey.Fingerprint(pub))
	}
	return inner, pub, nil
}

// Team signs stored entries with a team key.
type Team struct{ key []byte }

// NewTeam returns the signer for key.
func NewTeam(key []byte) *Team { return &Team{key: bytes.Clone(key)} }

// MAC returns the HMAC-SHA256 of b under the key.
func (s *Team) MAC(b []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(b)
	return m.Sum(nil)
}

// Append returns the signed form of an unsigned stored entry.
func (s *Team) Append(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(SigPrefix)+65)
	out = append(out, b...)
	out = append(out, SigPrefix...)
	out = hex.AppendEncode(out, s.MAC(b))
	return append(out, '\n')
}

// Split separates a stored entry into the signed part and its signature
// line's MAC (nil if the entry has no signature line). A malformed
// signature line is an error.
func Split(b []byte) (signed, mac []byte, err error) {
	// The body is one JSON line, so a signature is the last line and
	// starts right after the body's newline.
	i := bytes.LastIndex(b, []byte("\n"+SigPrefix))
	if i < 0 {
		return b, nil, nil
	}
	signed, line := b[:i+1], b[i+1:]
	hexMAC, ok := bytes.CutPrefix(line, []byte(SigPrefix))
	if !ok || len(hexMAC) != 65 || hexMAC[64] != '\n' {
		return nil, nil, errors.New("malformed signature line")
	}
	mac = make([]byte, 32)
	if _, err := hex.Decode(mac, hexMAC[:64]); err != nil {
		return nil, nil, fmt.Errorf("signature line: %w", err)
	}
	return signed, mac, nil
}
