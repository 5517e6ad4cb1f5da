package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Component is one typed record that enters a phase key: the command, one
// env variable, one param, one input file (Name is its workspace-relative
// slash path, Value its mode and digest), one upstream output, the workdir,
// a budget value. The engine decides the records; this package only encodes
// and hashes them. Values must not hold absolute paths, user names or
// secrets, or teammates' keys would differ (or leak).
type Component struct {
	Kind  string `json:"kind"` // e.g. "command", "env", "param", "input", "upstream", "output", "workdir", "budget"
	Name  string `json:"name,omitempty"`
	Value string `json:"value"`
}

// KeyFormat is the version of the key encoding. It is hashed into every key,
// so changing the encoding (or what the engine puts in it) and bumping
// KeyFormat makes every old key miss rather than collide.
const KeyFormat = 1

// keyMagic starts every encoded key; the NUL ends it so no format version
// can run into it.
const keyMagic = "cairn-key\x00"

// debugKeyEnv names the environment variable that, set to "1", makes
// ComputeKey print every component it hashes to stderr, to explain misses.
const debugKeyEnv = "CAIRN_DEBUG_KEY"

// debugKeyOut is where that output goes; tests replace it.
var debugKeyOut io.Writer = os.Stderr

// ComputeKey returns the phase key for comps: the SHA-256 of
// [EncodeComponents](comps). The order of comps does not matter; duplicates
// do. comps is not modified. Two lists give the same key exactly when they
// hold the same components, because every field is length-prefixed.
//
// With CAIRN_DEBUG_KEY=1 in the environment it writes each component and the
// resulting key to stderr, one per line.
func ComputeKey(comps []Component) ActionID {
	enc := EncodeComponents(comps)
	id := ActionID(sha256.Sum256(enc))
	if os.Getenv(debugKeyEnv) == "1" {
		writeKeyDebug(debugKeyOut, id, sortedComponents(comps))
	}
	return id
}

func writeKeyDebug(w io.Writer, id ActionID, sorted []Component) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "cairn key %s: format %d\n", id.Short(), KeyFormat)
	for _, c := range sorted {
		fmt.Fprintf(&b, "cairn key %s: %s %q %q\n", id.Short(), c.Kind, c.Name, c.Value)
	}
	fmt.Fprintf(&b, "cairn key %s: = %s\n", id.Short(), id)
	w.Write(b.Bytes()) // best effort: debugging output must never fail a run
}

// EncodeComponents returns the canonical encoding of comps that
// [ComputeKey] hashes: keyMagic, uvarint(KeyFormat), then for each component
// in (Kind, Name, Value) order uvarint(len)+bytes of Kind, Name and Value.
// See FORMAT.md.
func EncodeComponents(comps []Component) []byte {
	sorted := comps // read only; gathered in order, mostly
	if !slices.IsSortedFunc(comps, compareComponents) {
		sorted = sortedComponents(comps)
	}
	n := len(keyMagic) + binary.MaxVarintLen64
	for _, c := range sorted {
		n += 3*binary.MaxVarintLen64 + len(c.Kind) + len(c.Name) + len(c.Value)
	}
	b := make([]byte, 0, n)
	b = append(b, keyMagic...)
	b = binary.AppendUvarint(b, KeyFormat)
	for _, c := range sorted {
		b = appendString(b, c.Kind)
		b = appendString(b, c.Name)
		b = appendString(b, c.Value)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func sortedComponents(comps []Component) []Component {
	s := slices.Clone(comps)
	slices.SortFunc(s, compareComponents)
	return s
}

func compareComponents(a, b Component) int {
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Value, b.Value)
}

// DecodeComponents is the inverse of [EncodeComponents]. It accepts only
// canonical encodings (the exact bytes EncodeComponents would produce: right
// magic and version, sorted, minimal varints, no trailing bytes) and returns
// an error wrapping [ErrCorrupt] for anything else. It never panics. An
// encoding of no components decodes to a nil slice.
func DecodeComponents(b []byte) ([]Component, error) {
	comps, err := decodeComponents(b)
	if err != nil {
		return nil, fmt.Errorf("decode key: %w: %w", ErrCorrupt, err)
	}
	return comps, nil
}

func decodeComponents(b []byte) ([]Component, error) {
	rest, ok := bytes.CutPrefix(b, []byte(keyMagic))
	if !ok {
		return nil, fmt.Errorf("missing %q header", keyMagic)
	}
	v, n := binary.Uvarint(rest)
	if n <= 0 {
		return nil, fmt.Errorf("bad format version varint")
	}
	if v != KeyFormat {
		return nil, fmt.Errorf("key format %d, want %d", v, KeyFormat)
	}
	rest = rest[n:]
	var comps []Component
	for len(rest) > 0 {
		var c Component
		var err error
		if c.Kind, rest, err = cutString(rest); err != nil {
			return nil, fmt.Errorf("component %d kind: %w", len(comps), err)
		}
		if c.Name, rest, err = cutString(rest); err != nil {
			return nil, fmt.Errorf("component %d name: %w", len(comps), err)
		}
		if c.Value, rest, err = cutString(rest); err != nil {
			return nil, fmt.Errorf("component %d value: %w", len(comps), err)
		}
		comps = append(comps, c)
	}
	// One spelling per list: re-encoding must give the same bytes. This
	// rejects unsorted lists and overlong varints in one check.
	if !bytes.Equal(EncodeComponents(comps), b) {
		return nil, fmt.Errorf("not in canonical form")
	}
	return comps, nil
}

func cutString(b []byte) (string, []byte, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 {
		return "", nil, fmt.Errorf("bad length varint")
	}
	b = b[n:]
	if l > uint64(len(b)) {
		return "", nil, fmt.Errorf("length %d exceeds the %d bytes left", l, len(b))
	}
	return string(b[:l]), b[l:], nil
}
