package main

// The data workloads: cairn alone on data at scale (a million input
// files, a hundred thousand outputs, inputs of gigabytes), each timed in
// the same hyperfine rounds as what the filesystem allows for the same
// files: git status, a find stat walk, a parallel sha256sum, Go's
// parallel SHA-256, cp -r and cp --reflink. bench/gen -data writes them.

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

const (
	defaultSizes = "S,M,L,Lo,F1m,O100k,G4"
	quickSizes   = "S,Lq,Lqo,F10k,O1k,G64m"
	// dataFileBytes is the size of every file of the F and O workloads.
	dataFileBytes = 1024
	// bigFiles is how many inputs the G workloads have.
	bigFiles = 4
)

// dataNames are the sizes run as data workloads, for the report.
var dataNames = map[string]bool{}

var dataSizeRE = regexp.MustCompile(`^([FOG])(\d+)([kmg]?)$`)

// parseDataSize reads a data size: Fn (n input files), On (n outputs),
// Gs (4 inputs of s bytes; no suffix: GiB), n and s with k, m, g.
func parseDataSize(name string) (size, error) {
	m := dataSizeRE.FindStringSubmatch(name)
	if m == nil {
		return size{}, fmt.Errorf("unknown size %q in -sizes (S, M, L, Lo, Lq, Lqo, Lox, Lqox, XS, or a data size: F1m, O100k, G4, ...)", name)
	}
	v, _ := strconv.ParseInt(m[2], 10, 64)
	mult := map[string]int64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9}
	if m[1] == "G" {
		mult = map[string]int64{"": 1 << 30, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
	}
	v *= mult[m[3]]
	sz := size{name: name, data: true, fastRuns: 5, slowRuns: 3}
	if *quick {
		sz.fastRuns, sz.slowRuns = 3, 2
	}
	switch m[1] {
	case "F":
		sz.f, sz.s, sz.n = int(v), dataFileBytes, 1
		sz.scens = []string{"cold", "noop", "change1", "afteredit"}
	case "O":
		if v > 1_000_000 {
			return size{}, fmt.Errorf("size %s: at most 1m outputs", name)
		}
		sz.f, sz.s, sz.n = int(v), dataFileBytes, int(v)
		sz.scens = []string{"cold", "noop", "restore"}
	case "G":
		sz.f, sz.s, sz.n = bigFiles, v, 1
		sz.scens = []string{"hash", "noop", "restore"}
	}
	if sz.f < 1 || sz.s < 1 {
		return size{}, fmt.Errorf("size %s is empty", name)
	}
	return sz, nil
}

// diskNeed is what a data size writes under -work at its peak: inputs,
// outputs, cairn's cache and the reference copies, with a margin.
func diskNeed(sz size) int64 {
	const block = 4096 // a small file takes a block
	switch sz.name[0] {
	case 'F': // the files, and as many loose objects in git
		return int64(sz.f)*2*block + 1<<30
	case 'O': // master in/blob and out/, two workspaces (in, out, cache), cp -r, cp --reflink
		return int64(sz.f)*9*max(block, sz.s) + 1<<30
	}
	// inputs; out/g0, its copy in the cache, cp and cp --reflink of it
	return int64(sz.f)*sz.s + 4*sz.s + 2<<30
}

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil // Bsize is 32 bits on macOS
}

// runData generates one data workload under -work, times its scenarios
// and removes it.
func runData(sz size, gen string) {
	fmt.Printf("\n== data size %s\n", sz.name)
	dataNames[sz.name] = true
	skip := func(why string) {
		fmt.Printf("  skipped: %s\n", why)
		all = append(all, &result{Size: sz.name, Scenario: sz.scens[0], Tool: "cairn", Failed: "not run: " + why})
	}
	if cairn == "" {
		skip("cairn is not measured (-tools) or did not build")
		return
	}
	free, err := freeBytes(*workDir)
	check(err)
	if need := diskNeed(sz); free < need {
		skip(fmt.Sprintf("needs %.1f GiB free under %s, has %.1f GiB", float64(need)/(1<<30), *workDir, float64(free)/(1<<30)))
		return
	}
	base := filepath.Join(*workDir, sz.name)
	check(os.RemoveAll(base))
	defer func() {
		if err := os.RemoveAll(base); err != nil {
			fmt.Println("note: cleaning up", base+":", err)
		}
	}()
	switch sz.name[0] {
	case 'F':
		runFiles(sz, gen, base)
	case 'O':
		runOuts(sz, gen, base)
	case 'G':
		runBig(sz, gen, base)
	}
}

