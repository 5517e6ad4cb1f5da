package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-run/cairn/cache/outpath"
	"github.com/cairn-run/cairn/internal/cores"

	"github.com/cairn-run/cairn/cache/sigkey"
)

// Versions of the action-entry encoding, written both in the header line
// and in the JSON body. An entry is written in format 1 unless it carries
// inline blobs, which need format 2, or temporary outputs, which need
// format 4 (3 is a pack file's, see EntryFormatPacked): a cairn that
// knows only an older format treats a newer entry as a miss and leaves it
// alone, where it would have quarantined an entry whose blobs it cannot
// find.
const (
	EntryFormat       = 1 // blobs in cas/ only
	EntryFormatInline = 2 // small blobs may be inline (Entry.Inline)
	EntryFormatTemp   = 4 // as 2, and outputs may be temporary (OutputFile.Temporary)
	// EntryFormatSigned is the header of an entry signed with a writer's
	// own key: an envelope around an entry of format 1, 2 or 4 (sign.go).
	EntryFormatSigned = 5
	// EntryFormatChunked is 4 with the input components in chunks
	// (Entry.Chunks) when there are many.
	EntryFormatChunked = 6

	maxEntryFormat = EntryFormatChunked // the newest this cairn reads
)

// InlineMax is the largest blob a writer puts inside an entry rather than
// in cas/, and InlineTotalMax the most inline bytes one entry gets (the
// rest go to cas/). Small outputs inline cost no blob file, no shard
// directory and no fsyncs of their own. Readers accept any inline size
// within the entry's own limit, so these may change without a new format.
const (
	InlineMax      = 4 << 10
	InlineTotalMax = 64 << 10
)

const (
	entryMagic = "cairn-ac"
	// maxEntrySize bounds what DecodeEntry and GetEntry accept, so a planted
	// file cannot make a reader allocate without limit. A phase with a
	// million outputs still fits.
	maxEntrySize = 256 << 20
)

var (
	entryHeader       = entryHeaderFor(EntryFormat)
	entryHeaderInline = entryHeaderFor(EntryFormatInline)
	entryHeaderTemp   = entryHeaderFor(EntryFormatTemp)
	entryHeaderChunks = entryHeaderFor(EntryFormatChunked)
)

func entryHeaderFor(format int) string {
	return entryMagic + " " + strconv.Itoa(format) + "\n"
}

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
	// Temporary marks a path of an output the phase declares temporary:
	// recorded (a file's digest enters its dependants' keys) but not
	// stored, neither in cas/ nor inline, so it cannot be restored. Format
	// 4 only.
	Temporary bool `json:"temporary,omitempty"`
	// MTime is a file's modification time when it was stored, in Unix
	// nanoseconds; a restore gives it back, so a restored file keeps its
	// place among files that stayed (make, an index older than its data).
	// Zero (entries written before it was recorded) leaves the restored
	// file's time alone. Files only; it is in neither the key nor any
	// digest, so equal bytes still give equal keys downstream.
	MTime int64 `json:"mtime,omitempty"`
}

// InlineBlob is a blob stored inside an entry instead of in cas/: the
// content of a small output file or log the entry references by Digest.
type InlineBlob struct {
	Digest Digest `json:"digest"`
	Data   []byte `json:"data"` // base64 in the JSON body
}

// Entry is the result of one phase run, stored in the action cache under
// its Key.
type Entry struct {
	Format     int             `json:"format"` // EntryFormat, EntryFormatInline when Inline is not empty, EntryFormatTemp when an output is temporary
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
	// Inline holds blobs the entry references that are stored in it
	// rather than in cas/ (format 2 only), each once, in the order the
	// writer found them.
	Inline []InlineBlob `json:"inline,omitempty"`
	// Chunks (format 6) hold the entry's many input components, in order;
	// the stored body's Components the others. Read whole, Components are
	// all again; lean or as a head, Lean is set.
	Chunks []Chunk `json:"chunks,omitempty"`

	// Lean is set on an entry that came from the workspace memo through
	// [Dir.GetEntryLean]: its Components then hold only the declared
	// outputs (kind [KindOutput]), the rest being four fifths of an entry
	// and never needed by a phase found cached. A lean entry cannot be
	// stored (its components do not hash to its key); [Dir.GetEntry]
	// returns the entry whole. Never stored.
	Lean bool `json:"-"`
	// Keyed, if set, is NewKeyed(Components): storing the entry takes
	// its key and chunks rather than encoding the components again (only
	// if it is of this very Components slice and of Key). Never stored.
	Keyed *Keyed `json:"-"`
	// SignedBy is the key of the writer that signed the entry (format 5),
	// or nil. Its Comment is set only when the reading Dir trusts the key.
	// Never stored: the signature is.
	SignedBy *sigkey.PublicKey `json:"-"`
}

