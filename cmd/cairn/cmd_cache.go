package main

import (
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cache/sigkey"
	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/cmd/cairn/internal/progress"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/internal/fsx"
)

func newCacheCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect, check, share and clean the cache",
		Long: `The cache holds every phase result, by content. These commands look after it:
where it is, how big, whether every object in it is sound, what to evict, how
to share it with a Unix group, and how to sync it with a remote cache.`,
	}
	cmd.AddCommand(
		newCachePathCommand(g),
		newCacheInitCommand(g),
		newCacheStatsCommand(g),
		newCacheVerifyCommand(g),
		newCacheGCCommand(g),
		newCachePushCommand(g),
		newCachePullCommand(g),
		newCacheKeygenCommand(),
	)
	return cmd
}

// cacheDirLoose is the cache directory without opening it: the spec's
// cache.dir counts when the spec loads.
func (g *globals) cacheDirLoose() (string, error) {
	return g.cacheDir(g.looseSpec())
}

func newCachePathCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "path",
		Short: "Print the cache directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.cacheDirLoose()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), dir)
			return nil
		},
	}
}

func newCacheInitCommand(g *globals) *cobra.Command {
	var shared bool
	var group string
	cmd := &cobra.Command{
		Use:   "init [--shared [--group GROUP]]",
		Short: "Create the cache directory; --shared makes it a cache a Unix group shares",
		Long: `Create the cache directory and its layout.

With --shared, the directory and every directory in it become setgid and
group-writable (2770) and every object group-readable (0440), owned by
--group (default: the directory's current group). Every cairn that opens the
cache afterwards keeps these modes whatever its user's umask, so teammates in
the group read each other's results and add their own. Files already there
that belong to other users are listed for their owner to fix.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.cacheDirLoose()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !shared {
				if group != "" {
					return usageError{fmt.Errorf("--group needs --shared")}
				}
				c, err := cache.Open(dir)
				if err != nil {
					return err
				}
				mode := "private"
				if c.Shared() {
					mode = "group-shared"
				}
				fmt.Fprintf(out, "cache %s ready (%s)\n", c.Root(), mode)
				return nil
			}
			rep, err := upkeep.MakeShared(dir, group)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "cache %s shared with group %s: directories 2770 (setgid), objects 0440; %d changed\n", rep.Root, rep.Group, rep.Fixed)
			if len(rep.Skipped) > 0 {
				fmt.Fprintf(out, "%d files belong to other users and keep their modes; their owner (or root) can run cairn cache init --shared again:\n  %s\n",
					len(rep.Skipped), strings.Join(first(rep.Skipped, 10), "\n  "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&shared, "shared", false, "make the cache shared by a Unix group")
	cmd.Flags().StringVar(&group, "group", "", "the `GROUP` that shares the cache (default: the directory's group)")
	return cmd
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… and %d more", len(s)-n))
	}
	return s
}

func newCachePushCommand(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "push [--all]",
		Short: "Upload the cached results of this experiment's phases (or every entry) to the remote cache",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var c *remote.Tiered
			var keys []cache.ActionID
			if all {
				dir, err := g.cacheDirLoose()
				if err != nil {
					return err
				}
				if c, err = g.openCache(dir, g.looseSpec()); err != nil {
					return err
				}
				if keys, err = c.EntryKeys(); err != nil {
					return err
				}
			} else {
				_, eng, err := g.openEngine(nil)
				if err != nil {
					return err
				}
				c = eng.Cache()
				plan, err := eng.Plan(engine.PlanOptions{})
				if err != nil {
					return err
				}
				for _, d := range plan.Decisions {
					if d.Action == engine.ActionRun || d.Key == "" {
						continue
					}
					k, err := cache.ParseActionID(d.Key)
					if err != nil {
						return err
					}
					keys = append(keys, k)
				}
			}
			if c.Remote() == nil {
				return usageError{fmt.Errorf("no remote cache: set --remote-cache URL, CAIRN_REMOTE_CACHE or cache { remote } in the spec")}
			}
			pushed, failed := 0, 0
			for _, k := range keys {
				e, b, err := c.ReadEntryBytes(k)
				if err == nil {
					err = c.Upload(e, b)
				}
				if err != nil {
					failed++
					g.warn(fmt.Sprintf("push %s: %v", k.Short(), err))
					continue
				}
				pushed++
			}
			st := c.RemoteStats()
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s to %s (%s uploaded, the rest already there)\n",
				progress.Plural(pushed, "entry"), c.Remote(), progress.Plural(int(st.BlobsUp), "blob"))
			if failed > 0 {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("%d entries could not be pushed", failed)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "push every entry in the local cache, not only this experiment's")
	return cmd
}

func newCachePullCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "pull",
		Short: "Fetch this experiment's results from the remote cache into the local one",
		Long: `Look up every phase of the experiment, asking the remote cache for what the
local cache lacks, and keep what it has (every byte verified). Nothing runs and
the workspace is not touched: cairn run or cairn checkout restores the outputs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, eng, err := g.openEngine(nil)
			if err != nil {
				return err
			}
			c := eng.Cache()
			if c.Remote() == nil {
				return usageError{fmt.Errorf("no remote cache: set --remote-cache URL, CAIRN_REMOTE_CACHE or cache { remote } in the spec")}
			}
			plan, err := eng.Plan(engine.PlanOptions{})
			if err != nil {
				return err
			}
			st := c.RemoteStats()
			fmt.Fprintf(cmd.OutOrStdout(), "pulled %s (%s) from %s; %d to run, %d cached, %d to restore\n",
				progress.Plural(int(st.Hits), "entry"), progress.Plural(int(st.BlobsDown), "blob"), c.Remote(), plan.Run, plan.Cached, plan.Restore)
			return nil
		},
	}
}

