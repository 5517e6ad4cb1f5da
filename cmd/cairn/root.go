package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cache/sigkey"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/spec"
	specmemo "github.com/cairn-run/cairn/spec/memo"
	"github.com/cairn-run/cairn/workspace"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitStopped = 130
)

// globals are the flags every command shares.
type globals struct {
	File     string
	CacheDir string
	Vars     []string
	VarFiles []string

	RemoteCache    string
	RemoteReadOnly bool
	RemoteInsecure bool

	stderr io.Writer

	// remoteStop ends every remote cache transfer at once: any signal
	// cancels it, whatever else the signal does.
	remoteStop       context.Context
	cancelRemoteStop context.CancelFunc

	// stopCh is closed by the first SIGINT/SIGTERM/SIGHUP when a command asked
	// for a graceful stop (run, resume); otherwise the first signal
	// cancels the context at once.
	stopCh         chan struct{}
	gracefulWanted atomic.Bool
	// killCh is closed by the signal after the one that cancelled the
	// context: running phases get SIGKILL without waiting out their
	// grace period.
	killCh chan struct{}
	// watchesCtx is set by commands that end on a cancelled context
	// (run, resume, memo, logs); any other command is read-only or
	// crash-safe by construction and exits at the first signal.
	watchesCtx atomic.Bool
	// starting is set by run and resume while they read the spec and open
	// the cache, before they watch for signals themselves (graceful): a
	// signal then ends cairn at once, saying that nothing ran.
	starting atomic.Bool

	warnMu sync.Mutex

	// early holds the workspace's memories, read while the command line
	// is set up (see earlyMemories); nil if no guess was made.
	early *earlyRead

	// makesState is set by commands that make the workspace's state
	// directory anyway (run, resume, plan): loading the spec in a fresh
	// workspace then makes it too, so that the spec's memo is written by
	// the first run, not the second.
	makesState bool

	// planVars, when cairn run applies a saved plan, are the values of its
	// variables, given to the spec as CAIRN_VAR_NAME would be (so -var and
	// -var-file, which may give the sensitive ones, rank above them).
	planVars map[string]string

	// allowDamagedFormat opens a cache whose format marker is damaged
	// (cairn cache verify, which reports and can mend it).
	allowDamagedFormat bool

	// caches are the caches the command opened, closed when it ends
	// (closing a cache ends its pack of entries: cache.Dir.Close).
	cachesMu sync.Mutex
	caches   []*cache.Dir
}

// closeCaches closes every cache the command opened.
func (g *globals) closeCaches() {
	g.cachesMu.Lock()
	defer g.cachesMu.Unlock()
	for _, c := range g.caches {
		c.Close()
	}
	g.caches = nil
}

// graceful asks that the first interrupt only close the returned channel
// (a graceful stop) and the second cancel the command's context.
func (g *globals) graceful() <-chan struct{} {
	g.gracefulWanted.Store(true)
	g.watchesCtx.Store(true)
	return g.stopCh
}

// watchContext says the command ends by itself once its context is
// cancelled, so a signal should cancel it rather than exit at once.
func (g *globals) watchContext(ctx context.Context) context.Context {
	g.watchesCtx.Store(true)
	return ctx
}

func (g *globals) AddFlags(f *pflag.FlagSet) {
	f.StringVarP(&g.File, "file", "f", spec.DefaultFile, "read the experiment from `FILE`")
	f.StringVar(&g.CacheDir, "cache-dir", "", "use the cache in `DIR` (default $CAIRN_CACHE_DIR, cache.dir, or ~/.cache/cairn)")
	f.StringVar(&g.RemoteCache, "remote-cache", "", "use the remote cache at `URL` behind the local cache (http(s):// Bazel HTTP cache, or s3://bucket/prefix) (default $CAIRN_REMOTE_CACHE, cache.remote; \"off\" disables)")
	f.BoolVar(&g.RemoteReadOnly, "remote-read-only", false, "read from the remote cache but never upload to it (also CAIRN_REMOTE_READ_ONLY=1)")
	f.BoolVar(&g.RemoteInsecure, "remote-insecure", false, "allow sending remote-cache credentials over plain http to a host that is not this machine")
	f.StringArrayVar(&g.Vars, "var", nil, "set a variable: `NAME=VALUE` (repeatable; wins over -var-file and CAIRN_VAR_NAME)")
	f.StringArrayVar(&g.VarFiles, "var-file", nil, "read variables from `FILE` (HCL: name = value; repeatable, a later file wins)")
}

