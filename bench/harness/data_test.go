package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDataSize(t *testing.T) {
	type got struct {
		F     int
		S     int64
		N     int
		Scens []string
	}
	tests := []struct {
		name    string
		want    got
		wantErr bool
	}{
		{name: "F1m", want: got{F: 1_000_000, S: dataFileBytes, N: 1, Scens: []string{"cold", "noop", "change1", "afteredit"}}},
		{name: "F10k", want: got{F: 10_000, S: dataFileBytes, N: 1, Scens: []string{"cold", "noop", "change1", "afteredit"}}},
		{name: "O100k", want: got{F: 100_000, S: dataFileBytes, N: 100_000, Scens: []string{"cold", "noop", "restore"}}},
		{name: "G4", want: got{F: bigFiles, S: 4 << 30, N: 1, Scens: []string{"hash", "noop", "restore"}}},
		{name: "G64m", want: got{F: bigFiles, S: 64 << 20, N: 1, Scens: []string{"hash", "noop", "restore"}}},
		{name: "O2m", wantErr: true},
		{name: "F0", wantErr: true},
		{name: "Q1k", wantErr: true},
		{name: "F1x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sz, err := parseDataSize(tt.name)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseDataSize(%q) error = %v, want error %v", tt.name, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !sz.data || sz.name != tt.name {
				t.Errorf("parseDataSize(%q) = name %q, data %v", tt.name, sz.name, sz.data)
			}
			if diff := cmp.Diff(tt.want, got{sz.f, sz.s, sz.n, sz.scens}); diff != "" {
				t.Errorf("parseDataSize(%q) (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

// The harness's edit must hit a file gen -data files wrote.
func TestDataFileNameMatchesGen(t *testing.T) {
	for i, want := range map[int]string{0: "in/d0000/f0000000", 500_500: "in/d0500/f0500500", 999_999: "in/d0999/f0999999"} {
		if got := dataFileName(i); got != want {
			t.Errorf("dataFileName(%d) = %q, want %q", i, got, want)
		}
	}
}
