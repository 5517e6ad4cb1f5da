package hint

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type record struct {
	U    uint64
	I    int64
	F    float64
	B    bool
	S    string
	Fix  [4]byte
	Strs []string
}

func write(rec record) []byte {
	w := NewWriter("test 1\n", 0)
	w.Uint(rec.U)
	w.Int(rec.I)
	w.Float(rec.F)
	w.Bool(rec.B)
	w.Str(rec.S)
	w.Fixed(rec.Fix[:])
	w.Strs(rec.Strs)
	return w.Finish()
}

// openers are Open and OpenOwned, which must read alike.
var openers = map[string]func([]byte, string) (*Reader, error){"Open": Open, "OpenOwned": OpenOwned}

func readWith(open func([]byte, string) (*Reader, error), b []byte) (record, error) {
	var rec record
	r, err := open(b, "test 1\n")
	if err != nil {
		return rec, err
	}
	rec.U, rec.I, rec.F, rec.B, rec.S = r.Uint(), r.Int(), r.Float(), r.Bool(), r.Str()
	r.Fixed(rec.Fix[:])
	rec.Strs = r.Strs()
	return rec, r.Err()
}

func TestRoundTrip(t *testing.T) {
	for _, rec := range []record{
		{},
		{U: math.MaxUint64, I: math.MinInt64, F: -0.5, B: true, S: "é\x00x", Fix: [4]byte{1, 2, 3, 4}, Strs: []string{}},
		{I: math.MaxInt64, F: math.Inf(1), Strs: []string{"", "a"}},
	} {
		for name, open := range openers {
			got, err := readWith(open, write(rec))
			if err != nil {
				t.Fatalf("%s %+v: %v", name, rec, err)
			}
			if diff := cmp.Diff(rec, got); diff != "" {
				t.Errorf("%s round trip (-want +got):\n%s", name, diff)
			}
		}
	}
}

// TestNested: a record written into a string with Str reads back through
// NewReader.
func TestNested(t *testing.T) {
	inner := NewWriter("", 0)
	inner.Str("x")
	inner.Int(-7)
	w := NewWriter("test 1\n", 0)
	w.Str(string(inner.B))
	w.Uint(3)
	r, err := OpenOwned(w.Finish(), "test 1\n")
	if err != nil {
		t.Fatal(err)
	}
	before := r.Rest()
	nested := NewReader(r.Str())
	if got := before[:len(before)-len(r.Rest())]; got != string(w.B[len("test 1\n"):len("test 1\n")+1+len(inner.B)]) {
		t.Errorf("Rest did not advance over the record: %q", got)
	}
	if u := r.Uint(); u != 3 || r.Err() != nil {
		t.Fatalf("outer record: %d, %v", u, r.Err())
	}
	if s, i := nested.Str(), nested.Int(); s != "x" || i != -7 || nested.Err() != nil {
		t.Errorf("nested record: %q %d %v", s, i, nested.Err())
	}
	cut := NewReader("\x05")
	if cut.Str(); cut.Err() == nil {
		t.Errorf("a cut nested record reads without error")
	}
}

func TestDamage(t *testing.T) {
	good := write(record{S: "hello", Strs: []string{"a"}})
	reframe := func(body string) []byte {
		w := NewWriter("test 1\n", 0)
		w.B = append(w.B, body...)
		return w.Finish()
	}
	for name, b := range map[string][]byte{
		"empty":           nil,
		"other header":    append([]byte("test 2\n"), good[7:]...),
		"bad checksum":    append(good[:len(good)-1:len(good)-1], good[len(good)-1]^1),
		"cut short":       reframe(string(good[7 : len(good)-TrailerSize-2])),
		"trailing bytes":  reframe(string(good[7:len(good)-TrailerSize]) + "x"),
		"huge length":     reframe("\x00\x00\x00\x00\xff\xff\xff\xff\x0f"),
		"varint overflow": reframe("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"),
	} {
		for oname, open := range openers {
			if _, err := readWith(open, b); err == nil {
				t.Errorf("%s: %s read without error", name, oname)
			}
		}
	}
}