// cairnTool is cairn in one data workspace; target, if not "", is the
// phase the hash scenario runs alone.
func cairnTool(name, target string) *tool {
	t := &tool{name: name, cache: true, summary: dataSummary}
	t.cmd = func(w *ws) string { return "CAIRN_CACHE_DIR=" + w.cacheDir + " exec " + cairn + " run" }
	t.clean = func(w *ws) []string { return []string{"out", ".cairn", w.cacheDir} }
	if target != "" {
		t.scmd = func(w *ws, sc string) string {
			if sc == "hash" {
				return t.cmd(w) + " " + target
			}
			return t.cmd(w)
		}
	}
	return t
}

// refTool is a reference command run with sh in the workspace; it writes
// no outputs unless out.
func refTool(name, script string, out bool) *tool {
	return &tool{
		name:  name,
		ref:   true,
		noOut: !out,
		cmd:   func(*ws) string { return "exec sh -c " + shQuote(script) },
		clean: func(*ws) []string { return []string{"out"} },
		prep: func(w *ws, sc string) string {
			if out {
				return "cd " + w.dir + " && rm -rf out"
			}
			return "true"
		},
	}
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// dataSummary is what cairn says it ran, and its line about hashing if it
// prints one.
func dataSummary(out string) string {
	s := cairnRunSummary(out)
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.Contains(strings.ToLower(l), "hashed") {
			return s + `; says "` + l + `"`
		}
	}
	return s
}

// runFiles: one phase whose input is the directory of sz.f files, beside
// git status on the same tree (committed, index fresh, untracked cache
// on), a find stat walk and a parallel sha256sum of the same files.
func runFiles(sz size, gen, base string) {
	dir := filepath.Join(base, "ws")
	w := &ws{dir: dir, cacheDir: filepath.Join(base, "cairn-cache")}
	fmt.Printf("  writing %d files of %d bytes\n", sz.f, sz.s)
	mustRun(gen, "-data", "files", "-count", strconv.Itoa(sz.f), "-s", strconv.FormatInt(sz.s, 10), "-o", dir)
	fmt.Println("  committing them to git")
	gitCommit(dir)
	versions["git"] = firstLine(output("git", "--version"))
	versions["sha256sum"] = firstLine(output("sha256sum", "--version"))

	// The edit: 19 new bytes (the nanosecond clock) at the start of a
	// file in the middle of the tree, same size.
	edit := "cd " + dir + " && date +%s%N | dd of=" + dataFileName(sz.f/2) + " bs=19 count=1 conv=notrunc status=none"
	c := cairnTool("cairn", "")
	c.prep = func(w *ws, sc string) string {
		switch sc {
		case "cold":
			return "cd " + w.dir + " && rm -rf " + strings.Join(c.clean(w), " ")
		case "change1":
			return edit
		case "afteredit":
			return edit + " && " + command(c, w, "noop", "") + " -q > /dev/null"
		}
		return "true"
	}
	sha := refTool("sha256sum-P2", "find in -type f -print0 | xargs -0 -P2 -n 500 sha256sum > /dev/null", false)
	git := refTool("git-status", "exec git status > /dev/null", false)
	walk := refTool("find-stat", `find in -printf "%s %T@\n" > /dev/null`, false)
	wss := map[string]*ws{"cairn": w, sha.name: w, git.name: w, walk.name: w}
	for _, sc := range sz.scens {
		group := []*tool{c}
		switch sc {
		case "cold":
			group = append(group, sha)
		case "noop":
			group = append(group, git, walk)
		}
		if !dataScenario(sz, sc, group, wss) {
			return
		}
	}
}

// gitCommit makes dir a git repository with all its files committed,
// the untracked cache on and the index fresh. The commit goes through
// git fast-import, one pack: git add of a million files writes as many
// loose objects, which takes many minutes here.
func gitCommit(dir string) {
	g := func(args ...string) { mustRun("git", append([]string{"-C", dir}, args...)...) }
	g("init", "-q")
	g("config", "core.untrackedCache", "true")
	g("config", "gc.auto", "0")
	head, err := exec.Command("git", "-C", dir, "symbolic-ref", "HEAD").Output()
	check(err)
	imp := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	stdin, err := imp.StdinPipe()
	check(err)
	imp.Stderr = os.Stderr
	check(imp.Start())
	bw := bufio.NewWriterSize(stdin, 1<<20)
	fmt.Fprintf(bw, "commit %s\ncommitter bench <bench@localhost> 0 +0000\ndata 4\ndata\n", strings.TrimSpace(string(head)))
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(bw, "M 100644 inline %s\ndata %d\n", rel, len(b))
		bw.Write(b)
		bw.WriteString("\n")
		return nil
	})
	check(err)
	check(bw.Flush())
	check(stdin.Close())
	check(imp.Wait())
	// The index from HEAD, every entry's stat refreshed (the files hashed
	// once); then status twice, the first writing the untracked cache.
	g("reset", "-q")
	g("status", "-s")
	g("status", "-s")
	if out := output("git", "-C", dir, "status", "--porcelain"); out != "" {
		fatal("git status of the committed tree " + dir + " is not clean:\n" + lastLines(out, 10))
	}
}

