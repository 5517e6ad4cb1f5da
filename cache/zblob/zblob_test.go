package zblob

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(n), byte(n >> 8)}).Read(b)
	return b
}

// textBytes returns n bytes of text that compresses well.
func textBytes(n int) []byte {
	return []byte(strings.Repeat("step 12 loss=0.0731 ok\n", n/23+1)[:n])
}

func TestCompressSample(t *testing.T) {
	tests := map[string]struct {
		in   []byte
		want bool
	}{
		"empty":       {nil, false},
		"tiny":        {[]byte("hi"), false},
		"random":      {randomBytes(t, SampleSize), false},
		"text":        {textBytes(SampleSize), true},
		"zeros":       {make([]byte, 4096), true},
		"half random": {append(randomBytes(t, 6000), make([]byte, 400)...), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			z, ok := CompressSample(tt.in)
			if ok != tt.want {
				t.Fatalf("CompressSample = %v, want %v", ok, tt.want)
			}
			if !ok {
				return
			}
			dec, err := NewDecoder(bytes.NewReader(z))
			if err != nil {
				t.Fatal(err)
			}
			defer dec.Release()
			got, err := io.ReadAll(dec)
			if err != nil || !bytes.Equal(got, tt.in) {
				t.Errorf("decoded %d bytes, %v; want the %d input bytes", len(got), err, len(tt.in))
			}
		})
	}
}
