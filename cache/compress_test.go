package cache

import (
	"bytes"
	"io"
	"testing"
)

func TestCompressSample(t *testing.T) {
	tests := map[string]struct {
		in   []byte
		want bool
	}{
		"empty":       {nil, false},
		"tiny":        {[]byte("hi"), false},
		"random":      {randomBytes(t, sampleSize), false},
		"text":        {textBytes(sampleSize), true},
		"zeros":       {make([]byte, 4096), true},
		"half random": {append(randomBytes(t, 6000), make([]byte, 400)...), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			z, ok := compressSample(tt.in)
			if ok != tt.want {
				t.Fatalf("compressSample = %v, want %v", ok, tt.want)
			}
			if !ok {
				return
			}
			dec, err := newDecoder(bytes.NewReader(z))
			if err != nil {
				t.Fatal(err)
			}
			defer dec.release()
			got, err := io.ReadAll(dec)
			if err != nil || !bytes.Equal(got, tt.in) {
				t.Errorf("decoded %d bytes, %v; want the %d input bytes", len(got), err, len(tt.in))
			}
		})
	}
}
