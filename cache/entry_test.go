package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/internal/testkit"
)

// sampleEntry returns a valid entry whose blobs are the contents given by
// sampleBlobs.
func sampleEntry() *Entry {
	comps := []Component{
		{Kind: "command", Value: "python train.py"},
		{Kind: "input", Name: "data/train.csv", Value: "0644 " + HashBytes([]byte("csv")).String()},
		{Kind: "param", Name: "lr", Value: "0.01"},
	}
	return &Entry{
		Format:     EntryFormat,
		Key:        ComputeKey(comps),
		Phase:      "train",
		Components: comps,
		Outputs: []OutputFile{
			{Path: "model", Type: TypeDir, Mode: 0o755},
			{Path: "model/weights.bin", Type: TypeFile, Mode: 0o644, Digest: HashBytes([]byte("weights")), Size: 7},
			{Path: "model/latest", Type: TypeSymlink, Mode: 0o777, Target: "weights.bin"},
			{Path: "metrics.json", Type: TypeFile, Mode: 0o644, Digest: HashBytes(nil)},
		},
		ExitCode:   0,
		Stdout:     HashBytes([]byte("stdout")),
		Stderr:     HashBytes([]byte("stderr")),
		Cost:       1.25,
		Iterations: 300,
		Metrics:    json.RawMessage(`{"loss":0.12}`),
		DurationMS: 61234,
		Created:    time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC),
		Host:       "gpu-01",
		User:       "ana",
	}
}

func sampleBlobs() [][]byte {
	return [][]byte{[]byte("weights"), nil, []byte("stdout"), []byte("stderr")}
}

// encodeUnchecked frames body like EncodeEntry but without validation, to
// build well-checksummed invalid entries.
func encodeUnchecked(t *testing.T, e any) []byte {
	t.Helper()
	body, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return frameBody(body)
}

func frameBody(body []byte) []byte { return frameBodyAs(entryHeader, body) }

func frameBodyAs(header string, body []byte) []byte {
	sum := sha256.Sum256(body)
	return []byte(header + hex.EncodeToString(sum[:]) + "\n" + string(body))
}

// sampleInlineEntry is sampleEntry in format 2, holding its weights file
// and its stdout inline.
func sampleInlineEntry() *Entry {
	e := sampleEntry()
	e.Format = EntryFormatInline
	e.Inline = []InlineBlob{
		{Digest: HashBytes([]byte("weights")), Data: []byte("weights")},
		{Digest: HashBytes([]byte("stdout")), Data: []byte("stdout")},
	}
	return e
}

func TestInlineEntryRoundTrip(t *testing.T) {
	e := sampleInlineEntry()
	b, err := EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "cairn-ac 2\n") {
		t.Errorf("header line %q, want cairn-ac 2", strings.SplitN(string(b), "\n", 2)[0])
	}
	testkit.Golden(t, filepath.Join("testdata", "entry-inline.golden"), b)
	got, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if data, ok := got.InlineData(HashBytes([]byte("weights"))); !ok || string(data) != "weights" {
		t.Errorf("InlineData(weights) = %q, %v", data, ok)
	}
	if _, ok := got.InlineData(HashBytes([]byte("stderr"))); ok {
		t.Error("InlineData(stderr) found a blob the entry does not hold")
	}
	// An empty blob inline is "" in JSON and decodes to empty content.
	e = sampleEntry()
	e.Format = EntryFormatInline
	e.Inline = []InlineBlob{{Digest: HashBytes(nil), Data: []byte{}}}
	if b, err = EncodeEntry(e); err != nil {
		t.Fatal(err)
	}
	if got, err = DecodeEntry(b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("empty inline blob round trip (-want +got):\n%s", diff)
	}
}

func TestDecodeEntryRejectsInline(t *testing.T) {
	tests := map[string]func(e *Entry){
		"content changed": func(e *Entry) { e.Inline[0].Data = []byte("weighty") },
		"listed twice":    func(e *Entry) { e.Inline = append(e.Inline, e.Inline[0]) },
		"referenced by nothing": func(e *Entry) {
			e.Inline = append(e.Inline, InlineBlob{Digest: HashBytes([]byte("x")), Data: []byte("x")})
		},
		"size differs from its output": func(e *Entry) { e.Outputs[1].Size = 8 },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			e := sampleInlineEntry()
			mutate(e)
			body, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeEntry(frameBodyAs(entryHeaderInline, body)); !errors.Is(err, ErrCorrupt) {
				t.Errorf("DecodeEntry = %v, want error wrapping ErrCorrupt", err)
			}
			if b, err := EncodeEntry(e); err == nil {
				t.Errorf("EncodeEntry accepted it: %q", b)
			}
		})
	}
	// The header and the body must name one format.
	good, err := json.Marshal(sampleInlineEntry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEntry(frameBodyAs(entryHeader, good)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("format 2 body under a format 1 header: DecodeEntry = %v, want ErrCorrupt", err)
	}
	plain, err := json.Marshal(sampleEntry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEntry(frameBodyAs(entryHeaderInline, plain)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("format 1 body under a format 2 header: DecodeEntry = %v, want ErrCorrupt", err)
	}
}

func TestEntryRoundTrip(t *testing.T) {
	e := sampleEntry()
	b, err := EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("testdata", "entry.golden"), b)
	got, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// A minimal entry: no outputs, no logs.
	min := &Entry{Format: EntryFormat, Key: ComputeKey(nil)}
	b, err = EncodeEntry(min)
	if err != nil {
		t.Fatal(err)
	}
	got, err = DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(min, got); diff != "" {
		t.Errorf("minimal round trip (-want +got):\n%s", diff)
	}
}

