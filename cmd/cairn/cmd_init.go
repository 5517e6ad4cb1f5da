package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// initFiles is the experiment cairn init writes: small, runnable, and
// showing inputs, outputs, a reference, params and a sweep.
var initFiles = []struct {
	name, body string
	mode       os.FileMode
}{
	{"experiment.hcl", `experiment "my-experiment" {
  description = "a small experiment written by cairn init"
}

variable "seeds" {
  type    = set(string)
  default = ["1", "2"]
}

phase "prepare" {
  command = "sh scripts/prepare.sh data/clean.txt"
  inputs  = ["scripts/prepare.sh"]
  outputs = { data = "data/clean.txt" }
}

phase "train" {
  for_each = var.seeds
  command  = "sh scripts/train.sh ${phase.prepare.outputs.data} ${each.value} out/model-${each.key}.txt"
  inputs   = ["scripts/train.sh"]
  outputs  = { model = "out/model-${each.key}.txt" }
  params   = { seed = each.value }
}

phase "report" {
  command = "cat ${join(" ", [for k, t in phase.train : t.outputs.model])} > out/report.txt"
  outputs = ["out/report.txt"]
}
`, 0o644},
	{"scripts/prepare.sh", `#!/bin/sh
# prepare.sh OUT: writes the cleaned data.
set -eu
printf 'alpha\nbeta\ngamma\n' > "$1"
`, 0o755},
	{"scripts/train.sh", `#!/bin/sh
# train.sh DATA SEED OUT: a stand-in for training one model.
set -eu
echo "model seed=$2 lines=$(wc -l < "$1" | tr -d ' ')" > "$3"
`, 0o755},
}

func newInitCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a small runnable experiment into a directory (default: the current one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) > 0 {
				dir = args[0]
			}
			for _, f := range initFiles {
				if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
					return fmt.Errorf("%s already exists; cairn init writes only into a directory without an experiment", filepath.Join(dir, f.name))
				} else if !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
			for _, f := range initFiles {
				p := filepath.Join(dir, f.name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, []byte(f.body), f.mode); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", p)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "next: cd %s && cairn plan && cairn run\n", dir)
			return nil
		},
	}
}