func newCacheStatsCommand(g *globals) *cobra.Command {
	var asJSON, onRemote bool
	var recent int
	cmd := &cobra.Command{
		Use:   "stats [--recent N] [--json] [--remote]",
		Short: "Entries, bytes, compression and the hit rate of recent runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.looseCache()
			if err != nil {
				return err
			}
			st, err := upkeep.StatsOf(c.Dir, recent)
			if st == nil {
				return err
			}
			if err != nil {
				g.warn(err.Error())
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, st)
			}
			mode := "private"
			if st.Shared {
				mode = "shared with its group"
			}
			fmt.Fprintf(out, "cache       %s (%s)\n", st.Root, mode)
			fmt.Fprintf(out, "entries     %d (%s)\n", st.Entries, fsx.FormatBytes(st.EntryBytes))
			fmt.Fprintf(out, "blobs       %d (%s on disk, %d compressed)\n", st.Blobs, fsx.FormatBytes(st.BlobBytes), st.CompressedBlobs)
			if st.CompressionRatio > 0 {
				fmt.Fprintf(out, "compression %.2f× (%s of content", st.CompressionRatio, fsx.FormatBytes(st.UncompressedBytes))
				if st.UnknownSizeBlobs > 0 {
					fmt.Fprintf(out, "; %d large compressed blobs not counted", st.UnknownSizeBlobs)
				}
				fmt.Fprintln(out, ")")
			}
			fmt.Fprintf(out, "total       %s\n", fsx.FormatBytes(st.Bytes))
			if onRemote {
				if err := printRemoteUsage(cmd, out, c); err != nil {
					return err
				}
			}
			if st.TempFiles > 0 || st.Quarantined > 0 {
				fmt.Fprintf(out, "other       %d temp files (%s), %d quarantined (%s)\n", st.TempFiles, fsx.FormatBytes(st.TempBytes), st.Quarantined, fsx.FormatBytes(st.QuarantineBytes))
			}
			if len(st.Sessions) > 0 {
				fmt.Fprintf(out, "hit rate    %.0f%% over the last %s (%d hits, %d misses, %d stored)\n",
					100*st.HitRate, progress.Plural(len(st.Sessions), "run"), st.Hits, st.Misses, st.Puts)
				for _, s := range st.Sessions {
					fmt.Fprintf(out, "  %s  %-5s  %4d hits %4d misses %4d stored  %s\n",
						s.Start.Local().Format("2006-01-02 15:04:05"), s.State, s.Hits, s.Misses, s.Puts, s.Label)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&recent, "recent", 10, "summarise the last `N` runs (0: all)")
	cmd.Flags().BoolVar(&onRemote, "remote", false, "also list what the s3:// remote cache holds")
	return cmd
}

func newCacheVerifyCommand(g *globals) *cobra.Command {
	var asJSON, repair bool
	var subset string
	cmd := &cobra.Command{
		Use:   "verify [--repair] [--subset N/M] [--json]",
		Short: "Re-hash every object and check every entry; exit non-zero on any problem",
		Long: `Re-hash every blob, decode every action entry and check that what it references
is there, and look for temp files left by crashes and (in a shared cache) wrong
modes. It takes no lock: runs may go on meanwhile.

The exit status adds 1 for corrupt or dangling objects, orphaned temp files and
wrong modes, 2 for entries the signing policy refuses (require_signed,
trusted_keys), and
4 for I/O errors. --repair moves what is broken to quarantine/ (so the next run
rebuilds it), removes orphaned temp files and fixes the modes of your files.
--subset 1/10 reads a tenth of the blobs (run 1/10 … 10/10 to cover them all).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			g.allowDamagedFormat = true // verify reports it, --repair mends it
			c, err := g.looseCache()
			if err != nil {
				return err
			}
			opts := upkeep.VerifyOptions{Repair: repair}
			if c.Remote() != nil {
				opts.Refetch = c.FetchBlob
			}
			if subset != "" {
				if _, err := fmt.Sscanf(subset, "%d/%d", &opts.Subset.N, &opts.Subset.M); err != nil || opts.Subset.N < 1 || opts.Subset.N > opts.Subset.M {
					return usageError{fmt.Errorf("--subset %q: want N/M with 1 ≤ N ≤ M, like 1/10", subset)}
				}
			}
			rep, err := upkeep.Verify(c.Dir, opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			} else {
				for _, p := range rep.Problems {
					line := fmt.Sprintf("%s %s %s: %s (%s)", p.Class, p.Kind, shortID(p.ID), p.Cause, p.Path)
					if p.Repair != "" {
						line += ": " + p.Repair
					}
					fmt.Fprintln(out, line)
				}
				for _, sc := range rep.Signers {
					trust := ""
					if !sc.Trusted {
						trust = " (not a trusted key)"
					}
					fmt.Fprintf(out, "signed by %s%s: %s\n", sc.Signer, trust, progress.Plural(sc.Entries, "entry"))
				}
				mbps := 0.0
				if s := rep.Elapsed.Seconds(); s > 0 {
					mbps = float64(rep.ReadBytes) / 1e6 / s
				}
				fmt.Fprintf(out, "verified %s (%d read) and %s, %s in %s (%.0f MB/s): %s\n",
					progress.Plural(rep.Blobs, "blob"), rep.BlobsRead, progress.Plural(rep.Entries, "entry"), fsx.FormatBytes(rep.Bytes),
					rep.Elapsed.Round(time.Millisecond), mbps, verdict(rep))
			}
			if code := rep.ExitCode(); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "quarantine what is broken, remove orphaned temp files, fix modes")
	cmd.Flags().StringVar(&subset, "subset", "", "read only blob `N/M` of every M")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func newCacheKeygenCommand() *cobra.Command {
	var out, comment string
	cmd := &cobra.Command{
		Use:   "keygen [--out PREFIX] [--comment TEXT]",
		Short: "Write a new Ed25519 key pair for signing the cache entries you write",
		Long: `keygen writes a signing key (PREFIX, mode 0600) and its public key
(PREFIX.pub). Point CAIRN_SIGNING_KEY at the first: every entry this cairn then
writes carries your signature. Commit the second where readers list it, in
cache { trusted_keys = [...] } or CAIRN_TRUSTED_KEYS: they then use only the
entries a listed key signed. It never overwrites a file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				dir, err := os.UserConfigDir()
				if err != nil {
					return usageError{fmt.Errorf("no configuration directory to keep the key in (%w): give --out PREFIX", err)}
				}
				dir = filepath.Join(dir, "cairn")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return err
				}
				out = filepath.Join(dir, "signing-key")
			}
			if !cmd.Flags().Changed("comment") {
				comment = defaultKeyComment()
			}
			k, err := sigkey.GenerateKey(comment)
			if err != nil {
				return usageError{fmt.Errorf("--comment: %w", err)}
			}
			priv, pub, err := sigkey.WriteKeyPair(out, k)
			if err != nil {
				return usageError{err}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "signing key: %s (keep it to yourself; export CAIRN_SIGNING_KEY=%s)\n", priv, priv)
			fmt.Fprintf(w, "public key:  %s (readers list it in cache { trusted_keys } or CAIRN_TRUSTED_KEYS)\n", pub)
			fmt.Fprintf(w, "fingerprint: %s\n", k.Public().Fingerprint())
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the key to `PREFIX` and PREFIX.pub (default: cairn/signing-key in your configuration directory)")
	cmd.Flags().StringVar(&comment, "comment", "", "name the key by `TEXT` in cairn cache verify and cairn why (default: user@host)")
	return cmd
}