// Main runs the cairn command line and returns the process exit code.
func Main() int {
	tuneGC()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &globals{stderr: os.Stderr, stopCh: make(chan struct{}), killCh: make(chan struct{})}
	g.early = earlyMemories(os.Args[1:])
	g.remoteStop, g.cancelRemoteStop = context.WithCancel(context.Background())
	defer g.cancelRemoteStop()
	// Signals are set up on another core while the command tree is
	// built (it starts the runtime's signal thread, which a no-op run
	// would otherwise wait for), and are in place before the command runs.
	sigs := make(chan os.Signal, 4)
	defer signal.Stop(sigs)
	sigReady := make(chan struct{})
	go func() {
		// SIGHUP (a closed terminal or ssh session) is a first Ctrl-C too:
		// by default it would end cairn at once, its phases with it and
		// their background processes left running.
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		close(sigReady)
		n := 0
		cancelled, killed := false, false
		for range sigs {
			n++
			g.cancelRemoteStop()
			if n == 1 && g.gracefulWanted.Load() {
				close(g.stopCh)
				continue
			}
			if !g.watchesCtx.Load() {
				// plan, validate, graph, cache verify..., and a run
				// still reading its spec: nothing to clean up, and they
				// do not watch the context.
				msg := "cairn: interrupted"
				if g.starting.Load() {
					msg = "cairn: interrupted before the run started: nothing ran and no run record was written"
				}
				fmt.Fprintln(os.Stderr, msg)
				os.Exit(exitStopped)
			}
			if cancelled {
				// Phases had SIGTERM; this one does not wait out their
				// grace period. Later ones change nothing.
				if !killed {
					killed = true
					close(g.killCh)
				}
				continue
			}
			cancelled = true
			cancel()
		}
	}()
	root := newRootCommand(g)
	root.SetArgs(terraformStyleFlags(os.Args[1:]))
	<-sigReady
	stopProfiles := startProfiles()
	err := root.ExecuteContext(ctx)
	g.closeCaches()
	stopProfiles()
	if err == nil {
		return exitOK
	}
	return report(g, err)
}

// newRootCommand builds the command tree.
func newRootCommand(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Run experiments and pipelines declared in HCL, cached by content",
		Long:          "cairn runs the phases of an experiment.hcl, caches every phase's outputs by content,\nand so makes every rerun incremental and every interruption resumable.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nRun '%s --help' for usage", err, c.CommandPath())}
	})
	g.AddFlags(root.PersistentFlags())
	runCmd, planCmd, logsCmd := newRunCommand(g), newPlanCommand(g), newLogsCommand(g)
	for _, c := range []*cobra.Command{runCmd, planCmd} {
		addPhaseCompletion(g, c, "force", "from", "until", "only")
	}
	addPhaseCompletion(g, logsCmd)
	root.AddCommand(
		runCmd,
		planCmd,
		newWhyCommand(g),
		newVerifyCommand(g),
		newGraphCommand(g),
		newValidateCommand(g),
		newResumeCommand(g),
		newStopCommand(g),
		newStatusCommand(g),
		newRunsCommand(g),
		newShowCommand(g),
		newMetricsCommand(g),
		newCompareCommand(g),
		newReportCommand(g),
		logsCmd,
		newFmtCommand(g),
		newInitCommand(g),
		newCheckoutCommand(g),
		newMemoCommand(g),
		newMemoServeCommand(g),
		newCacheCommand(g),
		newVersionCommand(),
	)
	return root
}

// usageError marks errors that are the caller's mistake (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// diagError carries spec diagnostics to Main for rendering.
type diagError struct {
	diags hcl.Diagnostics
	files map[string]*hcl.File
}

func (e *diagError) Error() string { return e.diags.Error() }