// KindOutput is the kind of the component naming one of the outputs a
// key declares; the workspace memo keeps these components of an entry
// (see Entry.Lean).
const KindOutput = "output"

// InlineData returns the content of blob d if e holds it inline.
func (e *Entry) InlineData(d Digest) ([]byte, bool) {
	for i := range e.Inline {
		if e.Inline[i].Digest == d {
			return e.Inline[i].Data, true
		}
	}
	return nil, false
}

// EncodeEntry returns the stored form of e: the line "cairn-ac N" (N is
// e.Format), the line holding the hex SHA-256 of the body, then the JSON
// body. It returns
// an error, and no bytes, if e would not pass [DecodeEntry]: so a writer
// learns about a bad entry, not the next reader.
func EncodeEntry(e *Entry) ([]byte, error) { return encodeEntry(e, nil) }

// encodeEntry is EncodeEntry, but for the key of e's components, which k,
// if not nil, holds.
func encodeEntry(e *Entry, k *Keyed) ([]byte, error) {
	if err := validateEntry(e, true, k); err != nil {
		return nil, fmt.Errorf("encode entry %s: %w", e.Key.Short(), err)
	}
	stored := e
	if len(e.Chunks) > 0 {
		s := *e
		s.Components = nil
		for _, c := range e.Components {
			if c.Kind != ChunkKind {
				s.Components = append(s.Components, c)
			}
		}
		stored = &s
	}
	body, err := json.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("encode entry %s: %w", e.Key.Short(), err)
	}
	body = append(body, '\n')
	sum := sha256.Sum256(body)
	header := entryHeaderFor(e.Format)
	b := make([]byte, 0, len(header)+65+len(body))
	b = append(b, header...)
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
// other than 1 or 2 or other than the header's, inline blobs in format 1
// or whose content does not hash to their digest, listed twice or
// referenced by nothing, a Key that is not ComputeKey(Components), an output path
// that is empty, absolute, unclean, contains "..", NUL or a backslash, is
// too long, is duplicated (also up to letter case and Unicode
// normalization) or lies beneath a non-directory output, an unknown type,
// a mode beyond 0o777, a file without a digest, or a symlink target that is
// absolute or leaves the workspace. It never panics.
func DecodeEntry(b []byte) (*Entry, error) {
	e, err := ParseEntry(b)
	if err != nil {
		return nil, fmt.Errorf("decode entry: %w: %w", ErrCorrupt, err)
	}
	return e, nil
}

