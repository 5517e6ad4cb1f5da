package chunking

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// serialCuts is Cuts as one loop.
func serialCuts(names []string) []int {
	cuts := []int{0}
	for i := 1; i < len(names); i++ {
		start := cuts[len(cuts)-1]
		if i-start >= Max || names[i] != names[i-1] && Starts(names[i]) {
			cuts = append(cuts, i)
		}
	}
	return append(cuts, len(names))
}

func names(n int, name func(i int) string) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = name(i)
	}
	return s
}

func TestCuts(t *testing.T) {
	never := func(n int) []string { // names that never start a chunk
		var s []string
		for i := 0; len(s) < n; i++ {
			if name := fmt.Sprintf("in/%08d", i); !Starts(name) {
				s = append(s, name)
			}
		}
		return s
	}
	starting := ""
	for i := 0; starting == ""; i++ {
		if name := fmt.Sprintf("s%d", i); Starts(name) {
			starting = name
		}
	}
	tests := []struct {
		name  string
		names []string
		want  []int // nil: as serialCuts
	}{
		{"none", nil, []int{0}},
		{"one", []string{"a"}, []int{0, 1}},
		{"many, over several ranges", names(100000, func(i int) string { return fmt.Sprintf("in/d%03d/f%07d", i/1000, i) }), nil},
		{"never starting: cut every Max", never(2*Max + 5), []int{0, Max, 2 * Max, 2*Max + 5}},
		{"a starting name repeated starts one chunk", []string{"a", starting, starting, starting}, []int{0, 1, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil {
				want = serialCuts(tt.names)
				if len(want) < 100 {
					t.Fatalf("only %d cuts: the case tests little", len(want))
				}
			}
			got := Cuts(len(tt.names), func(i int) string { return tt.names[i] })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cuts (-want +got):\n%s", diff)
			}
		})
	}
}

// Encode's sums are the hashes of header and each chunk's items, and all
// gets every chunk's items in order, however many hand-offs that takes.
func TestEncode(t *testing.T) {
	header := []byte("hdr")
	for _, n := range []int{1, 10, 100000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			items := names(n, func(i int) string { return fmt.Sprintf("item %d;", i) })
			cuts := Cuts(n, func(i int) string { return items[i] })
			all := sha256.New()
			got := Encode(cuts, func(b []byte, i int) []byte { return append(b, items[i]...) }, header, all)
			var want []Sum
			whole := sha256.New()
			for j := 0; j+1 < len(cuts); j++ {
				var chunk []byte
				for i := cuts[j]; i < cuts[j+1]; i++ {
					chunk = append(chunk, items[i]...)
				}
				whole.Write(chunk)
				want = append(want, Sum{sha256.Sum256(append(append([]byte{}, header...), chunk...)), int64(len(header) + len(chunk))})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("sums (-want +got):\n%s", diff)
			}
			if a, b := all.Sum(nil), whole.Sum(nil); string(a) != string(b) {
				t.Errorf("all hashed %x, the chunks in order hash to %x", a, b)
			}
		})
	}
}
