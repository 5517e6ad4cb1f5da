package spec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cairn-run/cairn/internal/cores"
)

// TestSelf: a phase written with self evaluates to the same model (so
// the same key) as the phase written with its paths spelt out, with map
// and list outputs, for_each over strings and over another phase, in
// every attribute evaluated after inputs and outputs, one instance at a
// time and side by side (130 instances are evaluated in chunks).
func TestSelf(t *testing.T) {
	cases := []struct {
		name          string
		self, literal string
	}{
		{
			name: "map outputs, for_each",
			self: `
phase "sort" {
  for_each = toset([for i in range(130) : "s${i}"])
  inputs   = ["mapped/${each.key}.bam", "./ref//genome.fa", "reads/*.fq"]
  outputs  = { bam = "sorted/${each.key}.bam", bai = "./sorted/${each.key}.bam.bai" }
  command  = "samtools sort -o ${self.outputs.bam} ${self.inputs[0]} && index ${self.outputs["bai"]} ${self.key} ${self.name}"
  env      = { OUT = self.outputs.bam, N = length(self.inputs) }
  params   = { inputs = self.inputs, outputs = self.outputs }
  description = "sort into ${self.outputs.bam}"
  workdir  = trimsuffix(self.outputs.bam, "/${each.key}.bam")
}`,
			literal: `
phase "sort" {
  for_each = toset([for i in range(130) : "s${i}"])
  inputs   = ["mapped/${each.key}.bam", "./ref//genome.fa", "reads/*.fq"]
  outputs  = { bam = "sorted/${each.key}.bam", bai = "./sorted/${each.key}.bam.bai" }
  command  = "samtools sort -o sorted/${each.key}.bam mapped/${each.key}.bam && index sorted/${each.key}.bam.bai ${each.key} sort[\"${each.key}\"]"
  env      = { OUT = "sorted/${each.key}.bam", N = 3 }
  params   = { inputs = ["mapped/${each.key}.bam", "ref/genome.fa", "reads/*.fq"], outputs = { bai = "sorted/${each.key}.bam.bai", bam = "sorted/${each.key}.bam" } }
  description = "sort into sorted/${each.key}.bam"
  workdir  = "sorted"
}`,
		},
		{
			name: "list outputs, argv command, budget",
			self: `
phase "train" {
  outputs = ["model.bin", "log.txt"]
  command = ["train", "--out", self.outputs[0], "--log", self.outputs[1], "--n", length(self.outputs)]
  params  = { out = self.outputs }
  budget { timeout = length(self.outputs) > 1 ? "1h" : "2h" }
}`,
			literal: `
phase "train" {
  outputs = ["model.bin", "log.txt"]
  command = ["train", "--out", "model.bin", "--log", "log.txt", "--n", 2]
  params  = { out = ["model.bin", "log.txt"] }
  budget { timeout = "1h" }
}`,
		},
		{
			name: "for_each over a phase, no inputs",
			self: `
phase "gen" {
  for_each = toset(["x", "y"])
  command  = "echo ${each.key} > ${self.outputs.o}"
  outputs  = { o = "gen/${each.key}" }
}
phase "use" {
  for_each = phase.gen
  outputs  = { o = "use/${each.key}" }
  command  = "cat ${each.value.outputs.o} > ${self.outputs.o}; echo ${length(self.inputs)}"
}`,
			literal: `
phase "gen" {
  for_each = toset(["x", "y"])
  command  = "echo ${each.key} > gen/${each.key}"
  outputs  = { o = "gen/${each.key}" }
}
phase "use" {
  for_each = phase.gen
  outputs  = { o = "use/${each.key}" }
  command  = "cat ${each.value.outputs.o} > use/${each.key}; echo 0"
}`,
		},
	}
	opts := []cmp.Option{cmpopts.IgnoreUnexported(Spec{}, Phase{}), cmpopts.IgnoreFields(Spec{}, "Graph", "Hash", "File"), cmpopts.IgnoreFields(Phase{}, "DeclRange")}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, diags := load(t, "literal.hcl", []byte(c.literal), Options{})
			if len(diags) > 0 {
				t.Fatalf("literal: %s", diags.Error())
			}
			for _, procs := range []int{1, 4} {
				func() {
					defer func(old int) { cores.N = old }(cores.N)
					cores.N = procs
					got, diags := load(t, "self.hcl", []byte(c.self), Options{})
					if len(diags) > 0 {
						t.Fatalf("self: %s", diags.Error())
					}
					if diff := cmp.Diff(want, got, opts...); diff != "" {
						t.Errorf("%d cores: with self differs from literal paths (-literal +self):\n%s", procs, diff)
					}
				}()
			}
		})
	}
}

// TestSelfErrors: self where it cannot exist, or naming what the phase
// does not declare, is an error at its place.
func TestSelfErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // "line:col: summary"
	}{
		{
			name: "in outputs",
			src: `phase "a" {
  inputs  = ["in"]
  outputs = { o = "${self.inputs[0]}.out" }
  command = "true"
}`,
			want: []string{`3:22: Reference to "self" in outputs`},
		},
		{
			name: "in inputs and for_each",
			src: `phase "a" {
  for_each = toset(self.outputs)
  inputs   = [self.outputs.o]
  outputs  = { o = "out" }
  command  = "true"
}`,
			want: []string{`2:20: Reference to "self" in for_each`, `3:15: Reference to "self" in inputs`},
		},
		{
			name: "undeclared output",
			src: `phase "a" {
  outputs = { o = "out" }
  command = "echo > ${self.outputs.p}"
}`,
			want: []string{`3:35: Unsupported attribute`},
		},
		{
			name: "outside a phase",
			src: `locals { x = self.outputs }
phase "a" {
  command = "true"
}`,
			want: []string{`1:14: Unknown variable`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, diags := load(t, "self.hcl", []byte(c.src), Options{})
			var got []string
			for _, d := range diags {
				got = append(got, itoa(d.Subject.Start.Line)+":"+itoa(d.Subject.Start.Column)+": "+d.Summary)
				if strings.Contains(d.Summary, `"self"`) && !strings.Contains(d.Detail, "self.outputs.NAME") {
					t.Errorf("detail does not say what to write instead: %s", d.Detail)
				}
			}
			// Attributes are checked in map order.
			if diff := cmp.Diff(c.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s\n%s", diff, diags.Error())
			}
		})
	}
}
