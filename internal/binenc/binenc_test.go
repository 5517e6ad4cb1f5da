package binenc

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

func read(b []byte) (record, error) {
	var rec record
	r, err := Open(b, "test 1\n")
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
		got, err := read(write(rec))
		if err != nil {
			t.Fatalf("%+v: %v", rec, err)
		}
		if diff := cmp.Diff(rec, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
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
		"cut short":       reframe(string(good[7 : len(good)-32-2])),
		"trailing bytes":  reframe(string(good[7:len(good)-32]) + "x"),
		"huge length":     reframe("\x00\x00\x00\x00\xff\xff\xff\xff\x0f"),
		"varint overflow": reframe("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"),
	} {
		if _, err := read(b); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}
