package fsx

import "testing"

func TestKernelAtLeast(t *testing.T) {
	for _, c := range []struct {
		release string
		want    bool
	}{
		{"5.8.0-63-generic\x00\x00", true},
		{"6.1.0-28-amd64", true},
		{"5.10.0", true},
		{"5.7.19", false},
		{"4.19.0-27-amd64", false},
		{"5.8-rc1", true},
		{"5", false},
		{"", false},
		{"x.y", false},
	} {
		if got := kernelAtLeast([]byte(c.release), 5, 8); got != c.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", c.release, got, c.want)
		}
	}
}
