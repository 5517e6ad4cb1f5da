// Command gen writes one benchmark workload for one build tool: the same
// layered DAG of cheap deterministic phases over the same input files,
// expressed in cairn's HCL, a Makefile, build.ninja, a Taskfile, a
// Snakefile or a Turborepo workspace, so the harness in bench/ can time
// the tools side by side on identical work.
//
// The workload: F input files of S bytes under in/ (pseudo-random bytes
// from a fixed seed, so every tool and every run sees the same content,
// and incompressible, so no tool is flattered by compression). N phases in
// layers; phase i hashes its own share of the inputs and the outputs of
// two phases of the layer before it, writing out/pNNNNN. -shape picks the
// form of every phase's command, the same for every tool:
//
//	cat in/f00001 ... out/p00003 out/p00004 | sha256sum > out/p00012   (cat)
//	sha256sum in/f00001 ... out/p00003 out/p00004 > out/p00012         (prog)
//	sh phase.sh in/f00001 ... out/p00003 out/p00004 out/p00012         (script)
//
// A benchmark of one shape alone could be won by a shortcut for that
// shape; the harness runs all three. The script (phase.sh, written into
// the workspace and a source of every phase) takes its output off the
// end of its arguments in a shell loop, then hashes the rest.
//
// With -copy every phase instead writes its sources concatenated, unhashed
// (one source: a copy of it; -shape does not apply), so its output is as
// large as its inputs: the workload for restoring large outputs.
//
// With -data it writes instead one of the data workloads (see data.go).
//
// With -foreach K it writes instead a cairn-only sweep: one phase with a
// for_each over K instances, for the planning scale test.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	var w workload
	tool := flag.String("tool", "cairn", "cairn, make, ninja, task, snakemake or turbo")
	out := flag.String("o", "", "workspace directory to write (created)")
	flag.IntVar(&w.n, "n", 100, "phases")
	flag.IntVar(&w.f, "f", 1000, "input files")
	flag.Int64Var(&w.s, "s", 4096, "bytes per input file")
	flag.IntVar(&w.width, "width", 0, "phases per layer (0: about the square root of n)")
	foreach := flag.Int("foreach", 0, "write a cairn for_each sweep of this many instances instead")
	noInputs := flag.Bool("no-inputs", false, "write only the tool's files, not in/")
	flag.BoolVar(&copyMode, "copy", false, "each phase writes its sources concatenated, not their hash (large outputs)")
	data := flag.String("data", "", "write a data workload instead (cairn only): files (-count files of -s bytes under in/), outs (a phase writing -count files of -s bytes into one directory output), outlist (the same, each file a declared output) or big (-count files of -s bytes)")
	count := flag.Int("count", 0, "how many files, for -data")
	flag.StringVar(&shape, "shape", "cat", "every phase's command: cat (cat SRCS | sha256sum > OUT), prog (sha256sum SRCS > OUT) or script (sh "+scriptName+" SRCS OUT)")
	flag.Parse()
	if *out == "" {
		fatal(errors.New("-o DIR is required"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatal(err)
	}
	if *data != "" {
		fatal(writeData(*data, *count, w.s, *out, !*noInputs))
		return
	}
	if *foreach > 0 {
		fatal(writeFile(*out, "experiment.hcl", sweepHCL(*foreach)))
		return
	}
	if err := w.check(); err != nil {
		fatal(err)
	}
	switch {
	case shape != "cat" && shape != "prog" && shape != "script":
		fatal(fmt.Errorf("unknown -shape %q (cat, prog or script)", shape))
	case copyMode:
		shape = "cat"
	case shape == "script":
		if err := writeFile(*out, scriptName, []byte(phaseScript)); err != nil {
			fatal(err)
		}
	}
	if !*noInputs {
		if err := w.writeInputs(*out); err != nil {
			fatal(err)
		}
	}
	gen, ok := generators[*tool]
	if !ok {
		fatal(fmt.Errorf("unknown -tool %q", *tool))
	}
	fatal(gen(w.phases(), *out))
}

func fatal(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

type workload struct {
	n, f, width int
	s           int64
}

func (w *workload) check() error {
	if w.n < 1 || w.f < w.n || w.s < 0 {
		return fmt.Errorf("need n >= 1, f >= n and s >= 0 (n=%d f=%d s=%d)", w.n, w.f, w.s)
	}
	if w.width <= 0 {
		w.width = 1
		for w.width*w.width < w.n {
			w.width++
		}
	}
	return nil
}

// phase is one node of the workload.
type phase struct {
	name   string   // p00012
	inputs []string // in/fNNNNN files
	deps   []string // upstream phase names
}

func (p phase) out() string { return "out/" + p.name }

// sources is every file the phase reads: the script (shape script), its
// inputs, then its upstream outputs.
func (p phase) sources() []string {
	s := append(scriptSource(), p.inputs...)
	for _, d := range p.deps {
		s = append(s, "out/"+d)
	}
	return s
}

// copyMode makes every phase write its sources themselves (cat, or cp of a
// single source) instead of their hash.
var copyMode bool

// shape is the form of every phase's command: cat, prog or script.
var shape = "cat"

// scriptName is the script of shape script, in the workspace's root.
const scriptName = "phase.sh"

// phaseScript is scriptName: phase.sh IN... OUT hashes every IN (one line
// of sha256sum each) into OUT. The loop takes OUT off the end of the
// arguments, the way a script with a variable argument list does.
const phaseScript = `# phase.sh IN... OUT: the sha256sum of every IN, into OUT.
n=$#
i=0
for f; do
	i=$((i + 1))
	if [ "$i" -eq "$n" ]; then
		out=$f
	else
		set -- "$@" "$f"
	fi
done
shift "$n"
exec sha256sum "$@" > "$out"
`

// scriptSource is the script as the first source of every phase in shape
// script (its content is part of what each phase depends on), else none.
func scriptSource() []string {
	if shape == "script" {
		return []string{scriptName}
	}
	return nil
}

// recipe is the shell command that turns the n files srcs (shell words,
// possibly a tool's own variable such as make's $^; in shape script the
// script first) into out.
func recipe(srcs string, n int, out string) string {
	switch {
	case copyMode && n == 1:
		return "cp " + srcs + " " + out
	case copyMode:
		return "cat " + srcs + " > " + out
	case shape == "prog":
		return "sha256sum " + srcs + " > " + out
	case shape == "script":
		return "sh " + srcs + " " + out
	}
	return "cat " + srcs + " | sha256sum > " + out
}

func (p phase) command() string {
	return recipe(strings.Join(p.sources(), " "), len(p.sources()), p.out())
}

func inputName(i int) string { return fmt.Sprintf("in/f%05d", i) }
func phaseName(i int) string { return fmt.Sprintf("p%05d", i) }

// phases lays the n phases out in layers of width; phase i of layer k > 0
// depends on phases i and i+1 (wrapping) of layer k-1. The inputs are
// dealt out evenly.
func (w workload) phases() []phase {
	ps := make([]phase, w.n)
	for i := range ps {
		ps[i].name = phaseName(i)
		layer, pos := i/w.width, i%w.width
		if layer > 0 {
			prev := (layer - 1) * w.width
			a, b := prev+pos, prev+(pos+1)%w.width
			ps[i].deps = append(ps[i].deps, phaseName(a))
			if b != a && b < w.n {
				ps[i].deps = append(ps[i].deps, phaseName(b))
			}
		}
	}
	for j := 0; j < w.f; j++ {
		ps[j%w.n].inputs = append(ps[j%w.n].inputs, inputName(j))
	}
	return ps
}

// sinks are the phases nothing depends on.
func sinks(ps []phase) []string {
	used := map[string]bool{}
	for _, p := range ps {
		for _, d := range p.deps {
			used[d] = true
		}
	}
	var s []string
	for _, p := range ps {
		if !used[p.name] {
			s = append(s, p.name)
		}
	}
	return s
}

// writeInputs writes in/ unless every file is already there at the right
// size (regenerating 2 GiB for every tool would dominate the harness).
func (w workload) writeInputs(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for j := 0; j < w.f; j++ {
		p := filepath.Join(dir, inputName(j))
		if st, err := os.Stat(p); err == nil && st.Size() == w.s {
			continue
		}
		rng := rand.NewChaCha8([32]byte{byte(j), byte(j >> 8), byte(j >> 16), 'c', 'a', 'i', 'r', 'n'})
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		for left := w.s; left > 0; {
			b := buf[:min(left, int64(len(buf)))]
			_, _ = rng.Read(b)
			if _, err := f.Write(b); err != nil {
				f.Close()
				return err
			}
			left -= int64(len(b))
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(dir, name string, b []byte) error {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

var generators = map[string]func([]phase, string) error{
	"cairn":     genCairn,
	"make":      genMake,
	"ninja":     genNinja,
	"task":      genTask,
	"snakemake": genSnakemake,
	"turbo":     genTurbo,
}

func genCairn(ps []phase, dir string) error {
	var b bytes.Buffer
	b.WriteString("experiment \"bench\" {}\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "\nphase %q {\n", p.name)
		ins := append(scriptSource(), p.inputs...)
		srcs := slices.Clone(ins)
		for _, d := range p.deps {
			srcs = append(srcs, fmt.Sprintf("${phase.%s.outputs.o}", d))
		}
		fmt.Fprintf(&b, "  command = %q\n", recipe(strings.Join(srcs, " "), len(srcs), p.out()))
		fmt.Fprintf(&b, "  inputs  = [%s]\n", quoteList(ins))
		fmt.Fprintf(&b, "  outputs = { o = %q }\n}\n", p.out())
	}
	return writeFile(dir, "experiment.hcl", b.Bytes())
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

func genMake(ps []phase, dir string) error {
	var b bytes.Buffer
	// No built-in rules: otherwise make searches its implicit rules for
	// every input file, which costs seconds here and measures nothing.
	b.WriteString("MAKEFLAGS += -rR\n.SUFFIXES:\n")
	fmt.Fprintf(&b, "all:")
	for _, s := range sinks(ps) {
		fmt.Fprintf(&b, " out/%s", s)
	}
	b.WriteString("\n.PHONY: all\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "\n%s: %s\n\t@mkdir -p out && %s\n", p.out(), strings.Join(p.sources(), " "), recipe("$^", len(p.sources()), "$@"))
	}
	return writeFile(dir, "Makefile", b.Bytes())
}

func genNinja(ps []phase, dir string) error {
	var b bytes.Buffer
	b.WriteString("rule h\n  command = mkdir -p out && " + recipe("$in", 2, "$out") + "\n")
	if copyMode { // a single source is copied (cp), several concatenated
		b.WriteString("rule h1\n  command = mkdir -p out && " + recipe("$in", 1, "$out") + "\n")
	}
	for _, p := range ps {
		rule := "h"
		if copyMode && len(p.sources()) == 1 {
			rule = "h1"
		}
		fmt.Fprintf(&b, "build %s: %s %s\n", p.out(), rule, strings.Join(p.sources(), " "))
	}
	fmt.Fprintf(&b, "build all: phony")
	for _, s := range sinks(ps) {
		fmt.Fprintf(&b, " out/%s", s)
	}
	b.WriteString("\ndefault all\n")
	return writeFile(dir, "build.ninja", b.Bytes())
}

// genTask writes a Taskfile in which every phase is a task with
// content-checksum up-to-date checks (method: checksum). run: once makes
// a task that several others depend on run (or be checked) once per
// invocation, as in a build graph; go-task's default (always) runs it
// again for every dependent, which on a layered DAG multiplies the work
// exponentially and races concurrent copies of the same task.
func genTask(ps []phase, dir string) error {
	var b bytes.Buffer
	b.WriteString("version: '3'\nmethod: checksum\nrun: once\ntasks:\n  default:\n    deps: [")
	b.WriteString(strings.Join(sinks(ps), ", "))
	b.WriteString("]\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s:\n", p.name)
		if len(p.deps) > 0 {
			fmt.Fprintf(&b, "    deps: [%s]\n", strings.Join(p.deps, ", "))
		}
		fmt.Fprintf(&b, "    sources: [%s]\n", strings.Join(p.sources(), ", "))
		fmt.Fprintf(&b, "    generates: [%s]\n", p.out())
		fmt.Fprintf(&b, "    cmds: [%q]\n", "mkdir -p out && "+p.command())
	}
	return writeFile(dir, "Taskfile.yml", b.Bytes())
}

func genSnakemake(ps []phase, dir string) error {
	var b bytes.Buffer
	b.WriteString("rule all:\n    input: [")
	for i, s := range sinks(ps) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", "out/"+s)
	}
	b.WriteString("]\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "\nrule %s:\n    input: [%s]\n    output: %q\n    shell: %q\n",
			p.name, quoteList(p.sources()), p.out(), recipe("{input}", len(p.sources()), "{output}"))
	}
	return writeFile(dir, "Snakefile", b.Bytes())
}

// genTurbo writes a Turborepo workspace: one package per phase whose
// build script runs the phase's command from the repository root, with
// the upstream phases as workspace dependencies, inputs declared relative
// to the root ($TURBO_ROOT$) and the output cached.
func genTurbo(ps []phase, dir string) error {
	root := map[string]any{
		"name":           "bench",
		"private":        true,
		"packageManager": "npm@10.0.0",
		"workspaces":     []string{"pkgs/*"},
	}
	if err := writeJSON(dir, "package.json", root); err != nil {
		return err
	}
	turbo := map[string]any{
		"$schema": "https://turbo.build/schema.json",
		"ui":      "stream",
		"tasks": map[string]any{
			"build": map[string]any{
				"dependsOn": []string{"^build"},
				"inputs":    []string{"package.json"},
				"outputs":   []string{},
			},
		},
	}
	// Each package's own turbo.json names its inputs and outputs, which
	// live outside the package, relative to the root.
	for _, p := range ps {
		deps := map[string]string{}
		for _, d := range p.deps {
			deps[d] = "*"
		}
		pkg := map[string]any{
			"name":         p.name,
			"version":      "0.0.0",
			"private":      true,
			"scripts":      map[string]string{"build": "cd ../.. && mkdir -p out && " + p.command()},
			"dependencies": deps,
		}
		if err := writeJSON(dir, filepath.Join("pkgs", p.name, "package.json"), pkg); err != nil {
			return err
		}
		ins := []string{"package.json"}
		for _, s := range append(scriptSource(), p.inputs...) {
			ins = append(ins, "$TURBO_ROOT$/"+s)
		}
		sub := map[string]any{
			"extends": []string{"//"},
			"tasks": map[string]any{
				"build": map[string]any{
					"inputs":  ins,
					"outputs": []string{"$TURBO_ROOT$/" + p.out()},
				},
			},
		}
		if err := writeJSON(dir, filepath.Join("pkgs", p.name, "turbo.json"), sub); err != nil {
			return err
		}
	}
	return writeJSON(dir, "turbo.json", turbo)
}

func writeJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(dir, name, append(b, '\n'))
}

// sweepHCL is the cairn-only scale workload: k for_each instances of one
// trivial phase. HCL's range() stops at 1,024 values, so the keys come
// from two nested ranges.
func sweepHCL(k int) []byte {
	outer := (k + 999) / 1000
	return fmt.Appendf(nil, `experiment "sweep" {}

phase "cell" {
  for_each = toset(flatten([
    for a in range(%d) : [for b in range(1000) : format("%%06d", a * 1000 + b) if a * 1000 + b < %d]
  ]))
  command  = "echo ${each.key} > out/cell-${each.key}"
  params   = { seed = each.key }
  outputs  = { o = "out/cell-${each.key}" }
}
`, outer, k)
}