func TestDecodeEntryMetricsNormalised(t *testing.T) {
	e := sampleEntry()
	e.Metrics = json.RawMessage("{ \"loss\" : 0.12 }")
	b, err := EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Metrics) != `{"loss":0.12}` {
		t.Errorf("metrics = %s, want compact", got.Metrics)
	}
}

func TestDecodeEntryRejectsBytes(t *testing.T) {
	good, err := EncodeEntry(sampleEntry())
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 1
		return b
	}
	body := good[len(entryHeader)+65:]
	tests := map[string][]byte{
		"empty":             nil,
		"header only":       []byte(entryHeader),
		"truncated":         good[:len(good)-10],
		"truncated in sum":  good[:len(entryHeader)+30],
		"extra byte":        append(bytes.Clone(good), 'x'),
		"bad checksum":      flip(len(entryHeader) + 3),
		"body bit flip":     flip(len(good) - 5),
		"header version 2":  append([]byte("cairn-ac 2\n"), good[len(entryHeader):]...),
		"no header":         good[len(entryHeader):],
		"uppercase sum":     append([]byte(entryHeader+strings.ToUpper(string(good[len(entryHeader):len(entryHeader)+64]))), good[len(entryHeader)+64:]...),
		"not json":          frameBody([]byte("hello")),
		"json array":        frameBody([]byte("[]")),
		"trailing json":     frameBody(append(bytes.Clone(body), []byte(" {}")...)),
		"json wrong types":  frameBody([]byte(`{"format":"1"}`)),
		"bad digest string": frameBody([]byte(`{"format":1,"stdout":"xyz"}`)),
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			if e, err := DecodeEntry(b); !errors.Is(err, ErrCorrupt) {
				t.Errorf("DecodeEntry = %+v, %v; want error wrapping ErrCorrupt", e, err)
			}
		})
	}
}

func TestDecodeEntryRejectsContent(t *testing.T) {
	tests := map[string]func(e *Entry){
		"format 0": func(e *Entry) { e.Format = 0 },
		"format 3": func(e *Entry) { e.Format = 3 },
		"format 5": func(e *Entry) { e.Format = 5 },
		"temporary in format 2": func(e *Entry) {
			e.Format = EntryFormatInline
			e.Outputs[1].Temporary = true
		},
		"inline blob of a temporary output": func(e *Entry) {
			e.Format = EntryFormatTemp
			e.Outputs[1].Temporary = true
			e.Inline = []InlineBlob{{Digest: e.Outputs[1].Digest, Data: []byte("weights")}}
		},
		"inline in format 1": func(e *Entry) {
			e.Inline = []InlineBlob{{Digest: HashBytes([]byte("weights")), Data: []byte("weights")}}
		},
		"key mismatch":         func(e *Entry) { e.Key[0] ^= 1 },
		"component changed":    func(e *Entry) { e.Components[0].Value = "python other.py" },
		"empty kind":           func(e *Entry) { e.Components = append(e.Components, Component{}); e.Key = ComputeKey(e.Components) },
		"dotdot path":          func(e *Entry) { e.Outputs[1].Path = "../x" },
		"dotdot inside":        func(e *Entry) { e.Outputs[1].Path = "model/../../x" },
		"dotdot alone":         func(e *Entry) { e.Outputs[0].Path = ".." },
		"absolute path":        func(e *Entry) { e.Outputs[1].Path = "/abs" },
		"empty path":           func(e *Entry) { e.Outputs[1].Path = "" },
		"dot path":             func(e *Entry) { e.Outputs[0].Path = "." },
		"unclean path":         func(e *Entry) { e.Outputs[1].Path = "model//weights.bin" },
		"trailing slash":       func(e *Entry) { e.Outputs[0].Path = "model/" },
		"dot segment":          func(e *Entry) { e.Outputs[1].Path = "./metrics.json" },
		"NUL in path":          func(e *Entry) { e.Outputs[3].Path = "a\x00b" },
		"duplicate path":       func(e *Entry) { e.Outputs[3].Path = "model/weights.bin" },
		"unknown type":         func(e *Entry) { e.Outputs[1].Type = "fifo" },
		"file without digest":  func(e *Entry) { e.Outputs[1].Digest = Digest{} },
		"file with target":     func(e *Entry) { e.Outputs[1].Target = "x" },
		"negative size":        func(e *Entry) { e.Outputs[1].Size = -1 },
		"setuid mode":          func(e *Entry) { e.Outputs[1].Mode = 0o4755 },
		"dir with digest":      func(e *Entry) { e.Outputs[0].Digest = HashBytes(nil) },
		"symlink absolute":     func(e *Entry) { e.Outputs[2].Target = "/etc/passwd" },
		"symlink escapes":      func(e *Entry) { e.Outputs[2].Target = "../../x" },
		"symlink escapes deep": func(e *Entry) { e.Outputs[2].Target = "a/../../../x" },
		"symlink empty":        func(e *Entry) { e.Outputs[2].Target = "" },
		"symlink with digest":  func(e *Entry) { e.Outputs[2].Digest = HashBytes(nil) },
		"beneath a file": func(e *Entry) {
			e.Outputs = append(e.Outputs, OutputFile{Path: "metrics.json/x", Type: TypeDir})
		},
		"beneath a symlink": func(e *Entry) {
			e.Outputs = append(e.Outputs, OutputFile{Path: "model/latest/x", Type: TypeFile, Digest: HashBytes(nil)})
		},
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			e := sampleEntry()
			mutate(e)
			if _, err := DecodeEntry(encodeUnchecked(t, e)); !errors.Is(err, ErrCorrupt) {
				t.Errorf("DecodeEntry = %v, want error wrapping ErrCorrupt", err)
			}
			if b, err := EncodeEntry(e); err == nil {
				t.Errorf("EncodeEntry accepted it: %q", b)
			}
		})
	}
}

