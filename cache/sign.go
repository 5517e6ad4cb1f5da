package cache

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

const sigPrefix = "sig hmac-sha256 "

// Entries may also be signed by their writer's own Ed25519 key (package sigkey),
// so that a reader trusts writers one by one and can tell who wrote an
// entry. Such an entry is an envelope (format 5) around the stored form of
// an entry of format 1, 2 or 4:
//
//	cairn-ac 5\n
//	sig ed25519 <base64 public key> <base64 signature>\n
//	<the entry>
//
// the signature being Ed25519's over the enclosed entry's bytes. A cairn
// that predates it reads the header as a newer format: a miss, left in
// place. The team HMAC line, when there is one too, follows and covers
// the envelope.

const (
	envelopeHeader = "cairn-ac 5\n"
	edSigPrefix    = "sig ed25519 "
)

// sealEnvelope returns the signed envelope around inner, a stored entry.
func sealEnvelope(inner []byte, k *sigkey.PrivateKey) []byte {
	pub := base64.StdEncoding.EncodeToString(k.Public().Key)
	sig := base64.StdEncoding.EncodeToString(k.Sign(inner))
	out := make([]byte, 0, len(envelopeHeader)+len(edSigPrefix)+len(pub)+len(sig)+2+len(inner))
	out = append(out, envelopeHeader...)
	out = append(out, edSigPrefix...)
	out = append(out, pub...)
	out = append(out, ' ')
	out = append(out, sig...)
	out = append(out, '\n')
	return append(out, inner...)
}

// openEnvelope returns the entry inside b and the key that signed it, once
// the signature checks; b itself and a nil key if b is not an envelope.
// A malformed envelope or a signature that does not check is an error.
func openEnvelope(b []byte) (inner []byte, signer ed25519.PublicKey, err error) {
	rest, ok := bytes.CutPrefix(b, []byte(envelopeHeader))
	if !ok {
		return b, nil, nil
	}
	line, inner, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, nil, errors.New("signed entry: missing signature line")
	}
	fields, ok := bytes.CutPrefix(line, []byte(edSigPrefix))
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
	if bytes.HasPrefix(inner, []byte(envelopeHeader)) {
		return nil, nil, errors.New("signed entry: an envelope inside an envelope")
	}
	if !ed25519.Verify(pub, inner, sig) {
		return nil, nil, fmt.Errorf("signed entry: the signature of %s does not check: the entry was changed after it was signed", sigkey.Fingerprint(pub))
	}
	return inner, pub, nil
}

// ErrUntrusted means an entry was found but is not signed with the team
// key while [Options.RequireSigned] is set: a miss, never used.
var ErrUntrusted = errors.New("untrusted entry")

type signer struct{ key []byte }

func newSigner(key []byte) *signer { return &signer{key: bytes.Clone(key)} }

func (s *signer) mac(b []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(b)
	return m.Sum(nil)
}

// appendSig returns the signed form of an unsigned stored entry.
func (s *signer) appendSig(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(sigPrefix)+65)
	out = append(out, b...)
	out = append(out, sigPrefix...)
	out = hex.AppendEncode(out, s.mac(b))
	return append(out, '\n')
}

// splitSig separates a stored entry into the signed part and its signature
// line's MAC (nil if the entry has no signature line). A malformed
// signature line is an error.
func splitSig(b []byte) (signed, mac []byte, err error) {
	// The body is one JSON line, so a signature is the last line and
	// starts right after the body's newline.
	i := bytes.LastIndex(b, []byte("\n"+sigPrefix))
	if i < 0 {
		return b, nil, nil
	}
	signed, line := b[:i+1], b[i+1:]
	hexMAC, ok := bytes.CutPrefix(line, []byte(sigPrefix))
	if !ok || len(hexMAC) != 65 || hexMAC[64] != '\n' {
		return nil, nil, errors.New("malformed signature line")
	}
	mac = make([]byte, 32)
	if _, err := hex.Decode(mac, hexMAC[:64]); err != nil {
		return nil, nil, fmt.Errorf("signature line: %w", err)
	}
	return signed, mac, nil
}

// CheckTrust says whether a stored entry may be used under the directory's
// signing policy: always when none is set. With RequireSigned, only with a
// team signature that checks under the key; with TrustedKeys, only with a
// writer's signature (that checks) by one of the keys; with both, only
// with both. The error wraps ErrUntrusted.
func (c *Dir) CheckTrust(b []byte) error { return c.checkTrust(b, nil) }

// checkTrust is CheckTrust; e, if not nil, is b as ParseEntry returned it
// (its writer's signature checked already).
func (c *Dir) checkTrust(b []byte, e *Entry) error {
	if !c.opts.RequireSigned && c.trusted == nil {
		return nil
	}
	signed, mac, err := splitSig(b)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	if c.opts.RequireSigned {
		switch {
		case mac == nil:
			return fmt.Errorf("%w: not signed with the team key", ErrUntrusted)
		case !hmac.Equal(mac, c.sign.mac(signed)):
			return fmt.Errorf("%w: signed with another team key", ErrUntrusted)
		}
	}
	if c.trusted == nil {
		return nil
	}
	var signer ed25519.PublicKey
	if e != nil {
		if e.SignedBy != nil {
			signer = e.SignedBy.Key
		}
	} else if _, signer, err = openEnvelope(signed); err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	if signer == nil {
		return fmt.Errorf("%w: not signed by a writer's key", ErrUntrusted)
	}
	if _, ok := c.trusted[string(signer)]; !ok {
		return fmt.Errorf("%w: signed by %s, which is not a trusted key", ErrUntrusted, sigkey.Fingerprint(signer))
	}
	return nil
}

// nameSigner gives e's signer the comment of the trusted key it is.
func (c *Dir) nameSigner(e *Entry) {
	if e.SignedBy == nil {
		return
	}
	if k, ok := c.trusted[string(e.SignedBy.Key)]; ok {
		e.SignedBy = k
	}
}

// Signer returns the key that signed stored entry bytes b, with its
// comment if the directory trusts it; nil if b has no writer's signature
// that checks.
func (c *Dir) Signer(b []byte) *sigkey.PublicKey {
	signed, _, err := splitSig(b)
	if err != nil {
		return nil
	}
	_, pub, err := openEnvelope(signed)
	if err != nil || pub == nil {
		return nil
	}
	if k, ok := c.trusted[string(pub)]; ok {
		return k
	}
	return &sigkey.PublicKey{Key: pub}
}

// Trusts reports whether k is one of the directory's TrustedKeys.
func (c *Dir) Trusts(k *sigkey.PublicKey) bool {
	_, ok := c.trusted[string(k.Key)]
	return ok
}

// Signed reports whether stored entry bytes b carry a signature that checks
// under the directory's key (false without a key).
func (c *Dir) Signed(b []byte) bool {
	if c.sign == nil {
		return false
	}
	signed, mac, err := splitSig(b)
	return err == nil && mac != nil && hmac.Equal(mac, c.sign.mac(signed))
}
