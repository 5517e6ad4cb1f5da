package phasefile

import (
	"bytes"
	"testing"
)

func TestMaskWriter(t *testing.T) {
	tests := map[string]struct {
		secrets []string
		writes  []string
		want    string
	}{
		"whole":         {[]string{"s3cr3t"}, []string{"key=s3cr3t\n"}, "key=***\n"},
		"split":         {[]string{"s3cr3t"}, []string{"key=s3", "cr", "3t end\n"}, "key=*** end\n"},
		"byte by byte":  {[]string{"abc"}, []string{"x", "a", "b", "c", "y"}, "x***y"},
		"two secrets":   {[]string{"aa", "longsecret"}, []string{"aa longsecret aa"}, "*** *** ***"},
		"overlapping":   {[]string{"secret", "secretive"}, []string{"secretive secret"}, "*** ***"},
		"no secret":     {[]string{"zzz"}, []string{"plain text\n"}, "plain text\n"},
		"empty ignored": {[]string{""}, []string{"text"}, "text"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			m := NewMaskWriter(&buf, tc.secrets)
			for _, w := range tc.writes {
				if _, err := m.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
