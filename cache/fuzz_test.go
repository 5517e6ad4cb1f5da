package cache

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cairn-run/cairn/cache/sigkey"
)

// FuzzPutGet checks Get(Put(b)) == b and that the digest is HashBytes(b),
// through PutBytes and through PutReader fed in uneven chunks.
func FuzzPutGet(f *testing.F) {
	c := newDir(f)
	f.Fuzz(func(t *testing.T, b []byte) { checkPutGet(t, c, b) })
}

func checkPutGet(t *testing.T, c *Dir, b []byte) {
	want := HashBytes(b)
	d, err := c.PutBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if d != want {
		t.Fatalf("PutBytes = %s, want %s", d, want)
	}
	got, err := c.ReadBlob(d)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("ReadBlob returned %q, want %q", got, b)
	}
	step := 1
	if len(b) > 0 {
		step += int(b[0]) % 97
	}
	d, n, err := c.PutReader(&chunkReader{b: b, step: step})
	if err != nil || d != want || n != int64(len(b)) {
		t.Fatalf("PutReader = %s, %d, %v; want %s, %d", d, n, err, want, len(b))
	}
}

// chunkReader returns at most step bytes per Read.
type chunkReader struct {
	b    []byte
	step int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// FuzzKeyEncoding checks that DecodeComponents never panics and accepts
// only canonical bytes, that Decode(Encode(x)) returns x sorted, that the
// key ignores order, and that moving one byte across a field boundary
// changes the encoding.
func FuzzKeyEncoding(f *testing.F) {
	f.Fuzz(checkKeyEncoding)
}

func checkKeyEncoding(t *testing.T, raw []byte) {
	if comps, err := DecodeComponents(raw); err == nil {
		if enc := EncodeComponents(comps); !bytes.Equal(enc, raw) {
			t.Fatalf("decoded %q, which encodes to %q, not the input %q", comps, enc, raw)
		}
	} else if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("DecodeComponents error %v does not wrap ErrCorrupt", err)
	}

	comps := componentsFromBytes(raw)
	enc := EncodeComponents(comps)
	got, err := DecodeComponents(enc)
	if err != nil {
		t.Fatalf("DecodeComponents(EncodeComponents(%q)): %v", comps, err)
	}
	if diff := cmp.Diff(sortedComponents(comps), got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	rev := slices.Clone(comps)
	slices.Reverse(rev)
	if ComputeKey(rev) != ComputeKey(comps) {
		t.Fatalf("key depends on order for %q", comps)
	}
	if len(comps) > 0 && comps[0].Kind != "" {
		// {"ab","c"} -> {"a","bc"}: a different list, so a different encoding.
		moved := slices.Clone(comps)
		k := moved[0].Kind
		moved[0].Kind, moved[0].Name = k[:len(k)-1], k[len(k)-1:]+moved[0].Name
		if bytes.Equal(EncodeComponents(moved), enc) {
			t.Fatalf("%q and %q encode the same", comps, moved)
		}
	}
}

// componentsFromBytes splits b at NUL bytes into fields, three per
// component, so the fuzzer can shape component lists directly.
func componentsFromBytes(b []byte) []Component {
	if len(b) == 0 {
		return nil
	}
	fields := bytes.Split(b, []byte{0})
	var comps []Component
	for i := 0; i < len(fields); i += 3 {
		var c Component
		c.Kind = string(fields[i])
		if i+1 < len(fields) {
			c.Name = string(fields[i+1])
		}
		if i+2 < len(fields) {
			c.Value = string(fields[i+2])
		}
		comps = append(comps, c)
	}
	return comps
}

// FuzzParseEntry checks that DecodeEntry never panics, fails only with
// ErrCorrupt, and that every entry it accepts re-encodes, decodes to the
// same value, and re-encodes to the same bytes. Each input is tried both as
// a stored entry and as a JSON body framed with a correct checksum, so the
// fuzzer reaches the validation behind the checksum.
func FuzzParseEntry(f *testing.F) {
	if b, err := EncodeEntry(sampleEntry()); err == nil {
		if k, err := sigkey.GenerateKey("fuzz"); err == nil {
			f.Add(sealEnvelope(b, k))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParseEntry(t, b)
		checkParseEntry(t, frameBody(b))
		checkParseEntry(t, frameBodyAs(entryHeaderInline, b))
	})
}

func checkParseEntry(t *testing.T, b []byte) {
	e, err := DecodeEntry(b)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DecodeEntry error %v does not wrap ErrCorrupt", err)
		}
		return
	}
	e.SignedBy = nil // a signature is not re-encoded: EncodeEntry writes the entry inside
	b2, err := EncodeEntry(e)
	if err != nil {
		t.Fatalf("EncodeEntry of a decoded entry: %v\nentry: %+v", err, e)
	}
	e2, err := DecodeEntry(b2)
	if err != nil {
		t.Fatalf("DecodeEntry of a re-encoded entry: %v\nbytes: %q", err, b2)
	}
	if diff := cmp.Diff(e, e2); diff != "" {
		t.Fatalf("round trip (-first +second):\n%s", diff)
	}
	if b3, _ := EncodeEntry(e2); !bytes.Equal(b2, b3) {
		t.Fatalf("encoding not stable:\n%q\n%q", b2, b3)
	}
}
