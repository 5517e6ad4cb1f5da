package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cache/remote/s3"
	"github.com/cairn-run/cairn/cmd/cairn/internal/progress"
	"github.com/cairn-run/cairn/internal/fsx"
)

// s3Remote returns the S3 client behind c's remote, or a usage error
// saying what is needed.
func s3Remote(c *remote.Tiered, what string) (*s3.Client, error) {
	r := c.Remote()
	if r == nil {
		return nil, usageError{fmt.Errorf("%s: no remote cache: set --remote-cache s3://BUCKET/PREFIX, CAIRN_REMOTE_CACHE or cache { remote } in the spec", what)}
	}
	s, ok := remoteBackend(r).(*s3.Client)
	if !ok {
		return nil, usageError{fmt.Errorf("%s works with an s3:// remote cache; %s is an HTTP cache server, which manages its own storage (bazel-remote --max_size)", what, r)}
	}
	return s, nil
}

// remoteGC is cairn cache gc --remote: evict what the bucket's entries
// have not been used for maxAge.
func remoteGC(cmd *cobra.Command, g *globals, maxAge time.Duration, dry, asJSON bool) error {
	if maxAge < s3.MinGCAge {
		return usageError{fmt.Errorf("--max-age %v is too short for a remote cache: a hit records its use at most once a day, so the shortest is 2d", maxAge)}
	}
	c, err := g.looseCache()
	if err != nil {
		return err
	}
	s, err := s3Remote(c, "cache gc --remote")
	if err != nil {
		return err
	}
	rep, err := s.GC(cmd.Context(), s3.GCOptions{MaxAge: maxAge, DryRun: dry})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return writeJSON(out, rep)
	}
	verb := "removed"
	if dry {
		verb = "would remove"
		for _, it := range rep.Removed {
			fmt.Fprintf(out, "would remove %s %s (%s, last used %s)\n", it.Kind, shortID(it.ID), fsx.FormatBytes(it.Size), it.LastUse.Local().Format("2006-01-02 15:04"))
		}
	}
	fmt.Fprintf(out, "gc --remote %s: %s %s and %s (%s), %d unfinished uploads; kept %s and %s\n",
		s, verb, progress.Plural(rep.EntriesRemoved, "entry"), progress.Plural(rep.BlobsRemoved, "blob"), fsx.FormatBytes(rep.BytesRemoved), rep.UploadsAborted,
		progress.Plural(rep.EntriesKept, "entry"), progress.Plural(rep.BlobsKept, "blob"))
	for _, w := range rep.Warnings {
		g.warn("gc --remote: " + w)
	}
	return nil
}

// printRemoteUsage is the remote part of cairn cache stats --remote.
func printRemoteUsage(cmd *cobra.Command, out io.Writer, c *remote.Tiered) error {
	s, err := s3Remote(c, "cache stats --remote")
	if err != nil {
		return err
	}
	u, err := s.Usage(cmd.Context())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "remote      %s: %d entries (%s), %d blobs (%s)\n", s, u.Entries, fsx.FormatBytes(u.EntryBytes), u.Blobs, fsx.FormatBytes(u.BlobBytes))
	return nil
}