// ParseEntry is DecodeEntry with the cause alone as its error, for a
// report that classifies it itself.
func ParseEntry(b []byte) (*Entry, error) {
	if len(b) > maxEntrySize {
		return nil, fmt.Errorf("%d bytes, over the %d limit", len(b), maxEntrySize)
	}
	b, _, err := splitSig(b) // the team signature is checked by the reader that cares
	if err != nil {
		return nil, err
	}
	// A writer's signature is checked by every reader: a change made
	// after signing is damage, whoever the reader trusts.
	b, signer, err := openEnvelope(b)
	if err != nil {
		return nil, err
	}
	format := EntryFormat
	rest, ok := bytes.CutPrefix(b, []byte(entryHeader))
	if !ok {
		format = EntryFormatInline
		if rest, ok = bytes.CutPrefix(b, []byte(entryHeaderInline)); !ok {
			format = EntryFormatTemp
			if rest, ok = bytes.CutPrefix(b, []byte(entryHeaderTemp)); !ok {
				format = EntryFormatChunked
				if rest, ok = bytes.CutPrefix(b, []byte(entryHeaderChunks)); !ok {
					return nil, fmt.Errorf("missing %q header", strings.TrimSpace(entryHeader))
				}
			}
		}
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
	if e.Format != format {
		return nil, fmt.Errorf("body says format %d, header %d", e.Format, format)
	}
	if err := validateEntry(e, false, nil); err != nil {
		return nil, err
	}
	e.Lean = len(e.Chunks) > 0 // its inputs are in the chunks, not read here
	if signer != nil {
		e.SignedBy = &sigkey.PublicKey{Key: signer}
	}
	return e, nil
}

// IsNewerEntry reports whether b, a stored entry, is in a format newer
// than this cairn reads: not corrupt, to be left alone.
func IsNewerEntry(b []byte) bool { v, ok := entryVersion(b); return ok && v > maxEntryFormat }

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
// replace invalid bytes, changing the components and so the key). k, if
// not nil, is NewKeyed of e's components, whose key it need not compute.
func validateEntry(e *Entry, encoding bool, k *Keyed) error {
	if err := checkFormat(e); err != nil {
		return err
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
	if err := checkChunks(e, encoding); err != nil {
		return err
	}
	// With chunks, the key is checked once they are read (fillChunks).
	if len(e.Chunks) == 0 || encoding {
		got := k.keyOr(e.Components)
		if got != e.Key {
			return fmt.Errorf("key %s, but its components hash to %s", e.Key.Short(), got.Short())
		}
	}
	if err := checkOutputs(e.Outputs); err != nil {
		return err
	}
	return checkInline(e, true)
}

// checkFormat checks that e's format is one this cairn reads and allows
// what e holds: inline blobs from format 2, temporary outputs in 4.
func checkFormat(e *Entry) error {
	switch {
	case e.Format != EntryFormat && e.Format != EntryFormatInline && e.Format != EntryFormatTemp && e.Format != EntryFormatChunked:
		return fmt.Errorf("format %d, want %d, %d, %d or %d", e.Format, EntryFormat, EntryFormatInline, EntryFormatTemp, EntryFormatChunked)
	case e.Format < EntryFormatInline && len(e.Inline) > 0:
		return fmt.Errorf("format %d with inline blobs (they need format %d)", e.Format, EntryFormatInline)
	case e.Format != EntryFormatChunked && len(e.Chunks) > 0:
		return fmt.Errorf("format %d with input chunks (they need format %d)", e.Format, EntryFormatChunked)
	}
	if e.Format < EntryFormatTemp {
		for _, o := range e.Outputs {
			if o.Temporary {
				return fmt.Errorf("format %d with temporary output %q (it needs format %d)", e.Format, o.Path, EntryFormatTemp)
			}
		}
	}
	return nil
}

// checkChunks checks e's chunks: each of at least one component and
// byte; decoded, no input in the body beside them; encoding (e whole),
// counts that add up to its inputs.
func checkChunks(e *Entry, encoding bool) error {
	if len(e.Chunks) == 0 {
		return nil
	}
	inputs := 0
	for _, c := range e.Components {
		if c.Kind == ChunkKind {
			inputs++
		}
	}
	if !encoding && inputs > 0 {
		return fmt.Errorf("%d input components in the body beside chunks", inputs)
	}
	total := 0
	for _, ch := range e.Chunks {
		if ch.Count <= 0 || ch.Size <= 0 || ch.Count > maxEntrySize || ch.Size > maxEntrySize {
			return fmt.Errorf("chunk %s: %d components in %d bytes", ch.Digest.Short(), ch.Count, ch.Size)
		}
		total += ch.Count
	}
	if encoding && total != inputs {
		return fmt.Errorf("chunks of %d components for %d inputs", total, inputs)
	}
	return nil
}

// checkInline checks e's inline blobs: each is listed once, is referenced
// by the entry, as a log or as an output file of the same size, and (if
// hash) hashes to its digest. Whoever uses inline content checks its
// digest again (restoreBytes, ReadEntryBlob), so the entry memo, under
// its own checksum, skips the hashing.
func checkInline(e *Entry, hash bool) error {
	if len(e.Inline) == 0 {
		return nil
	}
	// size, or -1 for a log, of each blob the entry references; of
	// output files sharing a digest, the last one's size
	ref := func(d Digest) (int64, bool) {
		for i := len(e.Outputs) - 1; i >= 0; i-- {
			if o := &e.Outputs[i]; o.Type == TypeFile && !o.Temporary && o.Digest == d {
				return o.Size, true
			}
		}
		return -1, !d.IsZero() && (d == e.Stdout || d == e.Stderr)
	}
	if len(e.Outputs) > 16 {
		// Many outputs: one map rather than a scan per blob.
		refs := make(map[Digest]int64, len(e.Outputs)+2)
		for _, o := range e.Outputs {
			if o.Type == TypeFile && !o.Temporary {
				refs[o.Digest] = o.Size
			}
		}
		ref = func(d Digest) (int64, bool) {
			if size, ok := refs[d]; ok {
				return size, true
			}
			return -1, !d.IsZero() && (d == e.Stdout || d == e.Stderr)
		}
	}
	seen := func(i int) bool { // whether Inline[i]'s digest came before
		for _, b := range e.Inline[:i] {
			if b.Digest == e.Inline[i].Digest {
				return true
			}
		}
		return false
	}
	if len(e.Inline) > 16 {
		firstAt := make(map[Digest]int, len(e.Inline))
		for i, b := range e.Inline {
			if _, ok := firstAt[b.Digest]; !ok {
				firstAt[b.Digest] = i
			}
		}
		seen = func(i int) bool { return firstAt[e.Inline[i].Digest] < i }
	}
	for i, b := range e.Inline {
		switch size, ok := ref(b.Digest); {
		case seen(i):
			return fmt.Errorf("inline blob %s listed twice", b.Digest.Short())
		case !ok:
			return fmt.Errorf("inline blob %s is referenced by nothing", b.Digest.Short())
		case size >= 0 && size != int64(len(b.Data)):
			return fmt.Errorf("inline blob %s holds %d bytes, its output %d", b.Digest.Short(), len(b.Data), size)
		case hash && HashBytes(b.Data) != b.Digest:
			return fmt.Errorf("inline blob %s: content hashes to %s", b.Digest.Short(), HashBytes(b.Data).Short())
		}
	}
	return nil
}

// checkOutputs checks an output tree as restore needs it: every entry
// valid on its own, no path listed twice, no two paths that name one file
// on a case-insensitive or normalizing filesystem (macOS, Windows), and
// nothing beneath a file or a symlink.
func checkOutputs(outputs []OutputFile) error {
	if ok, err := checkSortedOutputs(outputs); ok {
		return err
	}
	return checkAnyOutputs(outputs)
}

// checkAnyOutputs is checkOutputs for a tree in any order.
func checkAnyOutputs(outputs []OutputFile) error {
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
		f := outpath.Fold(o.Path)
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
	return CheckLinks(outputs)
}

// checkSortedOutputs is checkOutputs for a tree in strictly ascending
// order whose paths fold to themselves, as cairn stores most: no path can
// then be listed twice or fold onto another, and a path's parents are
// found by binary search, once per directory, rather than in maps of the
// whole tree. ok is false, nothing checked, for any other tree.
func checkSortedOutputs(outputs []OutputFile) (ok bool, err error) {
	for i := range outputs {
		if i > 0 && outputs[i-1].Path >= outputs[i].Path || !outpath.FoldsToItself(outputs[i].Path) {
			return false, nil
		}
	}
	for _, o := range outputs {
		if err := checkOutput(o); err != nil {
			return true, fmt.Errorf("output %q: %w", o.Path, err)
		}
	}
	last := ""
	for _, o := range outputs {
		dir := path.Dir(o.Path)
		if dir == last {
			continue
		}
		last = dir
		for p := dir; p != "."; p = path.Dir(p) {
			i, found := slices.BinarySearchFunc(outputs, p, func(o OutputFile, p string) int { return strings.Compare(o.Path, p) })
			if found && outputs[i].Type != TypeDir {
				return true, fmt.Errorf("output %q: beneath %s %q", o.Path, outputs[i].Type, p)
			}
		}
	}
	return true, CheckLinks(outputs)
}

// CheckLinks checks that every symlink of an output tree (targets
// relative, each checked on its own by the entry's rules) resolves inside
// the workspace once the tree is in place, following the tree's other
// symlinks as the kernel would: "d/l2 -> ../.." and "d/l1 -> l2/.." are
// each inside lexically, but d/l1 leads to the workspace's parent. A loop,
// which the kernel does not follow, is accepted.
func CheckLinks(outputs []OutputFile) error {
	links := map[string]string{}
	for _, o := range outputs {
		if o.Type == TypeSymlink {
			links[o.Path] = o.Target
		}
	}
	for _, o := range outputs {
		if o.Type != TypeSymlink {
			continue
		}
		if err := outpath.ResolveLink(links, o.Path); err != nil {
			return fmt.Errorf("output %q: target %q: %w", o.Path, o.Target, err)
		}
	}
	return nil
}

func checkOutput(o OutputFile) error {
	if err := outpath.CheckRel(o.Path); err != nil {
		return err
	}
	if o.Mode&^0o777 != 0 {
		return fmt.Errorf("mode %#o has bits beyond 0o777", o.Mode)
	}
	if o.Size < 0 {
		return fmt.Errorf("negative size %d", o.Size)
	}
	if o.MTime != 0 && o.Type != TypeFile {
		return fmt.Errorf("%s with a modification time", o.Type)
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
		if err := outpath.CheckLinkTarget(o.Path, o.Target); err != nil {
			return fmt.Errorf("target %q: %w", o.Target, err)
		}
	default:
		return fmt.Errorf("unknown type %q", o.Type)
	}
	return nil
}

func checkUTF8(e *Entry) error {
	err := validUTF8(e.Phase, e.Host, e.User)
	// A phase's million inputs are checked on all cores; the first bad
	// one is then looked for in order, so that the error is always the
	// same.
	comps := func(lo, hi int) error {
		for _, c := range e.Components[lo:hi] {
			if err := validUTF8(c.Kind, c.Name, c.Value); err != nil {
				return err
			}
		}
		return nil
	}
	if err == nil && cores.Ranges(len(e.Components), cores.N, 1<<14, comps) != nil {
		err = comps(0, len(e.Components))
	}
	for i := 0; err == nil && i < len(e.Outputs); i++ {
		err = validUTF8(e.Outputs[i].Path, e.Outputs[i].Type, e.Outputs[i].Target)
	}
	return err
}

func validUTF8(ss ...string) error {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%q is not valid UTF-8", s)
		}
	}
	return nil
}
