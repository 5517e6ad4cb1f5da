// Command harness times cairn side by side with GNU make, ninja, go-task,
// Turborepo and Snakemake on the same generated workloads (see bench/gen)
// and prints tables of medians and ratios. Run it from the repository
// root: `make bench` (full) or `make bench QUICK=1`.
//
// For every size and scenario it first runs each tool once itself (the
// probe: it checks the tool succeeds, counts the outputs the tool wrote,
// records peak RSS, and caps the tool with a timeout), then times all the
// tools that passed in one hyperfine invocation. A tool whose probe took
// longer than -long is not run again: its probe is its one sample, marked
// "¹" in the tables. Nothing is ever estimated: a tool that fails or
// times out is shown as such.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	taskModule   = "github.com/go-task/task/v3/cmd/task@v3.54.0"
	turboVersion = "2.11.11"
)

var (
	quick     = flag.Bool("quick", false, "S size only, fewer runs, a small L, scale test of plan only")
	workDir   = flag.String("work", filepath.Join(os.TempDir(), "cairn-bench"), "where workspaces are generated (outside any git repository: turbo hashes through git)")
	outDir    = flag.String("results", "", "results directory (default bench/results/<timestamp>)")
	toolList  = flag.String("tools", "cairn,make,ninja,task,snakemake,turbo", "tools to measure")
	cairnBase = flag.String("cairn-base", "", "a cairn `binary` to measure beside the one built from the tree, as the tool cairn-base (add it to -tools): an older commit's build, for before-and-after ratios in one run")
	sizeList  = flag.String("sizes", "", "sizes to run, of S, M, L, Lo (L whose outputs are copies of its inputs), Lq and Lqo (L and Lo with 8 MiB inputs), Lox and Lqox (Lo and Lqo on a loop-mounted XFS with reflinks; root and mkfs.xfs only), XS (10 phases, a smoke test) and the data workloads, cairn alone: Fn (n input files, as F1m or F10k), On (n outputs, as O100k) and Gs (4 inputs of s bytes, as G4 or G64m); default "+defaultSizes+"; quick: "+quickSizes)
	timeout   = flag.Duration("timeout", 0, "cap on one run of a tool (default 300s; quick 90s)")
	long      = flag.Duration("long", 0, "a tool whose probe takes longer than this is not run again (default 60s; quick 5s)")
	install   = flag.Bool("install", true, "install missing tools (apt-get as root, go install, npm)")
	scale     = flag.Bool("scale", true, "run cairn's for_each scale test")
	smoke     = flag.Bool("smoke", false, "exit 1 when a cairn run failed, was not run, or wrote other outputs than the references (for CI; figures are not judged)")
	shapes    = flag.String("shapes", "cat,prog,script", "command shapes of the phases, each size run once per shape (not Lo, Lqo, Lox, Lqox: copies): cat (cat SRCS | sha256sum > OUT), prog (sha256sum SRCS > OUT), script (sh phase.sh SRCS OUT)")
)

var (
	root    string // repository root
	tools   string // bench/.tools
	results string
	cairn   string
	gnuTime string // /usr/bin/time, or "" when absent
)

// tool is one build tool under test.
type tool struct {
	name    string
	gen     string
	version string
	missing string             // why it cannot be measured, or ""
	cmd     func(*ws) string   // run in the workspace
	clean   func(*ws) []string // removed for a cold run
	cache   bool               // restores outputs from its cache
	ref     bool               // a reference copy (cp), only in restore of large outputs
	summary func(string) string
	// The data workloads (data.go) give a scenario's prepare and command
	// per tool; nil: prepare's and cmd's.
	prep func(w *ws, sc string) string
	scmd func(w *ws, sc string) string
	// noOut: a reference that writes no outputs (git status, find,
	// sha256sum), so its probe counts none.
	noOut bool
}

// ws is one tool's workspace at one size.
type ws struct {
	dir, cacheDir string
}

type size struct {
	name     string
	n, f     int
	s        int64
	width    int
	scens    []string
	fastRuns int
	slowRuns int
	// copy: every phase writes a copy of its input (gen -copy), so the
	// outputs are as large as the inputs; only the tools with a cache
	// run, and restore is timed beside cp -r and cp -al of the same
	// files.
	copy bool
	// xfs: the size's workspaces and caches live on an XFS filesystem
	// with reflinks, in a file loop-mounted for the run (root only), so
	// restore by reflink is measured beside cp -al on this machine even
	// when its own disk (ext4 here) has no reflinks.
	xfs bool
	// shape: the form of every phase's command (gen -shape); "" for the
	// copy sizes, whose phases are cp or cat.
	shape string
	// data: a data workload (data.go): every scenario is timed in rounds
	// of one run a tool, with peak RSS from every run.
	data bool
}

// label names the size and shape in file names: S-prog, Lo.
func (sz size) label() string {
	if sz.shape == "" {
		return sz.name
	}
	return sz.name + "-" + sz.shape
}

// result is one cell of a table.
type result struct {
	Size, Shape, Scenario, Tool string
	Samples                     []float64 // seconds
	Median                      float64
	Single                      bool   // one sample only (the probe)
	Failed                      string // "", or why
	Wrote, Total                int    // outputs written by the probe, outputs present after it
	Self                        string // what the tool says it did
	RSS                         []int  // KiB
}

var (
	all      []*result
	versions = map[string]string{}
)

