package cache

import (
	"crypto/ed25519"
	"crypto/hmac"
	"errors"
	"fmt"

	"github.com/cairn-run/cairn/cache/entrysig"
	"github.com/cairn-run/cairn/cache/sigkey"
)

// Entries may be signed with a team key, and by their writer (format 5):
// see package entrysig for the bytes.

const sigPrefix = entrysig.SigPrefix

const (
	envelopeHeader = entrysig.EnvelopeHeader
	edSigPrefix    = entrysig.EdSigPrefix
)

func sealEnvelope(inner []byte, k *sigkey.PrivateKey) []byte { return entrysig.Seal(inner, k) }

func openEnvelope(b []byte) ([]byte, ed25519.PublicKey, error) { return entrysig.Open(b) }

func splitSig(b []byte) (signed, mac []byte, err error) { return entrysig.Split(b) }

// ErrUntrusted means an entry was found but is not signed with the team
// key while [Options.RequireSigned] is set: a miss, never used.
var ErrUntrusted = errors.New("untrusted entry")

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
		case !hmac.Equal(mac, c.sign.MAC(signed)):
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
	return err == nil && mac != nil && hmac.Equal(mac, c.sign.MAC(signed))
}