// exitError ends the process with a code after its message (if any) was
// printed.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// report prints err once and maps it to an exit code.
func report(g *globals, err error) int {
	var de *diagError
	var ee *exitError
	var ue usageError
	var unknown *spec.UnknownPhaseError
	var missing *engine.MissingInputError
	var unsat *engine.UnsatisfiedError
	switch {
	case errors.As(err, &de):
		writeDiagnostics(g.stderr, de.diags, de.files)
		return exitUsage
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(g.stderr, "cairn: "+ee.msg)
		}
		return ee.code
	case errors.As(err, &ue), errors.As(err, &unknown), errors.As(err, &missing), errors.As(err, &unsat):
		fmt.Fprintln(g.stderr, "cairn: "+err.Error())
		return exitUsage
	case isCobraUsage(err):
		fmt.Fprintln(g.stderr, "cairn: "+err.Error())
		return exitUsage
	default:
		fmt.Fprintln(g.stderr, "cairn: "+err.Error())
		return exitFailed
	}
}

func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "accepts ") || strings.HasPrefix(s, "requires ")
}

// writeDiagnostics renders diagnostics with source snippets, in colour on
// a terminal unless NO_COLOR is set.
func writeDiagnostics(w io.Writer, diags hcl.Diagnostics, files map[string]*hcl.File) {
	color := false
	if f, ok := w.(*os.File); ok && os.Getenv("NO_COLOR") == "" {
		color = isatty.IsTerminal(f.Fd())
	}
	sorted := append(hcl.Diagnostics(nil), diags...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i].Subject, sorted[j].Subject
		if a == nil || b == nil {
			return a == nil && b != nil
		}
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
	(&diagWriter{w: w, files: files, color: color}).write(sorted)
}

// loadSpec reads the spec named by -f with the -var values.
func (g *globals) loadSpec() (*spec.Spec, error) {
	opts, err := g.specOptions()
	if err != nil {
		return nil, err
	}
	if e := g.early; e != nil && e.spec != nil && g.File == spec.DefaultFile && g.planVars == nil && len(opts.Vars) == 0 && len(opts.VarFiles) == 0 {
		s := <-e.spec
		e.spec = nil // taken: a second load reads the files
		if s != nil {
			return s, nil // read ahead from its memo, as below
		}
	}
	// The parser (and the syntax trees it holds) is dropped once the spec
	// is loaded: only a failed load needs its files, for the message. The
	// memo is written only where the state directory already exists.
	parser := spec.NewParser()
	var initDir func() error
	if g.makesState {
		ws := &workspace.Workspace{Root: filepath.Dir(g.File)}
		initDir = ws.Init
	}
	s, diags, _ := specmemo.LoadFile(parser, g.File, opts, specMemoPath(g.File), initDir)
	if diags.HasErrors() {
		return nil, &diagError{diags: diags, files: parser.Files()}
	}
	if len(diags) > 0 {
		writeDiagnostics(g.stderr, diags, parser.Files())
	}
	return s, nil
}

// specOptions returns the options the spec is evaluated with: the
// environment, -var-file and -var.
func (g *globals) specOptions() (spec.Options, error) {
	opts := spec.Options{LookupEnv: os.LookupEnv, VarFiles: g.VarFiles}
	if pv := g.planVars; pv != nil {
		opts.LookupEnv = func(name string) (string, bool) {
			if v, ok := pv[strings.TrimPrefix(name, "CAIRN_VAR_")]; ok && strings.HasPrefix(name, "CAIRN_VAR_") {
				return v, true
			}
			return os.LookupEnv(name)
		}
	}
	for _, kv := range g.Vars {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return spec.Options{}, usageError{fmt.Errorf("-var %q: want NAME=VALUE", kv)}
		}
		opts.Vars = append(opts.Vars, spec.VarValue{Name: name, Value: value})
	}
	return opts, nil
}

// cacheDir picks the cache directory: --cache-dir, CAIRN_CACHE_DIR,
// cache.dir in the spec, else the user cache directory.
func (g *globals) cacheDir(s *spec.Spec) (string, error) {
	switch {
	case g.CacheDir != "":
		return filepath.Abs(g.CacheDir)
	case os.Getenv("CAIRN_CACHE_DIR") != "":
		return filepath.Abs(os.Getenv("CAIRN_CACHE_DIR"))
	case s != nil && s.Experiment.CacheDir != "":
		return s.Experiment.CacheDir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set --cache-dir or CAIRN_CACHE_DIR (%w)", err)
	}
	return filepath.Join(base, "cairn"), nil
}

