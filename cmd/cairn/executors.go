package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/cmd/cairn/internal/progress"
	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/executor/local"
	"github.com/cairn-run/cairn/slurm"
	"github.com/cairn-run/cairn/workspace"
)

// The executors phases run on, one registration each: adding an executor
// is a package that provides an executor.Plugin, and a line here.
func init() {
	executor.Register(local.Plugin)
	executor.Register(slurm.Plugin)
}

// executors makes this process's executors: the local one, and the others
// by name. None of them asks anything of its backend until a phase runs on
// it.
func (g *globals) executors() (executor.Executor, map[string]executor.Executor, error) {
	xs := map[string]executor.Executor{}
	for _, p := range executor.Plugins() {
		name := p.Name
		x, err := p.New(executor.Env{Warn: func(msg string) { g.warn(name + ": " + msg) }, Kill: g.killCh})
		if err != nil {
			return nil, nil, usageError{err}
		}
		xs[name] = x
	}
	lx := xs[executor.Local]
	delete(xs, executor.Local)
	return lx, xs, nil
}

// checkExecutor validates an --executor value.
func checkExecutor(name string) error {
	if _, ok := executor.Lookup(name); ok || name == "" {
		return nil
	}
	return usageError{fmt.Errorf("--executor %q: the executors are %s", name, strings.Join(executor.Names(), ", "))}
}

// executorList names the executors for help texts: "local or slurm".
func executorList() string {
	names := executor.Names()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// cancelLeftJobs cancels the remote jobs of a run whose cairn process is
// gone (the named run, else the latest).
func cancelLeftJobs(cmd *cobra.Command, g *globals, ws workspace.Workspace, args []string) error {
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
	_, xs, err := g.executors()
	if err != nil {
		return err
	}
	byExec := map[string][]executor.JobRef{}
	for _, r := range refs {
		byExec[r.Executor] = append(byExec[r.Executor], r)
	}
	for name, rs := range byExec {
		x, ok := xs[name].(executor.RemoteExecutor)
		if !ok {
			return fmt.Errorf("run %s left jobs on executor %q, which this cairn does not know", st.RunID, name)
		}
		if err := x.Cancel(cmd.Context(), rs); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "cancelled %s left by run %s (%s)\n", progress.Plural(len(rs), name+" job"), st.RunID, st.Status)
	}
	return nil
}