func main() {
	flag.Parse()
	if *timeout == 0 {
		*timeout = map[bool]time.Duration{false: 300 * time.Second, true: 90 * time.Second}[*quick]
	}
	if *long == 0 {
		*long = map[bool]time.Duration{false: 60 * time.Second, true: 5 * time.Second}[*quick]
	}
	var err error
	root, err = os.Getwd()
	check(err)
	if _, err := os.Stat(filepath.Join(root, "bench", "gen", "main.go")); err != nil {
		fatal("run the harness from the repository root (make bench)")
	}
	tools = filepath.Join(root, "bench", ".tools")
	results = *outDir
	if results == "" {
		results = filepath.Join(root, "bench", "results", time.Now().Format("20060102-150405"))
	}
	check(os.MkdirAll(filepath.Join(results, "logs"), 0o755))
	check(os.MkdirAll(*workDir, 0o755))
	start := time.Now()

	if *install {
		installTools()
	}
	if _, err := exec.LookPath("hyperfine"); err != nil {
		fatal("hyperfine is required (apt-get install hyperfine)")
	}
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		gnuTime = "/usr/bin/time"
	} else {
		fmt.Println("note: /usr/bin/time (GNU time) is missing: no peak RSS figures")
	}
	gen := filepath.Join(tools, "bin", "bench-gen")
	mustRun("go", "build", "-o", gen, "./bench/gen")
	ts := setupTools()
	printVersions(ts)

	sizes := []size{
		{name: "S", n: 100, f: 1000, s: 4096, scens: []string{"cold", "noop", "touch", "change1", "restore"}, fastRuns: 15, slowRuns: 5},
		{name: "M", n: 1000, f: 10000, s: 4096, scens: []string{"cold", "noop", "touch", "change1", "restore"}, fastRuns: 15, slowRuns: 5},
		{name: "L", n: 10, f: 10, s: 200 << 20, width: 10, scens: []string{"cold", "noop", "touch", "restore"}, fastRuns: 10, slowRuns: 3},
		{name: "XS", n: 10, f: 100, s: 4096, scens: []string{"cold", "noop", "touch", "change1", "restore"}, fastRuns: 3, slowRuns: 2},
		{name: "Lq", n: 10, f: 10, s: 8 << 20, width: 10, scens: []string{"cold", "noop", "touch", "restore"}, fastRuns: 5, slowRuns: 3},
		{name: "Lo", n: 10, f: 10, s: 200 << 20, width: 10, copy: true, scens: []string{"cold", "restore"}, fastRuns: 10, slowRuns: 3},
		{name: "Lqo", n: 10, f: 10, s: 8 << 20, width: 10, copy: true, scens: []string{"cold", "restore"}, fastRuns: 5, slowRuns: 3},
		{name: "Lox", n: 10, f: 10, s: 200 << 20, width: 10, copy: true, xfs: true, scens: []string{"cold", "restore"}, fastRuns: 10, slowRuns: 3},
		{name: "Lqox", n: 10, f: 10, s: 8 << 20, width: 10, copy: true, xfs: true, scens: []string{"cold", "restore"}, fastRuns: 5, slowRuns: 3},
	}
	want := defaultSizes
	if *quick {
		want = quickSizes
		for i := range sizes {
			sizes[i].fastRuns, sizes[i].slowRuns = 5, 2
		}
	}
	if *sizeList != "" {
		want = *sizeList
	}
	shapeList := strings.Split(*shapes, ",")
	for _, sh := range shapeList {
		if sh != "cat" && sh != "prog" && sh != "script" {
			fatal("unknown shape " + sh + " in -shapes (cat, prog, script)")
		}
	}
	var datas []size
	for _, name := range strings.Split(want, ",") {
		if slices.ContainsFunc(sizes, func(sz size) bool { return sz.name == name }) {
			continue
		}
		ds, err := parseDataSize(name)
		if err != nil {
			fatal(err.Error())
		}
		datas = append(datas, ds)
	}
	for _, sz := range sizes {
		if !slices.Contains(strings.Split(want, ","), sz.name) {
			continue
		}
		if sz.copy {
			runSize(sz, gen, ts)
			continue
		}
		for _, sh := range shapeList {
			sz.shape = sh
			runSize(sz, gen, ts)
		}
	}
	for _, ds := range datas {
		runData(ds, gen)
	}
	if *scale && cairn != "" {
		runScale(gen)
	}
	report(time.Since(start))
	smokeVerdict()
}

// smokeVerdict ends the harness with exit 1 when any cairn result
// failed: the smoke test checks that every workload runs and writes the
// right outputs, not how fast.
func smokeVerdict() {
	if !*smoke {
		return
	}
	var bad []string
	for _, r := range all {
		if strings.HasPrefix(r.Tool, "cairn") && r.Failed != "" {
			bad = append(bad, fmt.Sprintf("%s %s %s: %s", r.Size, r.Scenario, r.Tool, r.Failed))
		}
	}
	if len(bad) > 0 {
		fatal("smoke: " + strings.Join(bad, "\n  "))
	}
	fmt.Println("smoke: every cairn run succeeded")
}

// installTools installs what the harness and the tools of -tools need.
func installTools() {
	measured := strings.Split(*toolList, ",")
	var aptPkgs []string
	for bin, pkg := range map[string]string{"hyperfine": "hyperfine", "ninja": "ninja-build", "snakemake": "snakemake", "make": "make", "/usr/bin/time": "time"} {
		if bin != "hyperfine" && bin != "/usr/bin/time" && !slices.Contains(measured, bin) {
			continue
		}
		if _, err := exec.LookPath(bin); err != nil {
			aptPkgs = append(aptPkgs, pkg)
		}
	}
	sort.Strings(aptPkgs)
	if len(aptPkgs) > 0 {
		if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
			fmt.Printf("missing %s: install them as root with apt-get install -y %s\n", strings.Join(aptPkgs, ", "), strings.Join(aptPkgs, " "))
		} else {
			fmt.Println("installing", strings.Join(aptPkgs, " "), "with apt-get")
			if err := runVerbose(nil, "apt-get", "update", "-q"); err != nil {
				fmt.Println("apt-get update failed:", err)
			}
			if err := runVerbose([]string{"DEBIAN_FRONTEND=noninteractive"}, "apt-get", append([]string{"install", "-y", "-q"}, aptPkgs...)...); err != nil {
				fmt.Println("apt-get install failed:", err, "(continuing with what is there)")
			}
		}
	}
	if _, err := os.Stat(filepath.Join(tools, "bin", "task")); err != nil && slices.Contains(measured, "task") {
		fmt.Println("installing go-task:", taskModule)
		if err := runVerbose([]string{"GOBIN=" + filepath.Join(tools, "bin")}, "go", "install", taskModule); err != nil {
			fmt.Println("go-task install failed:", err)
		}
	}
	if _, err := os.Stat(turboBin()); err != nil && slices.Contains(measured, "turbo") {
		if _, err := exec.LookPath("npm"); err != nil {
			fmt.Println("npm is missing: Turborepo cannot be installed")
		} else {
			fmt.Println("installing turbo", turboVersion, "with npm into", tools)
			if err := runVerbose(nil, "npm", "install", "--prefix", tools, "--no-audit", "--no-fund", "turbo@"+turboVersion); err != nil {
				fmt.Println("turbo install failed:", err)
			}
		}
	}
}

// turboBin is the native turbo binary (not the node shim, so that its RSS
// and start-up are turbo's own).
func turboBin() string {
	return filepath.Join(tools, "node_modules", "@turbo", "linux-64", "bin", "turbo")
}

var (
	cairnSummary = regexp.MustCompile(`(\d+) phases: (\d+) ran, (\d+) cached, (\d+) restored`)
	turboSummary = regexp.MustCompile(`Cached:\s+(\d+) cached, (\d+) total`)
)

