package keydiff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
)

func TestFields(t *testing.T) {
	dig := strings.Repeat("ab", 32)
	dig2 := strings.Repeat("cd", 32)
	cmd := func(s string) cache.Component {
		return cache.Component{Kind: KindCommand, Value: `["sh","-c",` + `"` + s + `"]`}
	}
	tests := []struct {
		name      string
		prev, cur []cache.Component
		compare   bool
		sensitive []string
		want      []Field
	}{
		{
			name:    "same and changed",
			prev:    []cache.Component{cmd("a"), {Kind: "param", Name: "n", Value: "1"}},
			cur:     []cache.Component{cmd("a"), {Kind: "param", Name: "n", Value: "2"}},
			compare: true,
			want: []Field{
				{Kind: KindCommand, Change: FieldSame, New: `"a"`},
				{Kind: "param", Name: "n", Change: FieldChanged, Old: "1", New: "2"},
			},
		},
		{
			name:    "added and removed inputs show short digests",
			prev:    []cache.Component{{Kind: KindInput, Name: "old.txt", Value: "-:" + dig}},
			cur:     []cache.Component{{Kind: KindInput, Name: "new.sh", Value: "x:" + dig2}},
			compare: true,
			want: []Field{
				{Kind: KindInput, Name: "new.sh", Change: FieldAdded, New: "sha256:cdcdcdcdcdcd (executable)"},
				{Kind: KindInput, Name: "old.txt", Change: FieldRemoved, Old: "sha256:abababababab"},
			},
		},
		{
			name: "nothing to compare with: every field is new",
			cur:  []cache.Component{{Kind: "env", Name: "K", Value: "v"}},
			want: []Field{{Kind: "env", Name: "K", Change: FieldAdded, New: "v"}},
		},
		{
			name:      "a sensitive value is hidden on both sides",
			prev:      []cache.Component{cmd("curl -H tok-OLD")},
			cur:       []cache.Component{cmd("curl -H tok-NEW")},
			compare:   true,
			sensitive: []string{"tok-NEW"},
			want:      []Field{{Kind: KindCommand, Change: FieldChanged, Old: "(sensitive)", New: "(sensitive)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fields(tt.prev, tt.cur, tt.compare, tt.sensitive)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Fields (-want +got):\n%s", diff)
			}
		})
	}
}
