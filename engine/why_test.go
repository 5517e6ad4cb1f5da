package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/spec"
)

func TestFieldDiffs(t *testing.T) {
	dig := strings.Repeat("ab", 32)
	dig2 := strings.Repeat("cd", 32)
	cmd := func(s string) cache.Component {
		return cache.Component{Kind: kindCommand, Value: `["sh","-c",` + `"` + s + `"]`}
	}
	tests := []struct {
		name      string
		prev, cur []cache.Component
		compare   bool
		sensitive []string
		want      []FieldDiff
	}{
		{
			name:    "same and changed",
			prev:    []cache.Component{cmd("a"), {Kind: kindParam, Name: "n", Value: "1"}},
			cur:     []cache.Component{cmd("a"), {Kind: kindParam, Name: "n", Value: "2"}},
			compare: true,
			want: []FieldDiff{
				{Kind: kindCommand, Change: FieldSame, New: `"a"`},
				{Kind: kindParam, Name: "n", Change: FieldChanged, Old: "1", New: "2"},
			},
		},
		{
			name:    "added and removed inputs show short digests",
			prev:    []cache.Component{{Kind: kindInput, Name: "old.txt", Value: "-:" + dig}},
			cur:     []cache.Component{{Kind: kindInput, Name: "new.sh", Value: "x:" + dig2}},
			compare: true,
			want: []FieldDiff{
				{Kind: kindInput, Name: "new.sh", Change: FieldAdded, New: "sha256:cdcdcdcdcdcd (executable)"},
				{Kind: kindInput, Name: "old.txt", Change: FieldRemoved, Old: "sha256:abababababab"},
			},
		},
		{
			name: "nothing to compare with: every field is new",
			cur:  []cache.Component{{Kind: kindEnv, Name: "K", Value: "v"}},
			want: []FieldDiff{{Kind: kindEnv, Name: "K", Change: FieldAdded, New: "v"}},
		},
		{
			name:      "a sensitive value is hidden on both sides",
			prev:      []cache.Component{cmd("curl -H tok-OLD")},
			cur:       []cache.Component{cmd("curl -H tok-NEW")},
			compare:   true,
			sensitive: []string{"tok-NEW"},
			want:      []FieldDiff{{Kind: kindCommand, Change: FieldChanged, Old: "(sensitive)", New: "(sensitive)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Engine{spec: &spec.Spec{SensitiveValues: tt.sensitive}}
			got := e.fieldDiffs(tt.prev, tt.cur, tt.compare)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fieldDiffs (-want +got):\n%s", diff)
			}
		})
	}
}