// openEngine loads the spec and opens its cache.
func (g *globals) openEngine(rep engine.Reporter) (*spec.Spec, *engine.Engine, error) {
	// The workspace's memories do not depend on the spec: read them while
	// the spec is read (engine.New reads them itself if the guess of the
	// workspace directory was wrong).
	memories := make(chan *engine.Memories, 1)
	if dir, err := filepath.Abs(filepath.Dir(g.File)); err != nil {
		memories <- nil
	} else if g.early != nil && g.early.mem != nil && g.early.dir == dir {
		memories = g.early.mem
		g.early.mem = nil // taken: a second engine reads the files
	} else {
		go func() { memories <- engine.LoadMemories(dir) }()
	}
	_ = failpoint.Hit("spec.read")
	s, err := g.loadSpec()
	if err != nil {
		return nil, nil, err
	}
	dir, err := g.cacheDir(s)
	if err != nil {
		return nil, nil, err
	}
	c, err := g.openCache(dir, s)
	if err != nil {
		return nil, nil, err
	}
	lx, xs, err := g.executors()
	if err != nil {
		return nil, nil, err
	}
	return s, engine.New(s, c, engine.Config{Reporter: rep, Executor: lx, Executors: xs, Memories: <-memories}), nil
}

// earlyRead is the workspace's memories read ahead, from dir, and its
// spec, from its memo, when the command line sets no variables.
type earlyRead struct {
	dir  string
	mem  chan *engine.Memories
	spec chan *spec.Spec // nil: not read ahead; a nil *Spec: no good memo
}

// earlyMemories starts reading the memories of the workspace in the
// current directory, for the commands that read them (run, plan), when
// the command line names no other spec file: a no-op run of 100 phases
// waited for them half a millisecond. A wrong guess costs a read of the
// files of a directory cairn then does not use. Without -var and
// -var-file, the spec is read from its memo too (loadSpec takes it), so
// that neither waits for the command line to be set up.
func earlyMemories(args []string) *earlyRead {
	if len(args) == 0 || args[0] != "run" && args[0] != "plan" {
		return nil
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-f") || strings.HasPrefix(a, "--file") {
			return nil // another spec file, perhaps elsewhere
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return nil
	}
	e := &earlyRead{dir: dir, mem: make(chan *engine.Memories, 1)}
	// The goroutines send on the channels they were given: the fields
	// are cleared once taken (a send on a cleared field would block).
	mem := e.mem
	go func() { mem <- engine.LoadMemories(dir) }()
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-var") || strings.HasPrefix(a, "--var") }) {
		sp := make(chan *spec.Spec, 1)
		e.spec = sp
		go func() {
			file := spec.DefaultFile
			sp <- specmemo.Load(file, spec.Options{LookupEnv: os.LookupEnv}, specMemoPath(file))
		}()
	}
	return e
}

// specMemoPath is where the memo of the spec file lives: the workspace's
// state directory, beside the spec.
func specMemoPath(file string) string {
	return specmemo.Path(filepath.Join(filepath.Dir(file), workspace.StateDirName), file)
}