// dataFileName is where gen -data files writes file i (bench/gen's dataFile).
func dataFileName(i int) string {
	return fmt.Sprintf("in/d%04d/f%07d", i/1000, i)
}

// runOuts: one phase writing sz.f files, once into one directory output
// (cairn-dir) and once with every file a declared output (cairn-list),
// beside the command alone, cp -r of the same tree and cp --reflink.
func runOuts(sz size, gen, base string) {
	master := filepath.Join(base, "master")
	args := []string{"-count", strconv.Itoa(sz.f), "-s", strconv.FormatInt(sz.s, 10)}
	fmt.Printf("  writing the master tree of %d files of %d bytes\n", sz.f, sz.s)
	mustRun(gen, append([]string{"-data", "outs", "-o", master}, args...)...)
	hcl, err := os.ReadFile(filepath.Join(master, "experiment.hcl"))
	check(err)
	m := regexp.MustCompile(`command = "(.*)"`).FindSubmatch(hcl)
	if m == nil {
		fatal("no command in " + filepath.Join(master, "experiment.hcl"))
	}
	phaseCmd := string(m[1])
	mustRun("sh", "-c", "cd "+master+" && "+phaseCmd)

	wss := map[string]*ws{}
	var cairns []*tool
	for _, v := range []struct{ name, kind string }{{"cairn-dir", "outs"}, {"cairn-list", "outlist"}} {
		w := &ws{dir: filepath.Join(base, v.name), cacheDir: filepath.Join(base, v.name+".cairn-cache")}
		mustRun(gen, append([]string{"-data", v.kind, "-no-inputs", "-o", w.dir}, args...)...)
		mustRun("cp", "-a", filepath.Join(master, "in"), filepath.Join(w.dir, "in"))
		wss[v.name] = w
		cairns = append(cairns, cairnTool(v.name, ""))
	}
	refs := []*tool{refTool("command", phaseCmd, true), refTool("cp-r", "exec cp -r "+filepath.Join(master, "out")+" out", true)}
	if reflinks(base) {
		refs = append(refs, refTool("cp-reflink", "exec cp -r --reflink=always "+filepath.Join(master, "out")+" out", true))
	} else {
		fmt.Printf("  cp --reflink: not supported on this filesystem (%s)\n", fsType(base))
	}
	for _, t := range refs {
		w := &ws{dir: filepath.Join(base, t.name)}
		check(os.MkdirAll(w.dir, 0o755))
		if t.name == "command" {
			check(os.Symlink(filepath.Join(master, "in"), filepath.Join(w.dir, "in")))
		}
		wss[t.name] = w
	}
	live := cairns
	for _, sc := range sz.scens {
		group := append([]*tool(nil), live...)
		for _, t := range refs {
			if sc == "cold" || sc == "restore" && t.name != "command" {
				group = append(group, t)
			}
		}
		if !dataScenario(sz, sc, group, wss) {
			return
		}
	}
}