func setupTools() []*tool {
	var ts []*tool
	find := func(name, path string) (string, string) {
		if strings.Contains(path, "/") {
			if _, err := os.Stat(path); err != nil {
				return "", name + " is not installed (" + path + ")"
			}
			return path, ""
		}
		p, err := exec.LookPath(path)
		if err != nil {
			return "", name + " is not installed"
		}
		return p, ""
	}
	for _, name := range strings.Split(*toolList, ",") {
		t := &tool{name: name, gen: name}
		switch name {
		case "cairn":
			cairn = filepath.Join(tools, "bin", "cairn")
			build := exec.Command("go", "build", "-o", cairn, "./cmd/cairn")
			build.Env = append(os.Environ(), "CGO_ENABLED=0") // as `make build` builds it
			if out, err := build.CombinedOutput(); err != nil {
				t.missing = "go build ./cmd/cairn failed: " + strings.TrimSpace(string(out))
				cairn = ""
				break
			}
			desc, _ := exec.Command("git", "describe", "--always", "--dirty").Output()
			t.version = firstLine(output(cairn, "version")) + " @ " + strings.TrimSpace(string(desc))
			t.cmd = func(w *ws) string { return "CAIRN_CACHE_DIR=" + w.cacheDir + " exec " + cairn + " run" }
			t.clean = func(w *ws) []string { return []string{"out", ".cairn", w.cacheDir} }
			t.cache = true
			t.summary = cairnRunSummary
		case "cairn-base":
			baseTool(t)
		case "make":
			p, why := find(name, "make")
			t.missing = why
			t.version = firstLine(output(p, "--version"))
			t.cmd = func(*ws) string { return "exec " + p + " -j2" }
			t.clean = func(*ws) []string { return []string{"out"} }
		case "ninja":
			p, why := find(name, "ninja")
			t.missing = why
			t.version = "ninja " + firstLine(output(p, "--version"))
			t.cmd = func(*ws) string { return "exec " + p + " -j2" }
			t.clean = func(*ws) []string { return []string{"out", ".ninja_log", ".ninja_deps"} }
		case "task":
			p, why := find(name, filepath.Join(tools, "bin", "task"))
			t.missing = why
			t.version = "go-task " + firstLine(output(p, "--version"))
			t.cmd = func(*ws) string { return "exec " + p + " --silent" }
			t.clean = func(*ws) []string { return []string{"out", ".task"} }
		case "snakemake":
			p, why := find(name, "snakemake")
			t.missing = why
			t.version = "snakemake " + firstLine(output(p, "--version"))
			t.cmd = func(*ws) string { return "exec " + p + " --cores 2 --quiet" }
			t.clean = func(*ws) []string { return []string{"out", ".snakemake"} }
		case "turbo":
			p, why := find(name, turboBin())
			t.missing = why
			if why == "" {
				if _, err := exec.LookPath("npm"); err != nil {
					t.missing = "turbo runs package scripts with npm, which is missing"
				}
			}
			t.version = "turbo " + firstLine(output(p, "--version"))
			t.cmd = func(*ws) string {
				return "TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 NPM_CONFIG_UPDATE_NOTIFIER=false exec " + p +
					" run build --concurrency=2 --output-logs=none --ui=stream"
			}
			t.clean = func(*ws) []string { return []string{"out", ".turbo", "node_modules/.cache/turbo"} }
			t.cache = true
			t.summary = func(out string) string {
				if m := turboSummary.FindStringSubmatch(out); m != nil {
					return fmt.Sprintf("cache hits %s/%s", m[1], m[2])
				}
				return ""
			}
		default:
			fatal("unknown tool " + name)
		}
		if t.missing != "" {
			fmt.Println("SKIP", name+":", t.missing)
			t.version = "not measured: " + t.missing
		}
		ts = append(ts, t)
	}
	return ts
}

