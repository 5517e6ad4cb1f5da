package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestComputeKeyDistinct(t *testing.T) {
	c := func(kind, name, value string) Component { return Component{kind, name, value} }
	tests := map[string]struct{ a, b []Component }{
		"kind/name boundary":    {[]Component{c("a", "bc", "")}, []Component{c("ab", "c", "")}},
		"name/value boundary":   {[]Component{c("env", "a", "bc")}, []Component{c("env", "ab", "c")}},
		"kind/value boundary":   {[]Component{c("a", "", "bc")}, []Component{c("ab", "", "c")}},
		"env split at =":        {[]Component{c("env", "A=B", "")}, []Component{c("env", "A", "B")}},
		"NUL inside a field":    {[]Component{c("a\x00b", "", "")}, []Component{c("a", "b", "")}},
		"one vs two components": {[]Component{c("x", "", "y")}, []Component{c("x", "", ""), c("y", "", "")}},
		"separator injection": {
			[]Component{c("env", "A", "1\x03env\x01B\x012")},
			[]Component{c("env", "A", "1"), c("env", "B", "2")},
		},
		"empty list vs empty component": {nil, []Component{c("", "", "")}},
		"duplicate counts":              {[]Component{c("param", "n", "1")}, []Component{c("param", "n", "1"), c("param", "n", "1")}},
		"kind matters":                  {[]Component{c("param", "n", "1")}, []Component{c("env", "n", "1")}},
		"value case":                    {[]Component{c("input", "data.csv", "a")}, []Component{c("input", "data.csv", "A")}},
		"trailing space":                {[]Component{c("command", "", "python train.py")}, []Component{c("command", "", "python train.py ")}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if ka, kb := ComputeKey(tt.a), ComputeKey(tt.b); ka == kb {
				t.Errorf("same key %s for %q and %q", ka.Short(), tt.a, tt.b)
			}
			if bytes.Equal(EncodeComponents(tt.a), EncodeComponents(tt.b)) {
				t.Errorf("same encoding for %q and %q", tt.a, tt.b)
			}
		})
	}
}

func TestComputeKeyOrderIndependent(t *testing.T) {
	comps := sampleComponents(50)
	want := ComputeKey(comps)
	orig := append([]Component(nil), comps...)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		shuffled := append([]Component(nil), comps...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := ComputeKey(shuffled); got != want {
			t.Fatalf("shuffle %d: key %s, want %s", i, got.Short(), want.Short())
		}
	}
	if diff := cmp.Diff(orig, comps); diff != "" {
		t.Errorf("ComputeKey modified its argument (-want +got):\n%s", diff)
	}
}

// TestComputeKeyPinned fails if the key encoding changes. If that is
// intended, bump KeyFormat, update FORMAT.md, then this value.
func TestComputeKeyPinned(t *testing.T) {
	comps := []Component{
		{Kind: "command", Value: "python train.py --epochs 3"},
		{Kind: "env", Name: "SEED", Value: "42"},
		{Kind: "input", Name: "data/train.csv", Value: "0644 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	}
	const want = "ba3d6dc85d0981d48bb655de728560f58115b338ce7ada43dfd7ea8dd30dbde2"
	if got := ComputeKey(comps).String(); got != want {
		t.Errorf("ComputeKey = %s, want %s", got, want)
	}
	wantEnc := "cairn-key\x00\x01" +
		"\x07command\x00\x1apython train.py --epochs 3" +
		"\x03env\x04SEED\x0242" +
		"\x05input\x0edata/train.csv\x450644 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if diff := cmp.Diff(wantEnc, string(EncodeComponents(comps))); diff != "" {
		t.Errorf("EncodeComponents (-want +got):\n%s", diff)
	}
}

func TestEncodeDecodeComponents(t *testing.T) {
	tests := map[string][]Component{
		"none":      nil,
		"one empty": {{}},
		"binary":    {{Kind: "input", Name: "a\x00b", Value: "\xff\xfe"}},
		"long":      {{Kind: "command", Value: strings.Repeat("x", 1000)}},
		"many":      sampleComponents(100),
	}
	for name, comps := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeComponents(EncodeComponents(comps))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(sortedComponents(comps), got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeComponentsErrors(t *testing.T) {
	good := EncodeComponents([]Component{{"a", "b", "c"}, {"d", "e", "f"}})
	unsorted := []byte(keyMagic + "\x01" + "\x01d\x01e\x01f" + "\x01a\x01b\x01c")
	tests := map[string][]byte{
		"empty":            nil,
		"bad magic":        []byte("cairn-kez\x00\x01"),
		"no version":       []byte(keyMagic),
		"version 2":        []byte(keyMagic + "\x02"),
		"overlong version": []byte(keyMagic + "\x81\x00"),
		"truncated":        good[:len(good)-1],
		"trailing byte":    append(append([]byte(nil), good...), 0),
		"half component":   []byte(keyMagic + "\x01\x01a"),
		"length too long":  []byte(keyMagic + "\x01\x05a\x00\x00"),
		"overlong length":  []byte(keyMagic + "\x01\x81\x00a\x00\x00"),
		"varint overflow":  []byte(keyMagic + "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
		"unsorted":         unsorted,
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			comps, err := DecodeComponents(b)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("DecodeComponents = %q, %v; want error wrapping ErrCorrupt", comps, err)
			}
		})
	}
}

func TestComputeKeyDebug(t *testing.T) {
	var buf bytes.Buffer
	old := debugKeyOut
	debugKeyOut = &buf
	t.Cleanup(func() { debugKeyOut = old })

	comps := []Component{{"param", "lr", "0.1"}, {"command", "", "run"}}
	t.Setenv(debugKeyEnv, "")
	ComputeKey(comps)
	if buf.Len() != 0 {
		t.Errorf("debug output without %s=1: %q", debugKeyEnv, buf.String())
	}
	t.Setenv(debugKeyEnv, "1")
	k := ComputeKey(comps)
	s := k.Short()
	want := fmt.Sprintf("cairn key %s: format 1\n"+
		"cairn key %s: command \"\" \"run\"\n"+
		"cairn key %s: param \"lr\" \"0.1\"\n"+
		"cairn key %s: = %s\n", s, s, s, s, k)
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("debug output (-want +got):\n%s", diff)
	}
}

func TestEncodeComponentsVarints(t *testing.T) {
	// A field longer than 127 bytes takes a two-byte length.
	v := strings.Repeat("v", 300)
	enc := EncodeComponents([]Component{{Kind: "k", Value: v}})
	want := append([]byte(keyMagic+"\x01\x01k\x00"), binary.AppendUvarint(nil, 300)...)
	want = append(want, v...)
	if !bytes.Equal(enc, want) {
		t.Errorf("EncodeComponents = %q, want %q", enc, want)
	}
}

func sampleComponents(n int) []Component {
	kinds := []string{"command", "env", "param", "input", "upstream", "output", "workdir", "budget"}
	comps := make([]Component, n)
	for i := range comps {
		comps[i] = Component{
			Kind:  kinds[i%len(kinds)],
			Name:  fmt.Sprintf("name-%03d/file.csv", i),
			Value: fmt.Sprintf("0644 %s", HashBytes([]byte{byte(i)})),
		}
	}
	return comps
}
