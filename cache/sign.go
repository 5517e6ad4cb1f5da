package cache

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

// checkTrust says whether a stored entry may be used under the directory's
// signing policy: always when signatures are not required; otherwise only
// with a signature that checks under the key. The error wraps ErrUntrusted.
func (c *Dir) CheckTrust(b []byte) error {
	if !c.opts.RequireSigned {
		return nil
	}
	signed, mac, err := splitSig(b)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	case mac == nil:
		return fmt.Errorf("%w: not signed", ErrUntrusted)
	case !hmac.Equal(mac, c.sign.mac(signed)):
		return fmt.Errorf("%w: signed with another key", ErrUntrusted)
	}
	return nil
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
