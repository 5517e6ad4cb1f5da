package main

import (
	"errors"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/callmemo"
)

func newMemoCommand(g *globals) *cobra.Command {
	var envNames, inputs []string
	cmd := &cobra.Command{
		Use:   "memo [--env NAME]... [--input FILE]... -- CMD [ARG...]",
		Short: "Run a command through the cache: a repeated call replays its stdout and exit status",
		Long: `Run a command through the cache, inside a phase or anywhere else.

The call's key is its argv, its stdin, the values of the --env variables and
the content of the --input files. A call seen before replays the recorded
stdout and exit status without running anything, and what it reported
through $CAIRN_REPORT is not charged again. A loop of paid API calls
interrupted half way therefore pays only for the calls it had not made.

Stdin is read to its end before the command runs, since it is part of the
key (it is spooled to a temp file in $TMPDIR, as stdout is; neither is held
in memory, whatever its size):
inside a "while read" loop, give cairn memo </dev/null so that it does not
swallow the loop's input.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var c *remote.Tiered
			var err error
			if dir := os.Getenv("CAIRN_CACHE_DIR"); dir != "" && g.CacheDir == "" {
				c, err = g.openCache(dir, nil)
			} else {
				c, err = g.looseCache()
			}
			if err != nil {
				return err
			}
			opts := callmemo.Options{
				Argv:     args,
				EnvNames: envNames,
				Inputs:   inputs,
				Stdout:   cmd.OutOrStdout(),
				Stderr:   os.Stderr,
				Environ:  os.Environ(),
			}
			if !isatty.IsTerminal(os.Stdin.Fd()) {
				opts.Stdin = os.Stdin
			}
			res, err := callmemo.Run(g.watchContext(cmd.Context()), c, opts)
			if res != nil && res.ExitCode != 0 {
				if err != nil {
					return errors.Join(err, &exitError{code: res.ExitCode})
				}
				return &exitError{code: res.ExitCode}
			}
			return err
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringArrayVar(&envNames, "env", nil, "put the value of environment variable `NAME` into the key (repeatable)")
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "put the content of `FILE` into the key (repeatable)")
	return cmd
}