func printVersions(ts []*tool) {
	versions["go"] = firstLine(output("go", "version"))
	versions["hyperfine"] = firstLine(output("hyperfine", "--version"))
	versions["kernel"] = firstLine(output("uname", "-sr"))
	versions["cpus"] = strconv.Itoa(runtime.NumCPU())
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.*)`).FindSubmatch(b); m != nil {
			versions["cpu"] = string(m[1])
		}
	}
	for _, t := range ts {
		versions[t.name] = t.version
	}
	fmt.Println("\n== versions")
	for _, k := range sortedKeys(versions) {
		fmt.Printf("  %-10s %s\n", k, versions[k])
	}
}

// runSize generates the workspaces of one size and runs its scenarios.
func runSize(sz size, gen string, ts []*tool) {
	fmt.Printf("\n== size %s: %d phases, %d inputs of %s", sz.name, sz.n, sz.f, bytesStr(sz.s))
	if sz.shape != "" {
		fmt.Printf(", shape %s", sz.shape)
	}
	fmt.Println()
	base := filepath.Join(*workDir, sz.name)
	if sz.xfs {
		unmount, err := mountXFS(base, 4*int64(sz.f)*sz.s+(1<<30))
		if err != nil {
			fmt.Printf("  skipped: %v\n", err)
			all = append(all, &result{Size: sz.name, Shape: sz.shape, Scenario: "restore", Tool: "cairn", Failed: "not run: " + err.Error()})
			return
		}
		defer unmount()
	}
	master := filepath.Join(base, "master")
	genArgs := []string{"-n", strconv.Itoa(sz.n), "-f", strconv.Itoa(sz.f), "-s", strconv.FormatInt(sz.s, 10), "-width", strconv.Itoa(sz.width)}
	if sz.copy {
		genArgs = append(genArgs, "-copy")
	} else {
		genArgs = append(genArgs, "-shape", sz.shape)
	}
	// The master inputs are written once and never changed; every tool
	// gets its own copy (its own mtimes: touch and edits stay per tool).
	mustRun(gen, append([]string{"-tool", "make", "-o", master}, genArgs...)...)
	wss := map[string]*ws{}
	var live []*tool
	for _, t := range ts {
		if t.missing != "" || sz.copy && !t.cache {
			continue
		}
		w := &ws{dir: filepath.Join(base, sz.shape, t.name), cacheDir: filepath.Join(base, sz.shape, t.name+".cairn-cache")}
		check(os.RemoveAll(w.dir))
		check(os.RemoveAll(w.cacheDir))
		mustRun(gen, append([]string{"-tool", t.gen, "-o", w.dir, "-no-inputs"}, genArgs...)...)
		mustRun("cp", "-a", "--reflink=auto", filepath.Join(master, "in"), filepath.Join(w.dir, "in"))
		wss[t.name] = w
		live = append(live, t)
	}
	if sz.copy {
		for _, t := range refTools(master) {
			w := &ws{dir: filepath.Join(base, t.name)}
			check(os.RemoveAll(w.dir))
			check(os.MkdirAll(w.dir, 0o755))
			wss[t.name] = w
			live = append(live, t)
		}
	}
	for _, sc := range sz.scens {
		var group []*tool
		for _, t := range live {
			if sc == "restore" && !t.cache || sc != "restore" && t.ref {
				continue
			}
			group = append(group, t)
		}
		if len(group) == 0 {
			continue
		}
		fmt.Printf("\n-- %s %s\n", sz.label(), sc)
		runs := sz.fastRuns
		if sc == "cold" || sc == "change1" {
			runs = sz.slowRuns
		}
		var timed []*tool
		var rs []*result
		for _, t := range group {
			w := wss[t.name]
			r := &result{Size: sz.name, Shape: sz.shape, Scenario: sc, Tool: t.name}
			all = append(all, r)
			probe(t, w, sc, r, sz)
			if r.Failed != "" {
				if sc == "cold" {
					// Nothing to build on: drop the tool for this size.
					live = slices.DeleteFunc(live, func(x *tool) bool { return x == t })
				}
				continue
			}
			if r.Single {
				continue
			}
			timed = append(timed, t)
			rs = append(rs, r)
		}
		if sc == "cold" && !sz.copy {
			timed, rs = sameOutputs(timed, rs, wss, &live)
		}
		if len(timed) > 0 {
			hyperfine(sz, sc, runs, timed, wss, rs)
		}
		if sc == "noop" && gnuTime != "" {
			for _, t := range group {
				if slices.Contains(live, t) {
					noopRSS(sz, t, wss[t.name])
				}
			}
		}
	}
}

// sameOutputs checks that every tool's cold probe wrote the same bytes
// into out/ as the first tool's did: the workload is one pipeline, so a
// tool that differs ran other commands (or ran them wrongly) and its time
// would compare nothing. Such a tool is marked WRONG and dropped from the
// size; the tools that agree are returned.
func sameOutputs(ts []*tool, rs []*result, wss map[string]*ws, live *[]*tool) ([]*tool, []*result) {
	if len(ts) < 2 {
		return ts, rs
	}
	first, err := readOutputs(wss[ts[0].name].dir)
	check(err)
	keepT, keepR := ts[:1:1], rs[:1:1]
	for i := 1; i < len(ts); i++ {
		got, err := readOutputs(wss[ts[i].name].dir)
		check(err)
		if diff := outputsDiff(first, got); diff != "" {
			rs[i].Failed = "outputs differ from " + ts[0].name + "'s: " + diff
			fmt.Printf("  %-10s WRONG: %s\n", ts[i].name, rs[i].Failed)
			*live = slices.DeleteFunc(*live, func(x *tool) bool { return x == ts[i] })
			continue
		}
		keepT, keepR = append(keepT, ts[i]), append(keepR, rs[i])
	}
	return keepT, keepR
}

// readOutputs is the content of every file under dir/out, by path
// relative to it.
func readOutputs(dir string) (map[string]string, error) {
	m := map[string]string{}
	out := filepath.Join(dir, "out")
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(out, p)
		m[rel] = string(b)
		return err
	})
	return m, err
}

// outputsDiff says how got differs from want, or "".
func outputsDiff(want, got map[string]string) string {
	for _, p := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[p]
		switch {
		case !ok:
			return "out/" + p + " missing"
		case g != want[p]:
			return "out/" + p + " has other content"
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			return "out/" + p + " extra"
		}
	}
	return ""
}

// mountXFS makes base the mount point of a new XFS filesystem with
// reflinks, in a sparse image file of the given size beside it, and
// returns the function that unmounts it and removes the image. It needs
// root and mkfs.xfs (Debian: xfsprogs).
func mountXFS(base string, size int64) (func(), error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("a loop-mounted XFS needs root")
	}
	if _, err := exec.LookPath("mkfs.xfs"); err != nil {
		return nil, errors.New("mkfs.xfs is missing (apt-get install xfsprogs)")
	}
	img := base + ".xfs.img"
	exec.Command("umount", base).Run() // left mounted by an interrupted run
	os.Remove(img)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"truncate", "-s", strconv.FormatInt(size, 10), img},
		{"mkfs.xfs", "-q", "-m", "reflink=1", img},
		{"mount", "-o", "loop", img, base},
	}
	for _, st := range steps {
		if out, err := exec.Command(st[0], st[1:]...).CombinedOutput(); err != nil {
			os.Remove(img)
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(st, " "), err, strings.TrimSpace(string(out)))
		}
	}
	versions["xfs"] = firstLine(output("mkfs.xfs", "-V")) + " (loop-mounted file on " + fsType(filepath.Dir(base)) + ", for sizes Lox and Lqox)"
	return func() {
		if out, err := exec.Command("umount", base).CombinedOutput(); err != nil {
			fmt.Printf("note: umount %s: %v: %s\n", base, err, out)
			return
		}
		os.Remove(img)
	}, nil
}

// fsType names the filesystem dir is on, as df -T says it.
func fsType(dir string) string {
	out, err := exec.Command("df", "--output=fstype", dir).Output()
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(out))
	return f[len(f)-1]
}

// refTools are the reference rows of restoring large outputs: cp -r and cp
// -al of files of the same sizes (the workload's inputs, which its outputs
// copy) into out/. Their source is the master copy of the inputs, which
// nothing writes.
func refTools(master string) []*tool {
	src := filepath.Join(master, "in")
	versions["cp"] = firstLine(output("cp", "--version"))
	var ts []*tool
	for _, flags := range []string{"-r", "-al"} {
		ts = append(ts, &tool{
			name:  "cp" + flags,
			ref:   true,
			cache: true,
			cmd:   func(*ws) string { return "exec cp " + flags + " " + src + " out" },
			clean: func(*ws) []string { return []string{"out"} },
		})
	}
	return ts
}

// prepare is the shell command that sets up the state a scenario starts from.
func prepare(t *tool, w *ws, sc string) string {
	if t.prep != nil {
		return t.prep(w, sc)
	}
	cd := "cd " + w.dir + " && "
	switch sc {
	case "cold":
		return cd + "rm -rf " + strings.Join(t.clean(w), " ")
	case "touch":
		return cd + "find in -type f -exec touch {} +"
	case "change1":
		// A different 19 bytes (nanosecond clock) at the start of one
		// input, same size: its content really changes every time.
		return cd + "date +%s%N | dd of=in/f00000 bs=19 count=1 conv=notrunc status=none"
	case "restore":
		return cd + "rm -rf out"
	}
	return "true"
}

func command(t *tool, w *ws, sc string, rssFile string) string {
	// t.cmd is "[VAR=value ...] exec BIN ARGS". hyperfine runs the
	// commands without a shell (-N): on a noisy machine its correction
	// for the shell's start-up swallows commands of a few ms whole. env
	// -C changes directory and sets the variables, then execs the tool
	// (no fork); the same for every tool.
	c := t.cmd
	if t.scmd != nil {
		c = func(w *ws) string { return t.scmd(w, sc) }
	}
	vars, bin, _ := strings.Cut(c(w), "exec ")
	if rssFile != "" {
		// Peak RSS: one more exec, only on runs of seconds.
		bin = gnuTime + " -a -o " + rssFile + " -f %M " + bin
	}
	return "env -C " + w.dir + " " + vars + bin
}

// shArg quotes a prepare command for hyperfine -N, which splits its
// arguments like a shell but runs no shell.
func shArg(cmd string) string {
	return "sh -c '" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
}

// probe runs the tool once in the scenario, outside hyperfine.
func probe(t *tool, w *ws, sc string, r *result, sz size) {
	if err := sh(prepare(t, w, sc), *timeout); err != nil {
		r.Failed = "prepare failed: " + err.Error()
		return
	}
	before := snapshot(filepath.Join(w.dir, "out"))
	rss := filepath.Join(results, "logs", fmt.Sprintf("%s-%s-%s.rss", sz.label(), sc, t.name))
	os.Remove(rss)
	cmd := command(t, w, sc, "")
	if gnuTime != "" {
		cmd = command(t, w, sc, rss)
	}
	logf := filepath.Join(results, "logs", fmt.Sprintf("%s-%s-%s.log", sz.label(), sc, t.name))
	t0 := time.Now()
	out, err := shOut(cmd, *timeout)
	d := time.Since(t0)
	_ = os.WriteFile(logf, out, 0o644)
	r.RSS = append(r.RSS, readRSS(rss)...)
	if errors.Is(err, context.DeadlineExceeded) {
		r.Failed = fmt.Sprintf("> %s (timed out)", durStr(timeout.Seconds()))
		fmt.Printf("  %-10s TIMEOUT after %s\n", t.name, durStr(timeout.Seconds()))
		return
	}
	if err != nil {
		r.Failed = "failed: " + err.Error()
		fmt.Printf("  %-10s FAILED (%v); last lines of %s:\n%s\n", t.name, err, logf, indent(lastLines(string(out), 15)))
		return
	}
	after := snapshot(filepath.Join(w.dir, "out"))
	for p, m := range after {
		if bm, ok := before[p]; !ok || bm != m {
			r.Wrote++
		}
	}
	r.Total = len(after)
	if t.summary != nil {
		r.Self = t.summary(string(out))
	}
	note := ""
	switch {
	case t.noOut:
	case r.Total < sz.n:
		r.Failed = fmt.Sprintf("left %d of %d outputs", r.Total, sz.n)
		note = "  WRONG: " + r.Failed
	case sc == "change1" && r.Wrote == 0:
		r.Failed = "missed the change: wrote nothing"
		note = "  WRONG: " + r.Failed
	case (sc == "noop" || sc == "afteredit") && r.Wrote > 0:
		note = "  (not a no-op)"
	}
	fmt.Printf("  %-10s probe %s, wrote %d/%d outputs %s%s\n", t.name, durStr(d.Seconds()), r.Wrote, sz.n, r.Self, note)
	if r.Failed != "" {
		return
	}
	if d > *long {
		r.Single = true
		r.Samples = []float64{d.Seconds()}
		r.Median = d.Seconds()
	}
}

// hyperfine times the tools of one scenario. hyperfine runs all of one
// command's runs before the next command's, so a scenario of seconds per
// run (cold, change one input) is timed in rounds instead: one hyperfine
// call per round, each tool once, the tools' order rotating from round to
// round. The speed of these shared VMs drifts by up to a third within
// minutes; back to back, one tool's block of runs could fall in a slow
// spell and another's not, and the ratios within a run would measure the
// drift.
func hyperfine(sz size, sc string, runs int, ts []*tool, wss map[string]*ws, rs []*result) {
	name := sz.label() + "-" + sc
	rssFiles := make([]string, len(ts))
	for i, t := range ts {
		if (sc == "cold" || sz.data) && gnuTime != "" {
			rssFiles[i] = filepath.Join(results, "logs", fmt.Sprintf("%s-%s-%s.rss", sz.label(), sc, t.name))
			os.Remove(rssFiles[i])
		}
	}
	// Timed in rounds, each round in another order, so that no tool is
	// timed only while the machine is slow: one run a round for the
	// slow scenarios, a few (after a warm-up run) for the fast ones.
	rounds, perRound, warmup := 1, runs, 0
	switch {
	case sc == "cold" || sc == "change1" || sz.data:
		rounds, perRound = runs, 1
	case runs >= 2*fastRounds:
		rounds, perRound, warmup = fastRounds, runs/fastRounds, 1
	}
	for round := range rounds {
		js := filepath.Join(results, name+".json")
		if rounds > 1 {
			js = filepath.Join(results, fmt.Sprintf("%s-round%d.json", name, round+1))
		}
		args := []string{"-N", "--style", "basic", "--runs", strconv.Itoa(perRound), "--warmup", strconv.Itoa(warmup), "-i", "--export-json", js}
		order := make([]int, len(ts)) // order[k]: the tool timed k-th this round
		for k := range ts {
			order[k] = (k + round) % len(ts)
		}
		var cmds []string
		for _, i := range order {
			t := ts[i]
			w := wss[t.name]
			args = append(args, "--prepare", shArg(prepare(t, w, sc)))
			cmds = append(cmds, "-n", t.name, command(t, w, sc, rssFiles[i]))
		}
		args = append(args, cmds...)
		if rounds > 1 {
			fmt.Printf("round %d of %d\n", round+1, rounds)
		}
		if err := runVerbose(nil, "hyperfine", args...); err != nil {
			for _, r := range rs {
				r.Failed = "hyperfine failed: " + err.Error()
			}
			return
		}
		b, err := os.ReadFile(js)
		check(err)
		var hf struct {
			Results []struct {
				Command   string    `json:"command"`
				Times     []float64 `json:"times"`
				ExitCodes []*int    `json:"exit_codes"`
			} `json:"results"`
		}
		check(json.Unmarshal(b, &hf))
		for k, i := range order {
			r := rs[i]
			if k >= len(hf.Results) {
				r.Failed = "no hyperfine result"
				continue
			}
			h := hf.Results[k]
			for _, c := range h.ExitCodes {
				if c == nil || *c != 0 {
					r.Failed = "a timed run failed (exit codes " + fmt.Sprint(derefAll(h.ExitCodes)) + ")"
				}
			}
			r.Samples = append(r.Samples, h.Times...)
		}
	}
	for i, r := range rs {
		r.Median = median(r.Samples)
		if rssFiles[i] != "" {
			r.RSS = append(r.RSS, readRSS(rssFiles[i])...)
		}
	}
}

// fastRounds is how many rounds a fast scenario (no-op, touch all,
// restore) is timed in.
const fastRounds = 5

// noopRSS measures peak RSS of three no-op runs.
func noopRSS(sz size, t *tool, w *ws) {
	var r *result
	for _, x := range all {
		if x.Size == sz.name && x.Shape == sz.shape && x.Scenario == "noop" && x.Tool == t.name {
			r = x
		}
	}
	if r == nil || r.Failed != "" {
		return
	}
	rf := filepath.Join(results, "logs", fmt.Sprintf("%s-noop-%s.rss", sz.label(), t.name))
	for range 3 {
		if _, err := shOut(command(t, w, "noop", rf), *timeout); err != nil {
			return
		}
	}
	r.RSS = readRSS(rf)
}

// runScale is cairn alone: plan (and run) of a for_each sweep.
func runScale(gen string) {
	ks := []int{10000, 100000}
	if *quick {
		ks = []int{2000, 10000}
	}
	fmt.Printf("\n== scale: cairn, for_each sweeps of %v instances\n", ks)
	for _, k := range ks {
		dir := filepath.Join(*workDir, fmt.Sprintf("scale-%d", k))
		check(os.RemoveAll(dir))
		mustRun(gen, "-foreach", strconv.Itoa(k), "-o", dir)
		w := &ws{dir: dir, cacheDir: dir + ".cairn-cache"}
		check(os.RemoveAll(w.cacheDir))
		sz := size{name: fmt.Sprintf("sweep%d", k), n: 0}
		ct := &tool{name: "cairn", cmd: func(w *ws) string {
			return "CAIRN_CACHE_DIR=" + w.cacheDir + " exec " + cairn + " plan"
		}}
		// plan-first: every run starts with no memo of the spec, so the
		// whole spec is evaluated, as after an edit of the sweep's own
		// for_each. plan-edited: every run follows an edit of the sweep's
		// command, so the spec is evaluated again but the for_each's keys
		// come from their memo. plan: nothing changed, the spec's memo.
		sq := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
		forget := writeScript(dir+".forget.sh", "rm -f "+sq(filepath.Join(dir, ".cairn"))+"/spec-*\n")
		edit := writeScript(dir+".edit.sh", `n=$(date +%N)
