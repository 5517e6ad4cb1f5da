package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/spec"
	"github.com/google/go-cmp/cmp"
)

// A phase's components come sorted by kind and name whatever the input
// files' names: in the walk's order, or sorted again when redacting a
// sensitive value changed a name's place.
func TestComponentsSorted(t *testing.T) {
	for _, tt := range []struct {
		name      string
		sensitive []string
		want      []string // the input components' names
	}{
		{"in the walk's order", nil, []string{"in/a", "in/xb", "in/z"}},
		{"a redacted name sorts first", []string{"xb"}, []string{"in/" + sensitiveToken("xb"), "in/a", "in/z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "in"), 0o755)
			for _, f := range []string{"a", "xb", "z"} {
				os.WriteFile(filepath.Join(dir, "in", f), []byte(f), 0o644)
			}
			src := "phase \"p\" {\n command = \"true\"\n inputs = [\"in\"]\n outputs = [\"o\"]\n env = { A = \"1\" }\n}\n"
			os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(src), 0o644)
			sp, diags := spec.NewParser().LoadFile(filepath.Join(dir, "experiment.hcl"), spec.Options{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			sp.SensitiveValues = tt.sensitive
			c, _ := cache.Open(filepath.Join(t.TempDir(), "cache"))
			comps, err := New(sp, tiered(c), Config{}).components(sp.Phase("p"), nil)
			if err != nil {
				t.Fatal(err)
			}
			byKind := func(a, b cache.Component) int {
				if c := strings.Compare(a.Kind, b.Kind); c != 0 {
					return c
				}
				return strings.Compare(a.Name, b.Name)
			}
			if !slices.IsSortedFunc(comps, byKind) {
				t.Errorf("components not sorted: %v", comps)
			}
			var kinds, inputs []string
			for _, c := range comps {
				kinds = append(kinds, c.Kind)
				if c.Kind == kindInput {
					inputs = append(inputs, c.Name)
				}
			}
			if diff := cmp.Diff(tt.want, inputs); diff != "" {
				t.Errorf("input components (-want +got):\n%s", diff)
			}
			// The other kinds on both sides of the inputs.
			if want := []string{"command", "env", "input", "input", "input", "output", "workdir"}; !cmp.Equal(want, kinds) {
				t.Errorf("kinds %v, want %v", kinds, want)
			}
		})
	}
}
