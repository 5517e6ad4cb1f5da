package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// EntryFormat is the version of the action-entry encoding, written both in
// the header line and in the JSON body.
const EntryFormat = 1

const (
	entryMagic = "cairn-ac"
	// maxEntrySize bounds what DecodeEntry and GetEntry accept, so a planted
	// file cannot make a reader allocate without limit. A phase with a
	// million outputs still fits.
	maxEntrySize = 256 << 20
)

var entryHeader = entryMagic + " " + strconv.Itoa(EntryFormat) + "\n"

// Output types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// OutputFile is one path of a phase's output tree.
type OutputFile struct {
	Path   string `json:"path"`             // slash-separated, relative to the workspace, clean
	Type   string `json:"type"`             // TypeFile, TypeDir or TypeSymlink
	Mode   uint32 `json:"mode"`             // permission bits (0o755 etc.), at most 0o777
	Digest Digest `json:"digest,omitzero"`  // files only
	Size   int64  `json:"size,omitempty"`   // files only
	Target string `json:"target,omitempty"` // symlinks only; relative, stays inside the workspace
}

// Entry is the result of one phase run, stored in the action cache under
// its Key.
type Entry struct {
	Format     int             `json:"format"` // EntryFormat
	Key        ActionID        `json:"key"`
	Phase      string          `json:"phase"`
	Components []Component     `json:"components"` // exactly what was hashed into Key, so "why did this rerun" can diff
	Outputs    []OutputFile    `json:"outputs"`
	ExitCode   int             `json:"exit_code"`
	Stdout     Digest          `json:"stdout,omitzero"` // log blobs
	Stderr     Digest          `json:"stderr,omitzero"`
	Cost       float64         `json:"cost,omitempty"`
	Iterations int64           `json:"iterations,omitempty"`
	Metrics    json.RawMessage `json:"metrics,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	Created    time.Time       `json:"created"`
	Host       string          `json:"host,omitempty"`
	User       string          `json:"user,omitempty"`
}

// EncodeEntry returns the stored form of e: the line "cairn-ac 1", the
// line holding the hex SHA-256 of the body, then the JSON body. It returns
// an error, and no bytes, if e would not pass [DecodeEntry]: so a writer
// learns about a bad entry, not the next reader.
func EncodeEntry(e *Entry) ([]byte, error) {
	if err := validateEntry(e, true); err != nil {
		return nil, fmt.Errorf("encode entry %s: %w", e.Key.Short(), err)
	}
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode entry %s: %w", e.Key.Short(), err)
	}
	body = append(body, '\n')
	sum := sha256.Sum256(body)
	b := make([]byte, 0, len(entryHeader)+65+len(body))
	b = append(b, entryHeader...)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, '\n')
	b = append(b, body...)
	if len(b) > maxEntrySize {
		return nil, fmt.Errorf("encode entry %s: %d bytes, over the %d limit", e.Key.Short(), len(b), maxEntrySize)
	}
	return b, nil
}

// DecodeEntry parses and verifies the stored form of an entry. Every
// failure wraps [ErrCorrupt]: a wrong header or checksum, bad JSON, a format
// other than 1, a Key that is not ComputeKey(Components), an output path
// that is empty, absolute, unclean, contains "..", NUL or a backslash, is
// too long, is duplicated (also up to letter case and Unicode
// normalization) or lies beneath a non-directory output, an unknown type,
// a mode beyond 0o777, a file without a digest, or a symlink target that is
// absolute or leaves the workspace. It never panics.
func DecodeEntry(b []byte) (*Entry, error) {
	e, err := decodeEntry(b)
	if err != nil {
		return nil, fmt.Errorf("decode entry: %w: %w", ErrCorrupt, err)
	}
	return e, nil
}

func decodeEntry(b []byte) (*Entry, error) {
	if len(b) > maxEntrySize {
		return nil, fmt.Errorf("%d bytes, over the %d limit", len(b), maxEntrySize)
	}
	b, _, err := splitSig(b) // the signature is checked by the reader that cares
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(b, []byte(entryHeader))
	if !ok {
		return nil, fmt.Errorf("missing %q header", strings.TrimSpace(entryHeader))
	}
	sumHex, body, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, errors.New("missing checksum line")
	}
	want, err := parseHex32(string(sumHex))
	if err != nil {
		return nil, fmt.Errorf("checksum line: %w", err)
	}
	if got := sha256.Sum256(body); got != want {
		return nil, fmt.Errorf("body hashes to %x, header says %x", got[:6], want[:6])
	}
	e := new(Entry)
	if err := json.Unmarshal(body, e); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	// One in-memory form per stored meaning, so entries compare equal after
	// a round trip: metrics are kept compact, and "null" is no metrics.
	if len(e.Metrics) > 0 {
		var m bytes.Buffer
		if err := json.Compact(&m, e.Metrics); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		e.Metrics = m.Bytes()
		if string(e.Metrics) == "null" {
			e.Metrics = nil
		}
	}
	if err := validateEntry(e, false); err != nil {
		return nil, err
	}
	return e, nil
}

// entryVersion returns the version number in the header line of a stored
// entry, if the line is well formed.
func entryVersion(b []byte) (int, bool) {
	line, _, ok := bytes.Cut(b[:min(len(b), 32)], []byte("\n"))
	if !ok {
		return 0, false
	}
	v, ok := bytes.CutPrefix(line, []byte(entryMagic+" "))
	if !ok {
		return 0, false
	}
	if len(v) == 0 || len(v) > 9 || strings.Trim(string(v), "0123456789") != "" {
		return 0, false
	}
	n, _ := strconv.Atoi(string(v))
	return n, true
}

// validateEntry checks everything DecodeEntry promises. encoding adds the
// checks JSON decoding makes implicitly (valid UTF-8: json.Marshal would
// replace invalid bytes, changing the components and so the key).
func validateEntry(e *Entry, encoding bool) error {
	if e.Format != EntryFormat {
		return fmt.Errorf("format %d, want %d", e.Format, EntryFormat)
	}
	if encoding {
		if err := checkUTF8(e); err != nil {
			return err
		}
		if len(e.Metrics) > 0 && !json.Valid(e.Metrics) {
			return errors.New("metrics: invalid JSON")
		}
	}
	for i, c := range e.Components {
		if c.Kind == "" {
			return fmt.Errorf("component %d (%q): empty kind", i, c.Name)
		}
	}
	if got := ActionID(sha256.Sum256(EncodeComponents(e.Components))); got != e.Key {
		return fmt.Errorf("key %s, but its components hash to %s", e.Key.Short(), got.Short())
	}
	return checkOutputs(e.Outputs)
}

// checkOutputs checks an output tree as restore needs it: every entry
// valid on its own, no path listed twice, no two paths that name one file
// on a case-insensitive or normalizing filesystem (macOS, Windows), and
// nothing beneath a file or a symlink.
func checkOutputs(outputs []OutputFile) error {
	types := make(map[string]string, len(outputs))
	folded := make(map[string]string, len(outputs))
	for _, o := range outputs {
		if err := checkOutput(o); err != nil {
			return fmt.Errorf("output %q: %w", o.Path, err)
		}
		if _, dup := types[o.Path]; dup {
			return fmt.Errorf("output %q: listed twice", o.Path)
		}
		types[o.Path] = o.Type
		f := foldPath(o.Path)
		if other, ok := folded[f]; ok {
			return fmt.Errorf("outputs %q and %q differ only in letter case or Unicode normalization; they would be one file on macOS and Windows", other, o.Path)
		}
		folded[f] = o.Path
	}
	// Nothing may live beneath a file or a symlink: restoring it would
	// fail, or write through the link.
	for _, o := range outputs {
		for p := path.Dir(o.Path); p != "."; p = path.Dir(p) {
			if t, ok := types[p]; ok && t != TypeDir {
				return fmt.Errorf("output %q: beneath %s %q", o.Path, t, p)
			}
		}
	}
	return nil
}

// foldPath maps the paths a case-insensitive, normalization-insensitive
// filesystem treats as one to one string.
func foldPath(p string) string {
	if isASCII(p) {
		return strings.ToLower(p)
	}
	return strings.ToLower(norm.NFC.String(p))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func checkOutput(o OutputFile) error {
	if err := checkRelPath(o.Path); err != nil {
		return err
	}
	if o.Mode&^0o777 != 0 {
		return fmt.Errorf("mode %#o has bits beyond 0o777", o.Mode)
	}
	if o.Size < 0 {
		return fmt.Errorf("negative size %d", o.Size)
	}
	switch o.Type {
	case TypeFile:
		if o.Digest.IsZero() {
			return errors.New("file without a digest")
		}
		if o.Target != "" {
			return errors.New("file with a symlink target")
		}
	case TypeDir:
		if !o.Digest.IsZero() || o.Size != 0 || o.Target != "" {
			return errors.New("directory with a digest, size or target")
		}
	case TypeSymlink:
		if !o.Digest.IsZero() || o.Size != 0 {
			return errors.New("symlink with a digest or size")
		}
		if err := checkLinkTarget(o.Path, o.Target); err != nil {
			return fmt.Errorf("target %q: %w", o.Target, err)
		}
	default:
		return fmt.Errorf("unknown type %q", o.Type)
	}
	return nil
}

// Limits on output paths, those of Linux (PATH_MAX, NAME_MAX): a longer
// path could not be restored anyway.
const (
	maxPathLen = 4096
	maxNameLen = 255
)

// checkRelPath accepts clean, relative, slash-separated paths that stay
// inside the workspace. A backslash is refused: on Windows it separates
// directories, so "a\..\..\x" would climb out of the workspace there.
func checkRelPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.IndexByte(p, 0) >= 0:
		return errors.New("NUL in path")
	case strings.IndexByte(p, '\\') >= 0:
		return errors.New("backslash in path (a directory separator on Windows)")
	case path.IsAbs(p):
		return errors.New("absolute path")
	case path.Clean(p) != p:
		return errors.New("path not clean")
	case p == ".":
		return errors.New("path is the workspace itself")
	case p == ".." || strings.HasPrefix(p, "../"):
		return errors.New("path leaves the workspace")
	case len(p) > maxPathLen:
		return fmt.Errorf("path of %d bytes, over the %d limit", len(p), maxPathLen)
	}
	for name := range strings.SplitSeq(p, "/") {
		if len(name) > maxNameLen {
			return fmt.Errorf("name of %d bytes, over the %d limit", len(name), maxNameLen)
		}
	}
	return nil
}

// checkLinkTarget accepts a relative target that, resolved lexically from
// the link's directory, stays inside the workspace. (Restore must still not
// follow links it has itself created; this check keeps honest entries
// honest and rejects the obvious attacks early.)
func checkLinkTarget(link, target string) error {
	switch {
	case target == "":
		return errors.New("empty target")
	case strings.IndexByte(target, 0) >= 0:
		return errors.New("NUL in target")
	case strings.IndexByte(target, '\\') >= 0:
		return errors.New("backslash in target (a directory separator on Windows)")
	case path.IsAbs(target):
		return errors.New("absolute target")
	case len(target) > maxPathLen:
		return fmt.Errorf("target of %d bytes, over the %d limit", len(target), maxPathLen)
	}
	j := path.Join(path.Dir(link), target)
	if j == ".." || strings.HasPrefix(j, "../") {
		return errors.New("target leaves the workspace")
	}
	return nil
}

func checkUTF8(e *Entry) error {
	strs := []string{e.Phase, e.Host, e.User}
	for _, c := range e.Components {
		strs = append(strs, c.Kind, c.Name, c.Value)
	}
	for _, o := range e.Outputs {
		strs = append(strs, o.Path, o.Type, o.Target)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%q is not valid UTF-8", s)
		}
	}
	return nil
}