// runBig: 4 inputs of sz.s bytes. The hash scenario runs the phase that
// reads them all, from no state, beside Go's SHA-256 on 2 goroutines and
// sha256sum -P2; restore brings back out/g0 (a copy of in/g0) beside cp
// and cp --reflink of it.
func runBig(sz size, gen, base string) {
	dir := filepath.Join(base, "ws")
	w := &ws{dir: dir, cacheDir: filepath.Join(base, "cairn-cache")}
	fmt.Printf("  writing %d files of %s\n", sz.f, bytesStr(sz.s))
	mustRun(gen, "-data", "big", "-count", strconv.Itoa(sz.f), "-s", strconv.FormatInt(sz.s, 10), "-o", dir)
	gosha := filepath.Join(tools, "bin", "bench-gosha")
	mustRun("go", "build", "-o", gosha, "./bench/gosha")
	var ins []string
	for i := range sz.f {
		ins = append(ins, fmt.Sprintf("in/g%d", i))
	}
	c := cairnTool("cairn", "hash")
	c.prep = func(w *ws, sc string) string {
		switch sc {
		case "hash":
			return "cd " + w.dir + " && rm -rf .cairn out/h " + w.cacheDir
		case "restore":
			return "cd " + w.dir + " && rm -f out/g0"
		}
		return "true"
	}
	goRef := refTool("go-sha256-j2", "exec "+gosha+" -j 2 "+strings.Join(ins, " ")+" > /dev/null", false)
	shaRef := refTool("sha256sum-P2", "find in -type f -print0 | xargs -0 -P2 -n 1 sha256sum > /dev/null", false)
	src := filepath.Join(dir, "in", "g0")
	refs := []*tool{refTool("cp", "mkdir out && exec cp "+src+" out/g0", true)}
	if reflinks(base) {
		refs = append(refs, refTool("cp-reflink", "mkdir out && exec cp --reflink=always "+src+" out/g0", true))
	} else {
		fmt.Printf("  cp --reflink: not supported on this filesystem (%s)\n", fsType(base))
	}
	wss := map[string]*ws{"cairn": w, goRef.name: w, shaRef.name: w}
	for _, t := range refs {
		wss[t.name] = &ws{dir: filepath.Join(base, t.name)}
		check(os.MkdirAll(wss[t.name].dir, 0o755))
	}
	for _, sc := range sz.scens {
		group := []*tool{c}
		switch sc {
		case "hash":
			group = append(group, goRef, shaRef)
		case "noop":
			// Before the no-op, one run that stores out/g0 (untimed).
			if out, err := shOut(command(c, w, "noop", ""), *timeout); err != nil {
				fmt.Printf("  cairn run (storing out/g0) FAILED: %v\n%s\n", err, indent(lastLines(string(out), 15)))
				all = append(all, &result{Size: sz.name, Scenario: sc, Tool: "cairn", Failed: "the run storing out/g0 failed: " + err.Error()})
				return
			}
		case "restore":
			group = append(group, refs...)
		}
		if !dataScenario(sz, sc, group, wss) {
			return
		}
	}
}

// reflinks says whether cp --reflink=always works under dir.
func reflinks(dir string) bool {
	a, b := filepath.Join(dir, ".reflink-a"), filepath.Join(dir, ".reflink-b")
	defer os.Remove(a)
	defer os.Remove(b)
	if os.WriteFile(a, []byte("x"), 0o644) != nil {
		return false
	}
	return exec.Command("cp", "--reflink=always", a, b).Run() == nil
}

// dataScenario probes and times one scenario of a data size; false when
// cairn failed and the size cannot go on.
func dataScenario(sz size, sc string, group []*tool, wss map[string]*ws) bool {
	fmt.Printf("\n-- %s %s\n", sz.name, sc)
	runs := sz.fastRuns
	if sc != "noop" {
		runs = sz.slowRuns
	}
	var timed []*tool
	var rs []*result
	ok := true
	for _, t := range group {
		r := &result{Size: sz.name, Scenario: sc, Tool: t.name}
		all = append(all, r)
		probe(t, wss[t.name], sc, r, sz)
		if r.Failed != "" {
			if !t.ref && (sc == "cold" || sc == "hash") {
				ok = false
			}
			continue
		}
		if !r.Single {
			timed, rs = append(timed, t), append(rs, r)
		}
	}
	if len(timed) > 0 {
		hyperfine(sz, sc, runs, timed, wss, rs)
	}
	return ok
}

// dataTarget is one target of the data workloads, checked on the run's
// medians.
type dataTarget struct {
	what    string
	figures string
	met     string // yes, no, or why it could not be checked
}

// find is the result of one tool in one scenario of one size, measured.
func find(size, sc, tool string) *result {
	for _, r := range all {
		if r.Size == size && r.Scenario == sc && r.Tool == tool && r.Failed == "" && r.Median > 0 {
			return r
		}
	}
	return nil
}

// failed says why a tool's scenario has no figure.
func failed(size, sc, tool string) string {
	for _, r := range all {
		if r.Size == size && r.Scenario == sc && r.Tool == tool {
			if r.Failed != "" {
				return tool + " " + r.Failed
			}
		}
	}
	return tool + " not measured"
}

// atMost checks tool's median in sc against x times ref's median in refSc.
func atMost(size, sc, tool string, x float64, refSc, ref string) (string, string) {
	c, n := find(size, sc, tool), find(size, refSc, ref)
	switch {
	case c == nil:
		return failed(size, sc, tool), "not measured"
	case n == nil:
		return failed(size, refSc, ref), "not measured"
	}
	q := c.Median / n.Median
	return fmt.Sprintf("%s / %s = %.2f×", durStr(c.Median), durStr(n.Median), q), yesNo(q <= x)
}

func yesNo(b bool) string { return map[bool]string{true: "yes", false: "no"}[b] }

