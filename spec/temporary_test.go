package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

// A temporary output is named by path or name; one that no phase reads
// is a warning (it would never be removed), one that is read is not.
func TestTemporary(t *testing.T) {
	tests := []struct {
		name, src string
		temp      []string
		warnings  []string
	}{
		{
			name: "read by name and by input",
			src: `
phase "a" {
  command   = "true"
  outputs   = { x = "mid/x", y = "mid/y" }
  temporary = ["x", "mid/y"]
}
phase "b" {
  command = "cat ${phase.a.outputs.x} mid/y"
  inputs  = ["mid/y"]
  outputs = ["b.txt"]
}`,
			temp: []string{"mid/x", "mid/y"},
		},
		{
			name: "read by depends_on",
			src: `
phase "a" {
  command   = "true"
  outputs   = ["mid/x"]
  temporary = ["mid/x"]
}
phase "b" {
  command    = "true"
  depends_on = [phase.a]
  outputs    = ["b.txt"]
}`,
			temp: []string{"mid/x"},
		},
		{
			name: "read by nobody",
			src: `
phase "a" {
  command   = "true"
  outputs   = { x = "mid/x", y = "mid/y" }
  temporary = ["y"]
}
phase "b" {
  command = "cat ${phase.a.outputs.x}"
  outputs = ["b.txt"]
}`,
			temp:     []string{"mid/y"},
			warnings: []string{"Temporary output that no phase reads"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, diags := load(t, "t.hcl", []byte(tt.src), Options{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			var warnings []string
			for _, d := range diags {
				if d.Severity == hcl.DiagWarning {
					warnings = append(warnings, d.Summary)
				}
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.temp, s.Phase("a").Temporary); diff != "" {
				t.Errorf("temporary (-want +got):\n%s", diff)
			}
		})
	}
}