sed -i -E "s/echo( x[0-9]+)? [$][{]each[.]key[}] >/echo x$n \${each.key} >/" `+sq(filepath.Join(dir, "experiment.hcl"))+"\n")
		runOnePrep(sz, "plan-first", ct, w, 3, "sh "+forget)
		runOnePrep(sz, "plan-edited", ct, w, 3, "sh "+edit)
		runOne(sz, "plan", ct, w, 5)
		if *quick || k > 10000 {
			continue
		}
		rt := &tool{name: "cairn", cmd: func(w *ws) string {
			return "CAIRN_CACHE_DIR=" + w.cacheDir + " exec " + cairn + " run"
		}}
		runOne(sz, "run-cold", rt, w, 0)
		if last := all[len(all)-1]; last.Failed == "" {
			runOne(sz, "run-noop", rt, w, 5)
		}
	}
}

// runOne times one command: a probe with peak RSS, then (runs > 0 and the
// probe was quick enough) hyperfine.
func runOne(sz size, sc string, t *tool, w *ws, runs int) {
	runOnePrep(sz, sc, t, w, runs, "")
}

// writeScript writes the shell script p and returns its path.
func writeScript(p, body string) string {
	check(os.WriteFile(p, []byte(body), 0o755))
	return p
}

// runOnePrep is runOne with a command run before the probe and before
// each timed run (hyperfine's --prepare), untimed.
func runOnePrep(sz size, sc string, t *tool, w *ws, runs int, before string) {
	r := &result{Size: sz.name, Scenario: sc, Tool: t.name}
	all = append(all, r)
	rf := filepath.Join(results, "logs", fmt.Sprintf("%s-%s.rss", sz.name, sc))
	os.Remove(rf)
	cmd := command(t, w, sc, "")
	if gnuTime != "" {
		cmd = command(t, w, sc, rf)
	}
	if before != "" {
		if out, err := shOut(before, *timeout); err != nil {
			r.Failed = "prepare failed: " + err.Error()
			fmt.Printf("  %s %s: prepare FAILED:\n%s\n", sz.name, sc, indent(lastLines(string(out), 15)))
			return
		}
	}
	t0 := time.Now()
	out, err := shOut(cmd, *timeout)
	d := time.Since(t0)
	_ = os.WriteFile(filepath.Join(results, "logs", sz.name+"-"+sc+".log"), out, 0o644)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		r.Failed = fmt.Sprintf("> %s (timed out)", durStr(timeout.Seconds()))
	case err != nil:
		r.Failed = "failed: " + err.Error()
		fmt.Printf("  %s %s FAILED:\n%s\n", sz.name, sc, indent(lastLines(string(out), 15)))
	}
	r.RSS = readRSS(rf)
	fmt.Printf("  %s %s: probe %s %s\n", sz.name, sc, durStr(d.Seconds()), r.Failed)
	if r.Failed != "" {
		return
	}
	if runs == 0 || d > *long {
		r.Single, r.Samples, r.Median = true, []float64{d.Seconds()}, d.Seconds()
		return
	}
	js := filepath.Join(results, sz.name+"-"+sc+".json")
	args := []string{"-N", "--style", "basic", "--runs", strconv.Itoa(runs), "--export-json", js, "-n", "cairn " + sc}
	if before != "" {
		args = append(args, "--prepare", before)
	}
	if err := runVerbose(nil, "hyperfine", append(args, command(t, w, sc, ""))...); err != nil {
		r.Failed = "hyperfine failed: " + err.Error()
		return
	}
	var hf struct {
		Results []struct {
			Times []float64 `json:"times"`
		} `json:"results"`
	}
	b, err := os.ReadFile(js)
	check(err)
	check(json.Unmarshal(b, &hf))
	r.Samples = hf.Results[0].Times
	r.Median = median(r.Samples)
}

// ---- report

var scenarioTitle = map[string]string{
	"cold":    "cold (clean outputs and state)",
	"noop":    "no-op",
	"touch":   "touch all inputs (same content)",
	"change1": "change one input",
	"restore": "restore all outputs (rm -rf out)",
	// The data workloads (data.go).
	"hash":      "cold hash of the inputs",
	"afteredit": "the run after that change",
}

func report(elapsed time.Duration) {
	var b bytes.Buffer
	mode := "full"
	if *quick {
		mode = "QUICK"
	}
	fmt.Fprintf(&b, "# cairn benchmark (%s mode), %s\n\n", mode, time.Now().Format(time.RFC3339))
	fmt.Fprintf(&b, "Medians of hyperfine runs (¹ = one run only: the probe took longer than %s). Ratio to the fastest tool of the row in parentheses.\n\n", durStr(long.Seconds()))
	fmt.Fprintf(&b, "| | version |\n|---|---|\n")
	for _, k := range sortedKeys(versions) {
		fmt.Fprintf(&b, "| %s | %s |\n", k, versions[k])
	}
	var sections []section
	for _, r := range all {
		if s := (section{r.Size, r.Shape}); !slices.Contains(sections, s) {
			sections = append(sections, s)
		}
	}
	for _, sec := range sections {
		sizeSection(&b, sec.size, sec.shape)
	}
	shapeReport(&b, sections)
	dataReport(&b)
	baseReport(&b, sections)
	scaleSection(&b)
	fmt.Fprintf(&b, "\nHarness wall time: %s. Raw hyperfine JSON and per-run logs: %s\n", elapsed.Round(time.Second), results)
	fmt.Print("\n" + b.String())
	check(os.WriteFile(filepath.Join(results, "results.md"), b.Bytes(), 0o644))
	j, _ := json.MarshalIndent(map[string]any{"versions": versions, "results": all}, "", "  ")
	check(os.WriteFile(filepath.Join(results, "results.json"), j, 0o644))
}

// section is one size of the workload in one command shape.
type section = struct{ size, shape string }

// sizeSection writes the table of one size and shape: every tool's median
// per scenario, what each wrote, and peak RSS.
func sizeSection(b *bytes.Buffer, sz, shape string) {
	sec := section{sz, shape}
	if strings.HasPrefix(sz, "sweep") {
		return
	}
	// The columns: the tools measured at this size, in the order of
	// -tools, then the reference copies.
	var names []string
	for _, r := range all {
		if r.Size == sz && r.Shape == sec.shape && !slices.Contains(names, r.Tool) {
			names = append(names, r.Tool)
		}
	}
	ref := "ninja"
	if slices.Contains(names, "cp-r") {
		ref = "cp-r"
	}
	title := sz
	if sec.shape != "" {
		title += ", shape " + sec.shape
	}
	ratioCol := !dataNames[sz] // the data workloads' ratios are in their targets table
	if ratioCol {
		fmt.Fprintf(b, "\n## size %s\n\n| scenario | %s | cairn/%s |\n|---|%s---|\n", title, strings.Join(names, " | "), ref, strings.Repeat("---|", len(names)))
	} else {
		fmt.Fprintf(b, "\n## size %s\n\n| scenario | %s |\n|---|%s\n", title, strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	}
	var wrote, rss bytes.Buffer
	for _, sc := range []string{"hash", "cold", "noop", "touch", "change1", "afteredit", "restore"} {
		row := map[string]*result{}
		for _, r := range all {
			if r.Size == sz && r.Shape == sec.shape && r.Scenario == sc {
				row[r.Tool] = r
			}
		}
		if len(row) == 0 {
			continue
		}
		best := 0.0
		for _, r := range row {
			if r.Failed == "" && r.Median > 0 && (best == 0 || r.Median < best) {
				best = r.Median
			}
		}
		fmt.Fprintf(b, "| %s |", scenarioTitle[sc])
		fmt.Fprintf(&wrote, "| %s |", scenarioTitle[sc])
		for _, n := range names {
			r := row[n]
			switch {
			case r == nil:
				fmt.Fprintf(b, " – |")
				fmt.Fprintf(&wrote, " – |")
				continue
			case r.Failed != "":
				fmt.Fprintf(b, " %s |", r.Failed)
			default:
				mark := ""
				if r.Single {
					mark = "¹"
				}
				fmt.Fprintf(b, " %s%s (%.1f×) |", durStr(r.Median), mark, r.Median/best)
			}
			fmt.Fprintf(&wrote, " %d/%d", r.Wrote, r.Total)
			if r.Self != "" {
				fmt.Fprintf(&wrote, " (%s)", r.Self)
			}
			wrote.WriteString(" |")
		}
		c, n := row["cairn"], row[ref]
		if !ratioCol {
			b.WriteString("\n")
		} else if c != nil && n != nil && c.Failed == "" && n.Failed == "" && n.Median > 0 {
			fmt.Fprintf(b, " %.2f |\n", c.Median/n.Median)
		} else {
			fmt.Fprintf(b, " – |\n")
		}
		wrote.WriteString("\n")
		if sc == "cold" || sc == "noop" || dataNames[sz] {
			fmt.Fprintf(&rss, "| %s |", scenarioTitle[sc])
			for _, n := range names {
				if r := row[n]; r != nil && len(r.RSS) > 0 {
					fmt.Fprintf(&rss, " %s (%d runs) |", mib(r.RSS), len(r.RSS))
				} else {
					rss.WriteString(" – |")
				}
			}
			rss.WriteString("\n")
		}
	}
	fmt.Fprintf(b, "\nOutputs written by each tool in the probe run (by mtime), and what the tool itself reported:\n\n| scenario | %s |\n|---|%s\n%s", strings.Join(names, " | "), strings.Repeat("---|", len(names)), wrote.String())
	if rss.Len() > 0 {
		fmt.Fprintf(b, "\nPeak RSS (median, largest process of the run):\n\n| scenario | %s |\n|---|%s\n%s", strings.Join(names, " | "), strings.Repeat("---|", len(names)), rss.String())
	}
}

// baseReport writes cairn's ratios to cairn-base (-cairn-base), per size,
// shape and scenario, when both were measured.
func baseReport(b *bytes.Buffer, sections []section) {
	var rows bytes.Buffer
	for _, sec := range sections {
		var row bytes.Buffer
		fmt.Fprintf(&row, "| %s | %s |", sec.size, sec.shape)
		measured := false
		for _, sc := range []string{"cold", "noop", "touch", "change1", "restore"} {
			if x, ok := ratio(sec.size, sec.shape, sc, "cairn-base"); ok {
				fmt.Fprintf(&row, " %.2f |", x)
				measured = true
			} else {
				row.WriteString(" – |")
			}
		}
		if measured {
			rows.Write(row.Bytes())
			rows.WriteString("\n")
		}
	}
	if rows.Len() == 0 {
		return
	}
	fmt.Fprintf(b, "\n## cairn against cairn-base (%s)\n\nMedian of cairn over cairn-base's, same run:\n\n| size | shape | cold | no-op | touch all | change one | restore |\n|---|---|---|---|---|---|---|\n%s", *cairnBase, rows.String())
}

// scaleSection writes the for_each sweep figures, if they were measured.
func scaleSection(b *bytes.Buffer) {
	var scale bytes.Buffer
	for _, r := range all {
		if !strings.HasPrefix(r.Size, "sweep") {
			continue
		}
		cell := r.Failed
		if cell == "" {
			cell = durStr(r.Median)
			if r.Single {
				cell += "¹"
			}
		}
		rs := "–"
		if len(r.RSS) > 0 {
			rs = mib(r.RSS)
		}
		fmt.Fprintf(&scale, "| %s instances | cairn %s | %s | %s |\n", strings.TrimPrefix(r.Size, "sweep"), r.Scenario, cell, rs)
	}
	if scale.Len() > 0 {
		fmt.Fprintf(b, "\n## scale (cairn alone, for_each sweep)\n\n| sweep | command | median | peak RSS |\n|---|---|---|---|\n%s", scale.String())
	}
}

// shapeTarget is the most cairn may take, as a multiple of make -j2, for
// a cold run and for a change of one input at S and M with a phase shape
// other than cat: no shortcut for one shape may carry the comparison.
const shapeTarget = 1.15

// baseTool makes t the cairn binary given with -cairn-base, run on the
// workspace cairn's generator writes.
func baseTool(t *tool) {
	t.gen = "cairn"
	base := *cairnBase
	if base == "" {
		t.missing = "cairn-base needs -cairn-base BINARY"
		return
	}
	if _, err := os.Stat(base); err != nil {
		t.missing = "cairn-base: " + err.Error()
		return
	}
	t.version = firstLine(output(base, "version")) + " (-cairn-base " + base + ")"
	t.cmd = func(w *ws) string { return "CAIRN_CACHE_DIR=" + w.cacheDir + " exec " + base + " run" }
	t.clean = func(w *ws) []string { return []string{"out", ".cairn", w.cacheDir} }
	t.cache = true
	t.summary = cairnRunSummary
}

// cairnRunSummary reads what ran from cairn's closing line.
func cairnRunSummary(out string) string {
	if m := cairnSummary.FindAllStringSubmatch(out, -1); m != nil {
		l := m[len(m)-1]
		return fmt.Sprintf("ran %s, cached %s, restored %s", l[2], l[3], l[4])
	}
	return ""
}

// ratio is cairn's median over the tool ref's in one scenario of one size
// and shape, if both were measured.
func ratio(size, shape, sc, ref string) (float64, bool) {
	var c, n *result
	for _, r := range all {
		if r.Size != size || r.Shape != shape || r.Scenario != sc {
			continue
		}
		switch r.Tool {
		case "cairn":
			c = r
		case ref:
			n = r
		}
	}
	if c == nil || n == nil || c.Failed != "" || n.Failed != "" || n.Median <= 0 {
		return 0, false
	}
	return c.Median / n.Median, true
}

// shapeReport writes cairn's ratios to make -j2 and ninja for every size
// and shape side by side, then the per-shape targets.
func shapeReport(b *bytes.Buffer, sections []struct{ size, shape string }) {
	scens := []string{"cold", "change1", "noop", "touch"}
	var rows bytes.Buffer
	for _, sec := range sections {
		if sec.shape == "" {
			continue
		}
		fmt.Fprintf(&rows, "| %s | %s |", sec.size, sec.shape)
		for _, sc := range scens {
			for _, ref := range []string{"make", "ninja"} {
				if x, ok := ratio(sec.size, sec.shape, sc, ref); ok {
					fmt.Fprintf(&rows, " %.2f |", x)
				} else {
					rows.WriteString(" – |")
				}
			}
		}
		rows.WriteString("\n")
	}
	if rows.Len() == 0 {
		return
	}
	fmt.Fprintf(b, "\n## cairn per command shape\n\ncairn's median over make -j2's and ninja -j2's, per size and shape (cat: `cat SRCS | sha256sum > OUT`; prog: `sha256sum SRCS > OUT`; script: `sh phase.sh SRCS OUT`), every tool running the same commands.\n\n")
	b.WriteString("| size | shape |")
	for _, sc := range scens {
		fmt.Fprintf(b, " %s / make | / ninja |", strings.SplitN(scenarioTitle[sc], " (", 2)[0])
	}
	fmt.Fprintf(b, "\n|---|---|%s\n%s", strings.Repeat("---|", 2*len(scens)), rows.String())

	var targets bytes.Buffer
	for _, shape := range []string{"prog", "script"} {
		for _, sc := range []string{"cold", "change1"} {
			var cells []string
			met, measured := true, 0
			for _, size := range []string{"S", "M"} {
				x, ok := ratio(size, shape, sc, "make")
				if !ok {
					cells = append(cells, size+" not measured")
					continue
				}
				measured++
				met = met && x <= shapeTarget
				cells = append(cells, fmt.Sprintf("%s %.2f×", size, x))
			}
			if measured == 0 {
				continue
			}
			verdict := map[bool]string{true: "yes", false: "no"}[met]
			if met && measured < 2 {
				verdict = "yes where measured"
			}
			fmt.Fprintf(&targets, "| %s ≤ %.2f× make -j2 at S and M, shape %s | %s | %s |\n", strings.SplitN(scenarioTitle[sc], " (", 2)[0], shapeTarget, shape, strings.Join(cells, "; "), verdict)
		}
	}
	if targets.Len() > 0 {
		fmt.Fprintf(b, "\n### Targets per shape\n\n| target | cairn / make | met? |\n|---|---|---|\n%s", targets.String())
	}
}

// ---- helpers

func snapshot(dir string) map[string]int64 {
	m := map[string]int64{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			m[p] = info.ModTime().UnixNano()
		}
		return nil
	})
	return m
}

func readRSS(file string) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var v []int
	for _, l := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(l); err == nil {
			v = append(v, n)
		}
	}
	return v
}

func mib(kib []int) string {
	f := make([]float64, len(kib))
	for i, k := range kib {
		f[i] = float64(k)
	}
	return fmt.Sprintf("%.0f MiB", median(f)/1024)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func durStr(sec float64) string {
	switch {
	case sec < 0.1:
		return fmt.Sprintf("%.1f ms", sec*1000)
	case sec < 1:
		return fmt.Sprintf("%.0f ms", sec*1000)
	case sec < 100:
		return fmt.Sprintf("%.2f s", sec)
	}
	return fmt.Sprintf("%.0f s", sec)
}

func bytesStr(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

func derefAll(xs []*int) []string {
	var s []string
	for _, x := range xs {
		if x == nil {
			s = append(s, "signal")
		} else {
			s = append(s, strconv.Itoa(*x))
		}
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func output(name string, args ...string) string {
	if name == "" {
		return ""
	}
	out, _ := exec.Command(name, args...).CombinedOutput()
	return string(out)
}

func sh(cmd string, limit time.Duration) error {
	_, err := shOut(cmd, limit)
	return err
}

// shOut runs cmd with sh -c in its own process group, killed whole when
// limit passes.
func shOut(cmd string, limit time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	out, err := c.CombinedOutput()
	if ctx.Err() != nil {
		return out, context.DeadlineExceeded
	}
	return out, err
}

func runVerbose(env []string, name string, args ...string) error {
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), env...)
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	return c.Run()
}

func mustRun(name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		fatal(fmt.Sprintf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out))
	}
}

func check(err error) {
	if err != nil {
		fatal(err.Error())
	}
}

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, "harness:", msg)
	os.Exit(1)
}
