package cores

import (
	"errors"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRanges(t *testing.T) {
	tests := []struct {
		name                 string
		n, workers, minRange int
		wantRanges           int
	}{
		{"nothing", 0, 2, 10, 0},
		{"fewer than minRange: one range", 9, 2, 10, 1},
		{"exactly minRange", 10, 2, 10, 1},
		{"a few ranges of minRange", 35, 2, 10, 3},
		{"many: four a worker", 1000000, 2, 1000, 8},
		{"one worker", 1000, 1, 10, 4},
		{"zero workers and minRange taken as one: ranges of 2", 5, 0, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got [][2]int
			err := Ranges(tt.n, tt.workers, tt.minRange, func(lo, hi int) error {
				mu.Lock()
				got = append(got, [2]int{lo, hi})
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
			if len(got) != tt.wantRanges {
				t.Errorf("%d ranges %v, want %d", len(got), got, tt.wantRanges)
			}
			// The ranges cover [0, n) exactly, in order, none empty.
			at := 0
			for _, r := range got {
				if r[0] != at || r[1] <= r[0] {
					t.Fatalf("ranges %v do not tile [0, %d)", got, tt.n)
				}
				at = r[1]
			}
			if diff := cmp.Diff(tt.n, at); diff != "" {
				t.Errorf("ranges end (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRangesError(t *testing.T) {
	boom := errors.New("boom")
	err := Ranges(100, 2, 10, func(lo, hi int) error {
		if lo <= 50 && 50 < hi {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the range's error", err)
	}
}
