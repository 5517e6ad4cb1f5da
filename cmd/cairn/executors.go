package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/slurm"
	"github.com/cairn-run/cairn/spec"
)

// remoteExecutors returns the executors of phases that do not run on this
// machine, by name. None of them asks anything of its backend until a
// phase runs on it.
func (g *globals) remoteExecutors() (map[string]engine.Executor, error) {
	o, err := slurm.OptionsFromEnv()
	if err != nil {
		return nil, usageError{err}
	}
	o.Warn = func(msg string) { g.warn("slurm: " + msg) }
	return map[string]engine.Executor{spec.ExecutorSlurm: slurm.New(o)}, nil
}

// checkExecutor validates an --executor value.
func checkExecutor(name string) error {
	if name == "" || slices.Contains(spec.Executors, name) {
		return nil
	}
	return usageError{fmt.Errorf("--executor %q: the executors are %s", name, strings.Join(spec.Executors, ", "))}
}

// cancelLeftJobs cancels the remote jobs of a run whose cairn process is
// gone (the named run, else the latest).
func cancelLeftJobs(cmd *cobra.Command, g *globals, ws engine.Workspace, args []string) error {
	id := ""
	if len(args) > 0 {
		id = args[0]
	}
	st, err := ws.Records().FindRun(id)
	if err != nil {
		return err
	}
	refs := ws.RunningJobs(st)
	if len(refs) == 0 {
		return fmt.Errorf("run %s is not running and left no job behind", st.RunID)
	}
	xs, err := g.remoteExecutors()
	if err != nil {
		return err
	}
	byExec := map[string][]engine.JobRef{}
	for _, r := range refs {
		byExec[r.Executor] = append(byExec[r.Executor], r)
	}
	for name, rs := range byExec {
		x, ok := xs[name].(engine.RemoteExecutor)
		if !ok {
			return fmt.Errorf("run %s left jobs on executor %q, which this cairn does not know", st.RunID, name)
		}
		if err := x.Cancel(cmd.Context(), rs); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "cancelled %s left by run %s (%s)\n", plural(len(rs), name+" job"), st.RunID, st.Status)
	}
	return nil
}