// openCache opens the cache in dir with the sharing, remote and signing
// settings of the spec (nil when there is none), the flags and the
// environment.
func (g *globals) openCache(dir string, s *spec.Spec) (*remote.Tiered, error) {
	var exp spec.Experiment
	if s != nil {
		exp = s.Experiment
	}
	o := cache.Options{
		Shared:        exp.CacheShared,
		RequireSigned: exp.CacheRequireSigned || envTrue("CAIRN_CACHE_REQUIRE_SIGNED"),
		Warn:          g.warn,
	}
	if k := os.Getenv("CAIRN_CACHE_SIGNING_KEY"); k != "" {
		o.SigningKey = []byte(k)
	}
	if err := writerKeys(&o, exp.CacheTrustedKeys); err != nil {
		return nil, usageError{err}
	}
	url := exp.CacheRemote
	if v := os.Getenv("CAIRN_REMOTE_CACHE"); v != "" {
		url = v
	}
	if g.RemoteCache != "" {
		url = g.RemoteCache
	}
	var backend remote.Backend
	readOnly := false
	if url != "" && url != "off" && url != "none" {
		readOnly = g.RemoteReadOnly || envTrue("CAIRN_REMOTE_READ_ONLY")
		r, err := openRemote(g.remoteContext(), url, readOnly, g.RemoteInsecure || envTrue("CAIRN_REMOTE_INSECURE"), g.warn)
		if err != nil {
			return nil, usageError{err}
		}
		backend = r
	}
	o.AllowDamagedFormat = g.allowDamagedFormat
	c, err := cache.OpenWith(dir, o)
	switch {
	case errors.Is(err, cache.ErrDamagedFormat):
		return nil, usageError{fmt.Errorf("open cache: %w\nIf %s is a cairn cache, run: cairn cache verify --repair (it rewrites the marker once every object verifies); else choose another cache directory (--cache-dir, CAIRN_CACHE_DIR)", err, dir)}
	case errors.Is(err, cache.ErrUnknownFormat):
		return nil, usageError{fmt.Errorf("open cache: %w\n%s was written by another version of cairn: use that version with it, or choose another cache directory (--cache-dir, CAIRN_CACHE_DIR)", err, dir)}
	case err != nil:
		return nil, fmt.Errorf("open cache: %w", err)
	}
	g.cachesMu.Lock()
	g.caches = append(g.caches, c)
	g.cachesMu.Unlock()
	return remote.NewTiered(c, backend, readOnly, g.warn), nil
}

// writerKeys loads into o this writer's signing key (CAIRN_SIGNING_KEY
// names its file) and the public keys of the trusted writers: the files
// CAIRN_TRUSTED_KEYS lists (separated as PATH is), else those of the
// spec's cache.trusted_keys. Errors name the file, never its content.
func writerKeys(o *cache.Options, specKeys []string) error {
	if p := os.Getenv("CAIRN_SIGNING_KEY"); p != "" {
		k, err := sigkey.LoadPrivateKey(p)
		if err != nil {
			return fmt.Errorf("CAIRN_SIGNING_KEY: %w", err)
		}
		o.WriterKey = k
	}
	paths, from := specKeys, "cache.trusted_keys"
	if v, ok := os.LookupEnv("CAIRN_TRUSTED_KEYS"); ok && v != "" {
		paths, from = filepath.SplitList(v), "CAIRN_TRUSTED_KEYS"
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		k, err := sigkey.LoadPublicKey(p)
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		o.TrustedKeys = append(o.TrustedKeys, k)
	}
	return nil
}

// remoteContext is the context remote transfers end with (none in tests
// that build globals by hand).
func (g *globals) remoteContext() context.Context {
	if g.remoteStop == nil {
		return context.Background()
	}
	return g.remoteStop
}

// warn prints a one-line warning on stderr; safe from many goroutines.
func (g *globals) warn(msg string) {
	g.warnMu.Lock()
	defer g.warnMu.Unlock()
	fmt.Fprintf(g.stderr, "cairn: %s\n", msg)
}

// envTrue reports whether the environment variable is set to a true value.
func envTrue(name string) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// terraformStyleFlags accepts Terraform's single-dash -var, -var-file
// and -out by rewriting them to the double-dash form the flag parser knows.
//
// It also lets "cairn logs PHASE -f" mean --follow, as in tail and
// docker logs, although -f elsewhere names the spec file.
func terraformStyleFlags(args []string) []string {
	out := make([]string, len(args))
	logs := false
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			logs = a == "logs"
			break
		}
	}
	for i, a := range args {
		if logs && a == "-f" {
			a = "--follow"
		}
		for _, name := range []string{"-var", "-var-file", "-out"} {
			if a == name || strings.HasPrefix(a, name+"=") {
				a = "-" + a
			}
		}
		if a == "--" {
			copy(out[i:], args[i:])
			return out
		}
		out[i] = a
	}
	return out
}
