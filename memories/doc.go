// Package memories holds the engine's memories in .cairn: the digest of
// each input file by its stat (digests, and digests-recent beside it:
// recent.go), the key each phase last succeeded or hit with (keys), and
// each phase's key by a fingerprint of what it was computed from
// (phasekeys). Each is a hint (package hint): a missing or damaged file
// costs time, never a wrong result. They are apart from the engine
// because each is a file format with its own racy rule and its own tests,
// which need no spec, no run and no cache.
package memories