func TestEntryAcceptsEdgeCases(t *testing.T) {
	tests := map[string]func(e *Entry){
		"symlink to workspace root": func(e *Entry) { e.Outputs[2].Target = ".." },
		"symlink to sibling dir":    func(e *Entry) { e.Outputs[2].Target = "../metrics.json" },
		"dangling symlink":          func(e *Entry) { e.Outputs[2].Target = "nothing/here" },
		"dotted names":              func(e *Entry) { e.Outputs[3].Path = "..metrics/.x../...json" },
		"no components":             func(e *Entry) { e.Components = nil; e.Key = ComputeKey(nil) },
		"unicode":                   func(e *Entry) { e.Outputs[3].Path = "résumé/日本.txt"; e.Phase = "ünï" },
		"nonzero exit":              func(e *Entry) { e.ExitCode = 3 },
		"null metrics":              func(e *Entry) { e.Metrics = nil },
		"zone offset":               func(e *Entry) { e.Created = time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("", 5*3600+1800)) },
		"temporary outputs": func(e *Entry) {
			e.Format = EntryFormatTemp
			for i := range 3 { // the model directory, its file and its symlink
				e.Outputs[i].Temporary = true
			}
		},
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			e := sampleEntry()
			mutate(e)
			b, err := EncodeEntry(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(e, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeEntryRejectsInvalidUTF8(t *testing.T) {
	// JSON would replace the bad byte, the components would no longer hash
	// to the key, and every reader would call the entry corrupt.
	e := sampleEntry()
	e.Components[0].Value = "python \xff.py"
	e.Key = ComputeKey(e.Components)
	if _, err := EncodeEntry(e); err == nil {
		t.Error("EncodeEntry accepted invalid UTF-8")
	}
	// Among many components (checked on all cores), the first bad one
	// is named, always the same.
	comps := make([]Component, 0, 40000)
	for i := range 40000 {
		comps = append(comps, Component{Kind: ChunkKind, Name: fmt.Sprintf("in/%06d", i), Value: "-:00"})
	}
	comps[30000].Name, comps[35000].Name = "in/first\xfe", "in/second\xff"
	for range 5 {
		if err := checkUTF8(&Entry{Components: comps}); err == nil || !strings.Contains(err.Error(), "first") {
			t.Fatalf("got %v, want the first bad name", err)
		}
	}
	e = sampleEntry()
	e.Metrics = json.RawMessage("{bad")
	if _, err := EncodeEntry(e); err == nil {
		t.Error("EncodeEntry accepted invalid metrics JSON")
	}
}

func TestEntryVersion(t *testing.T) {
	for in, want := range map[string]int{
		"cairn-ac 1\nx":  1,
		"cairn-ac 12\nx": 12,
		"cairn-ac x\n":   0,
		"cairn-ac 2":     0,
		"cairn-ac -1\n":  0,
		"other 2\n":      0,
		"":               0,
	} {
		if got, _ := entryVersion([]byte(in)); got != want {
			t.Errorf("entryVersion(%q) = %d, want %d", in, got, want)
		}
	}
}
