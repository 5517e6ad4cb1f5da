package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/internal/hclfmt"
)

func newFmtCommand(g *globals) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "fmt [--check] [FILE...]",
		Short: "Rewrite spec files in the canonical HCL layout (default: the -f file)",
		Long: `Rewrite spec files in the canonical HCL layout: aligned equals signs,
two-space indentation, normalised spacing. With --check, change nothing,
print the files that are not formatted and exit 1 if there are any.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			files := args
			if len(files) == 0 {
				files = []string{g.File}
			}
			parser := hclparse.NewParser()
			var diags hcl.Diagnostics
			var unformatted []string
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				// A file that does not parse is reported, never rewritten.
				if _, d := parser.ParseHCL(src, f); d.HasErrors() {
					diags = append(diags, d...)
					continue
				}
				out := hclfmt.Format(src)
				if bytes.Equal(out, src) {
					continue
				}
				unformatted = append(unformatted, f)
				if check {
					continue
				}
				if err := writeKeepingMode(f, out); err != nil {
					return err
				}
			}
			for _, f := range unformatted {
				fmt.Fprintln(cmd.OutOrStdout(), f)
			}
			if diags.HasErrors() {
				return &diagError{diags: diags, files: parser.Files()}
			}
			if check && len(unformatted) > 0 {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("%d file(s) not formatted; run cairn fmt", len(unformatted))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "list files that are not formatted and exit 1, changing nothing")
	return cmd
}

// writeKeepingMode replaces path with data atomically, keeping its mode.
func writeKeepingMode(path string, data []byte) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".fmt-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