// rssAtMost checks the median peak RSS of tool in the scenarios against mib.
func rssAtMost(size, tool string, scs []string, lim int) (string, string) {
	var cells []string
	met, any := true, false
	for _, sc := range scs {
		r := find(size, sc, tool)
		if r == nil || len(r.RSS) == 0 {
			continue
		}
		any = true
		var f []float64
		for _, k := range r.RSS {
			f = append(f, float64(k))
		}
		m := median(f) / 1024
		met = met && m <= float64(lim)
		cells = append(cells, fmt.Sprintf("%s %.0f MiB", sc, m))
	}
	if !any {
		return "no RSS figures", "not measured"
	}
	return strings.Join(cells, ", "), yesNo(met)
}

// dataReport writes the targets of the data workloads, met or not.
func dataReport(b *bytes.Buffer) {
	var ts []dataTarget
	add := func(what string, f func() (string, string)) {
		fig, met := f()
		ts = append(ts, dataTarget{what, fig, met})
	}
	var names []string
	for _, r := range all {
		if dataNames[r.Size] && !slices.Contains(names, r.Size) {
			names = append(names, r.Size)
		}
	}
	for _, sz := range names {
		switch sz[0] {
		case 'F':
			add(sz+": no-op ≤ 1.5× git status", func() (string, string) { return atMost(sz, "noop", "cairn", 1.5, "noop", "git-status") })
			add(sz+": no-op peak RSS ≤ 300 MiB", func() (string, string) { return rssAtMost(sz, "cairn", []string{"noop"}, 300) })
			add(sz+": one file edited ≤ 1.5× the no-op", func() (string, string) {
				fig, met := atMost(sz, "change1", "cairn", 1.5, "noop", "cairn")
				if r := find(sz, "change1", "cairn"); r != nil && r.Self != "" {
					fig += " (" + r.Self + ")"
				}
				return fig, met
			})
			add(sz+": the run after the edit is a plain no-op (ran nothing, ≤ 1.2× the no-op)", func() (string, string) {
				fig, met := atMost(sz, "afteredit", "cairn", 1.2, "noop", "cairn")
				if r := find(sz, "afteredit", "cairn"); r != nil {
					fig += " (" + r.Self + ")"
					if !strings.HasPrefix(r.Self, "ran 0,") {
						met = "no"
					}
				}
				return fig, met
			})
			add(sz+": cold ≤ 1.0× sha256sum -P2", func() (string, string) { return atMost(sz, "cold", "cairn", 1.0, "cold", "sha256sum-P2") })
		case 'O':
			for _, c := range []string{"cairn-dir", "cairn-list"} {
				add(sz+": "+c+" store (cold) ≤ 1.5× cp -r", func() (string, string) { return atMost(sz, "cold", c, 1.5, "cold", "cp-r") })
				add(sz+": "+c+" restore ≤ 1.5× cp -r", func() (string, string) { return atMost(sz, "restore", c, 1.5, "restore", "cp-r") })
				add(sz+": "+c+" no-op ≤ 1 s", func() (string, string) {
					r := find(sz, "noop", c)
					if r == nil {
						return failed(sz, "noop", c), "not measured"
					}
					return durStr(r.Median), yesNo(r.Median <= 1)
				})
			}
		case 'G':
			add(sz+": cold hash ≥ 0.9× Go's parallel SHA-256 (time ≤ 1.11×)", func() (string, string) {
				return atMost(sz, "hash", "cairn", 1/0.9, "hash", "go-sha256-j2")
			})
			add(sz+": no-op ≤ 20 ms", func() (string, string) {
				r := find(sz, "noop", "cairn")
				if r == nil {
					return failed(sz, "noop", "cairn"), "not measured"
				}
				return durStr(r.Median), yesNo(r.Median <= 0.020)
			})
			ref := "cp"
			if find(sz, "restore", "cp-reflink") != nil {
				ref = "cp-reflink"
			}
			add(sz+": restore ≤ 1.2× "+ref, func() (string, string) { return atMost(sz, "restore", "cairn", 1.2, "restore", ref) })
			add(sz+": peak RSS ≤ 100 MiB", func() (string, string) {
				return rssAtMost(sz, "cairn", []string{"hash", "noop", "restore"}, 100)
			})
		}
	}
	if len(ts) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### Targets of the data workloads\n\nMedians of the same run; peak RSS is the median of every probe and timed run.\n\n| target | cairn / reference | met? |\n|---|---|---|\n")
	for _, t := range ts {
		fmt.Fprintf(b, "| %s | %s | %s |\n", t.what, t.figures, t.met)
	}
}
