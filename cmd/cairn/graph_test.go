package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// graphSpec has a for_each phase whose keys need escaping in DOT.
const graphSpec = `experiment "graph \"demo\"" {}

variable "models" {
  type    = map(string)
  default = { m1 = "1", "a \"quoted\" key" = "2", "back\\slash" = "3" }
}

phase "prepare" {
  command = "echo data > data.txt"
  outputs = ["data.txt"]
}

phase "harden" {
  for_each = var.models
  command  = "cat data.txt > h-${each.value}.txt"
  inputs   = [phase.prepare.outputs[0]]
  outputs  = ["h-${each.value}.txt"]
}

phase "report" {
  command = "cat h-*.txt > report.txt"
  inputs  = [for k, v in phase.harden : v.outputs[0]]
  outputs = ["report.txt"]
}
`

// TestGraphDOTGraphviz feeds cairn graph --format dot, plain and with
// --status, to Graphviz. It skips when Graphviz is not installed, unless
// CAIRN_REQUIRE_SERVICES=1 (as in CI, which installs it), which makes that
// a failure.
func TestGraphDOTGraphviz(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CAIRN_REQUIRE_SERVICES") == "1" {
			t.Fatalf("Graphviz dot not found (CAIRN_REQUIRE_SERVICES=1; apt-get install graphviz): %v", err)
		}
		t.Skip("Graphviz dot not installed")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "experiment.hcl")
	if err := os.WriteFile(file, []byte(graphSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_CACHE_DIR", filepath.Join(dir, ".cache"))
	for name, args := range map[string][]string{
		"plain":  {"graph", "--format", "dot"},
		"status": {"graph", "--status"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			g := &globals{stderr: &stderr, stopCh: make(chan struct{})}
			root := newRootCommand(g)
			root.SetArgs(append([]string{"-f", file}, args...))
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			if err := root.ExecuteContext(t.Context()); err != nil {
				t.Fatalf("cairn %v: %v\n%s", args, err, stderr.Bytes())
			}
			wants := []string{`subgraph "cluster_harden"`, `"harden[\"a \\\"quoted\\\" key\"]"`, `"harden[\"back\\\\slash\"]"`}
			if name == "status" {
				wants = append(wants, `subgraph "cluster_legend"`, `label="run"`)
			}
			for _, want := range wants {
				if !bytes.Contains(stdout.Bytes(), []byte(want)) {
					t.Errorf("cairn %v lacks %s:\n%s", args, want, stdout.Bytes())
				}
			}
			cmd := exec.CommandContext(t.Context(), dot, "-Tsvg")
			cmd.Stdin = &stdout
			var dotErr bytes.Buffer
			cmd.Stderr = &dotErr
			svg, err := cmd.Output()
			if err != nil || dotErr.Len() > 0 {
				t.Fatalf("dot -Tsvg: %v\n%s", err, dotErr.Bytes())
			}
			if !bytes.Contains(svg, []byte("<svg")) {
				t.Fatalf("dot -Tsvg: output is not SVG:\n%s", svg)
			}
		})
	}
}
