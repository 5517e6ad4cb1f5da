package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/reproduce"
	"github.com/cairn-run/cairn/runrec"
)

type verifyOptions struct {
	Rerun  bool
	Sample int
	Seed   uint64
	Yes    bool
	JSON   bool
}

func newVerifyCommand(g *globals) *cobra.Command {
	var opts verifyOptions
	cmd := &cobra.Command{
		Use:   "verify --rerun [PHASE...]",
		Short: "Rerun cached phases in a scratch copy and report those whose outputs are not reproducible",
		Long: `verify --rerun reruns each cached PHASE (every cached phase when none is
named; a for_each phase's name stands for all its instances) in a scratch
directory of its own: copies of its input files, its upstream outputs
restored from the cache, and the environment a run gives it, with its
CAIRN_* paths in the scratch directory. It compares the outputs' digests
with the cached result and says which phases are not reproducible and
which outputs differ.

It never changes the workspace, the cache or the run history. The reruns
spend what the phases spend: verify first says how many phases it reruns
and what they cost when cached. When that recorded cost is above zero it
asks for confirmation on a terminal, and without one runs only with --yes.
The run budget (budget { max_cost } of the experiment) bounds the sum of
the recorded costs of the phases rerun; a phase's own budget (timeout,
max_cost) applies to its rerun as to a run.

Exit status: 0 when every rerun phase reproduced its cached outputs, 1 when
one did not (or failed, or was not rerun for the budget), 2 on a usage
error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !opts.Rerun {
				return usageError{errors.New("verify needs --rerun: it checks cached phases by running them again (to check the cache's files, use cairn cache verify)")}
			}
			if opts.Sample < 0 {
				return usageError{errors.New("--sample must be 1 or more")}
			}
			if !cmd.Flags().Changed("seed") {
				opts.Seed = uint64(time.Now().UnixNano())
			}
			return runVerify(g, cmd, opts, args)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Rerun, "rerun", false, "rerun the cached phases and compare their outputs with the cache")
	f.IntVar(&opts.Sample, "sample", 0, "rerun `N` of the cached phases, picked at random")
	f.Uint64Var(&opts.Seed, "seed", 0, "the `SEED` of --sample's pick (default: from the clock; verify prints it)")
	f.BoolVarP(&opts.Yes, "yes", "y", false, "rerun without asking, even phases that recorded spending")
	f.BoolVar(&opts.JSON, "json", false, "print the plan and the results as JSON")
	addPhaseCompletion(g, cmd)
	return cmd
}

// verifyReport is verify's --json output.
type verifyReport struct {
	Plan    *engine.VerifyPlan  `json:"plan"`
	Results []*reproduce.Result `json:"results"`
	// Reproducible is true when every phase rerun reproduced its outputs.
	Reproducible bool `json:"reproducible"`
}

func runVerify(g *globals, cmd *cobra.Command, opts verifyOptions, names []string) error {
	s, eng, err := g.openEngine(nil)
	if err != nil {
		return err
	}
	vopts := engine.VerifyOptions{Phases: names, Sample: opts.Sample, Seed: opts.Seed, MaxCost: s.Experiment.Budget.MaxCost}
	plan, err := eng.PlanVerify(vopts)
	if err != nil {
		return err
	}
	out, errw := cmd.OutOrStdout(), g.stderr
	for _, sk := range plan.Skipped {
		fmt.Fprintf(errw, "verify: skipping %s: %s\n", sk.Phase, sk.Reason)
	}
	fmt.Fprintln(errw, verifyAnnounce(plan, vopts))
	if len(plan.Phases) == 0 {
		if opts.JSON {
			return writeVerifyJSON(out, plan, nil)
		}
		return &exitError{code: exitFailed, msg: "no cached phase to rerun"}
	}
	if err := confirmVerify(plan, opts, errw); err != nil {
		return err
	}
	ctx := g.watchContext(cmd.Context())
	results := eng.Verify(ctx, plan, vopts, func(r *reproduce.Result) {
		if !opts.JSON {
			writeVerifyResult(out, r)
		}
	})
	if opts.JSON {
		if err := writeVerifyJSON(out, plan, results); err != nil {
			return err
		}
	}
	bad := 0
	for _, r := range results {
		if r.Status != reproduce.Reproducible {
			bad++
		}
	}
	if !opts.JSON {
		fmt.Fprintf(out, "%d of %d phases reproducible\n", len(results)-bad, len(results))
	}
	if bad > 0 {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("%d of %d phases not reproducible (or not rerun)", bad, len(results))}
	}
	return nil
}

// verifyAnnounce is the line verify prints before it reruns anything.
func verifyAnnounce(plan *engine.VerifyPlan, opts engine.VerifyOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verify: rerunning %d cached %s", len(plan.Phases), plural(len(plan.Phases), "phase", "phases"))
	if opts.Sample > 0 {
		fmt.Fprintf(&b, " (picked at random: --sample %d --seed %d)", opts.Sample, opts.Seed)
	}
	fmt.Fprintf(&b, "; recorded cost %s, recorded time %s", runrec.FormatCost(plan.Cost), time.Duration(plan.DurationMS)*time.Millisecond)
	if opts.MaxCost != nil {
		fmt.Fprintf(&b, "; run budget max_cost %s", runrec.FormatCost(*opts.MaxCost))
		if plan.Cost > *opts.MaxCost {
			b.WriteString(", which stops the reruns before the last ones")
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// confirmVerify asks before reruns that recorded spending: on a terminal
// it waits for a yes; without one it needs --yes.
func confirmVerify(plan *engine.VerifyPlan, opts verifyOptions, errw io.Writer) error {
	if opts.Yes || plan.Cost <= 0 {
		return nil
	}
	if !isatty.IsTerminal(os.Stdin.Fd()) {
		return usageError{fmt.Errorf("the phases to rerun recorded a cost of %s: pass --yes to pay it again", runrec.FormatCost(plan.Cost))}
	}
	fmt.Fprint(errw, "verify: rerun them and pay again? [y/N] ")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return &exitError{code: exitUsage, msg: "nothing rerun"}
	}
	return nil
}

// writeVerifyResult prints one rerun's verdict: the outputs that differ,
// with their files, or why the phase was not compared.
func writeVerifyResult(w io.Writer, r *reproduce.Result) {
	switch r.Status {
	case reproduce.Reproducible:
		fmt.Fprintf(w, "%s: reproducible (%s)\n", r.Phase, strings.Join(r.Same, ", "))
	case reproduce.Differs:
		fmt.Fprintf(w, "%s: NOT reproducible\n", r.Phase)
		for _, d := range r.Differ {
			fmt.Fprintf(w, "  differs: %s", d.Output)
			if len(d.Files) > 1 || len(d.Files) == 1 && d.Files[0] != d.Output {
				fmt.Fprintf(w, " (%s)", strings.Join(d.Files, ", "))
			}
			fmt.Fprintln(w)
		}
		for _, s := range r.Same {
			fmt.Fprintf(w, "  same:    %s\n", s)
		}
	case reproduce.Failed:
		fmt.Fprintf(w, "%s: rerun failed: %s\n", r.Phase, r.Error)
	default:
		fmt.Fprintf(w, "%s: %s\n", r.Phase, r.Error)
	}
}

func writeVerifyJSON(w io.Writer, plan *engine.VerifyPlan, results []*reproduce.Result) error {
	rep := verifyReport{Plan: plan, Results: results, Reproducible: len(results) > 0}
	for _, r := range results {
		if r.Status != reproduce.Reproducible {
			rep.Reproducible = false
		}
	}
	if rep.Results == nil {
		rep.Results = []*reproduce.Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
