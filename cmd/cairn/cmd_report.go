package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	htmlreport "github.com/cairn-run/cairn/report"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

type reportOptions struct {
	Output string
}

func newReportCommand(g *globals) *cobra.Command {
	var opts reportOptions
	cmd := &cobra.Command{
		Use:   "report [RUN]",
		Short: "Write a run (default: the latest) as one self-contained HTML page",
		Long: `Write one HTML page describing a run (default: the latest): its status,
times and spend, its phase graph coloured by what each phase did, a table of
the phases, their params and metrics, and the last lines of their logs.
The page loads nothing from anywhere, so it can be mailed or attached as it
is. The graph is drawn from the spec with the run's -var values; when the
spec no longer loads, the phases are drawn from the run record alone.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(g, opts, args, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "report.html", "write the page to `FILE` (- for standard output)")
	return cmd
}

func runReport(g *globals, opts reportOptions, args []string, out io.Writer) error {
	ws, st, err := g.runFromArgs(args)
	if err != nil {
		return err
	}
	in := htmlreport.Input{Run: st, Root: ws.Root, Version: version}

	// The graph is the spec's, read with the run's -var values (those
	// given now win), so that its for_each instances are the run's.
	g.Vars = append(append([]string{}, st.Request.Vars...), g.Vars...)
	g.VarFiles = append(append([]string{}, st.Request.VarFiles...), g.VarFiles...)
	if s, err := loadSpecQuietly(g); err != nil {
		in.SpecError = err
	} else {
		in.Experiment = s.Experiment.Name
		in.Graph = s.Graph
		in.SpecChanged = st.SpecHash != "" && s.Hash != st.SpecHash
		in.Group = func(addr string) string {
			if p := s.Phase(addr); p != nil && p.HasForEach {
				return p.Block
			}
			return ""
		}
		in.CachedLogs = cachedLogReader(g, s)
	}

	if opts.Output == "-" {
		return htmlreport.Write(out, in)
	}
	if err := writeReportFile(opts.Output, in); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s (run %s, %s)\n", opts.Output, st.RunID, st.Status)
	return nil
}

// loadSpecQuietly loads the spec for its graph. Its problems are not the
// report's: they are summed up on the page instead of printed.
func loadSpecQuietly(g *globals) (*spec.Spec, error) {
	if _, err := os.Stat(g.File); err != nil {
		return nil, fmt.Errorf("spec %s: %w", g.File, err)
	}
	stderr := g.stderr
	g.stderr = io.Discard
	defer func() { g.stderr = stderr }()
	s, err := g.loadSpec()
	if err != nil {
		var de *diagError
		if errors.As(err, &de) {
			for _, d := range de.diags {
				if d.Severity == hcl.DiagError && d.Subject != nil {
					return nil, fmt.Errorf("%s: %s", d.Subject, d.Summary)
				}
			}
			return nil, fmt.Errorf("%s: %s", g.File, de.diags.Errs()[0])
		}
		return nil, err
	}
	return s, nil
}

// cachedLogReader reads the logs of a phase that was cached in the run
// from the local cache (never the remote: a report does not touch the
// network). The cache is opened on first use, and only if it exists.
func cachedLogReader(g *globals, s *spec.Spec) func(string, *runrec.PhaseState) ([]byte, []byte, error) {
	var c *remote.Tiered
	var openErr error
	opened := false
	return func(_ string, ps *runrec.PhaseState) ([]byte, []byte, error) {
		if !opened {
			opened = true
			c, openErr = openLocalCache(g, s)
		}
		if openErr != nil {
			return nil, nil, openErr
		}
		key, err := cache.ParseActionID(ps.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("no cache key recorded")
		}
		e, err := c.GetLocalEntry(key)
		if err != nil {
			return nil, nil, err
		}
		var logs [2][]byte
		for i, d := range []cache.Digest{e.Stdout, e.Stderr} {
			if d.IsZero() {
				continue
			}
			if logs[i], err = c.ReadEntryBlob(e, d); err != nil {
				return nil, nil, err
			}
		}
		return logs[0], logs[1], nil
	}
}

func openLocalCache(g *globals, s *spec.Spec) (*remote.Tiered, error) {
	dir, err := g.cacheDir(s)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	was := g.RemoteCache
	g.RemoteCache = "off"
	defer func() { g.RemoteCache = was }()
	return g.openCache(dir, s)
}

// writeReportFile writes the page through a temporary file in the target's
// directory and a rename, so the file is never seen half written.
func writeReportFile(path string, in htmlreport.Input) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = htmlreport.Write(f, in); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}