// defaultKeyComment is user@host, as far as they are known.
func defaultKeyComment() string {
	who := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	host, _ := os.Hostname()
	return strings.Trim(who+"@"+host, "@")
}

func verdict(rep *upkeep.VerifyReport) string {
	open, fixed := 0, 0
	for _, p := range rep.Problems {
		if p.Repair != "" {
			fixed++
		} else {
			open++
		}
	}
	switch {
	case open == 0 && fixed == 0:
		return "no problems"
	case open == 0:
		return fmt.Sprintf("%s repaired", progress.Plural(fixed, "problem"))
	case fixed > 0:
		return fmt.Sprintf("%s repaired, %d left", progress.Plural(fixed, "problem"), open)
	}
	return fmt.Sprintf("%s; cairn cache verify --repair quarantines what is broken and fixes modes", progress.Plural(open, "problem"))
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func newCacheGCCommand(g *globals) *cobra.Command {
	var maxSize, maxAge string
	var dry, asJSON, onRemote bool
	cmd := &cobra.Command{
		Use:   "gc [--max-size SIZE] [--max-age AGE] [--dry-run] [--remote]",
		Short: "Evict least recently used entries until the cache fits",
		Long: `Remove entries not used for longer than --max-age (like 30d or 12h), then the
least recently used ones until the cache holds at most --max-size bytes (like
50G or 500M), then the blobs no entry references any more, old temp files and old
usage records. Entries a run in progress has used are never removed, nor blobs
younger than an hour (a run may be about to reference them). --dry-run lists what
would go.

--remote evicts from the s3:// remote cache instead: the entries not used for
--max-age (at least 2d; a remote hit records its use at most once a day), the
blobs only they referenced, and multipart uploads left unfinished as long.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if onRemote {
				if maxSize != "" || maxAge == "" {
					return usageError{fmt.Errorf("gc --remote takes --max-age AGE (like 30d), not --max-size")}
				}
				d, err := parseAge(maxAge)
				if err != nil {
					return usageError{fmt.Errorf("--max-age: %w", err)}
				}
				return remoteGC(cmd, g, d, dry, asJSON)
			}
			if maxSize == "" && maxAge == "" {
				return usageError{fmt.Errorf("say how much to keep: --max-size SIZE (like 50G) and/or --max-age AGE (like 30d)")}
			}
			opts := upkeep.GCOptions{DryRun: dry}
			if maxSize != "" {
				n, err := parseSize(maxSize)
				if err != nil {
					return usageError{fmt.Errorf("--max-size: %w", err)}
				}
				opts.MaxSize = max(n, 1) // 0 means no limit to GC; --max-size 0 means empty it
			}
			if maxAge != "" {
				d, err := parseAge(maxAge)
				if err != nil {
					return usageError{fmt.Errorf("--max-age: %w", err)}
				}
				opts.MaxAge = d
			}
			c, err := g.looseCache()
			if err != nil {
				return err
			}
			rep, gcErr := upkeep.GC(c.Dir, opts)
			if rep == nil {
				return gcErr
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
				return gcErr
			}
			if dry {
				for _, it := range rep.Removed {
					fmt.Fprintf(out, "would remove %s %s (%s, %s, last used %s)\n", it.Kind, shortID(it.ID), fsx.FormatBytes(it.Size), it.Reason, it.LastUse.Local().Format("2006-01-02 15:04"))
				}
			}
			verb := "removed"
			if dry {
				verb = "would remove"
			}
			fmt.Fprintf(out, "gc %s %s and %s (%s), %d temp files; %s → %s; kept %s (%d in use by running runs)\n",
				verb, progress.Plural(rep.EntriesRemoved, "entry"), progress.Plural(rep.BlobsRemoved, "blob"), fsx.FormatBytes(rep.BytesRemoved), rep.TempRemoved,
				fsx.FormatBytes(rep.BytesBefore), fsx.FormatBytes(rep.BytesAfter), progress.Plural(rep.EntriesKept, "entry"), rep.Protected)
			for _, w := range rep.Warnings {
				g.warn("gc: " + w)
			}
			return gcErr
		},
	}
	cmd.Flags().StringVar(&maxSize, "max-size", "", "keep at most `SIZE` bytes (K, M, G, T suffixes; powers of 1024)")
	cmd.Flags().StringVar(&maxAge, "max-age", "", "evict entries unused for longer than `AGE` (s, m, h, d, w)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "list what would be removed, remove nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&onRemote, "remote", false, "evict from the s3:// remote cache, not the local one")
	return cmd
}

// parseSize reads 123, 50G, 1.5T, 500MiB, 10kB (binary multiples).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B"), "I")
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size: write a number with an optional K, M, G or T, like 50G", s)
	}
	return int64(f * mult), nil
}

// parseAge reads Go durations plus d (days) and w (weeks): 30d, 12h, 1w2d.
func parseAge(s string) (time.Duration, error) {
	var total time.Duration
	rest := strings.TrimSpace(s)
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		j := i
		for j < len(rest) && (rest[j] < '0' || rest[j] > '9') && rest[j] != '.' {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("%q is not an age: write it like 30d, 12h or 1w", s)
		}
		var u time.Duration
		switch unit {
		case "w":
			u = 7 * 24 * time.Hour
		case "d":
			u = 24 * time.Hour
		case "h":
			u = time.Hour
		case "m":
			u = time.Minute
		case "s":
			u = time.Second
		default:
			return 0, fmt.Errorf("%q is not an age: unit %q; use s, m, h, d or w", s, unit)
		}
		total += time.Duration(f * float64(u))
	}
	if total <= 0 {
		return 0, fmt.Errorf("%q is not an age: write it like 30d, 12h or 1w", s)
	}
	return total, nil
}
