package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cairn's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version
			if v == "" {
				v = "devel"
				if bi, ok := debug.ReadBuildInfo(); ok {
					if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
						v = bi.Main.Version
					}
					for _, s := range bi.Settings {
						if s.Key == "vcs.revision" && len(s.Value) >= 12 {
							v += " " + s.Value[:12]
						}
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cairn %s\n", v)
			return nil
		},
	}
}
