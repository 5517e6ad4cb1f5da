package slurm

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Files in a job's directory.
const (
	scriptFile = "job.sh"
	stdoutFile = "stdout"
	stderrFile = "stderr"
	exitFile   = "exitcode" // written by the batch script when the command ends
	idFile     = "jobid"    // written by cairn once sbatch answered
)

// Environment variables that carry the command into the batch job, so that
// the script file holds no argument (an argument may hold a secret).
const (
	envArgc = "CAIRN_SLURM_ARGC"
	envArg  = "CAIRN_SLURM_ARG_"
	// envPipefail, set to 1, has a shell line (sh -c LINE) holding a '|'
	// run with pipefail by a shell of the node that has it, as a local
	// phase's is (executor.Job.Pipefail).
	envPipefail = "CAIRN_SLURM_PIPEFAIL"
)

// batchScript is the script sbatch runs. It rebuilds the command from the
// job's environment, runs it in the submit directory (--chdir), and
// records its exit status in the exit file (written to a temporary name
// and renamed, so a reader never sees half of it), the way Nextflow's
// .exitcode does. It holds no argument, variable or secret of the phase.
func batchScript(phase, dir string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "# cairn batch job for phase %s.\n", oneLine(phase))
	b.WriteString("# The command and its environment come from the job's environment\n")
	b.WriteString("# (sbatch --export=ALL), never from this file.\n")
	b.WriteString("set --\n")
	b.WriteString("i=0\n")
	fmt.Fprintf(&b, "while [ \"$i\" -lt \"${%s:-0}\" ]; do\n", envArgc)
	fmt.Fprintf(&b, "  eval \"set -- \\\"\\$@\\\" \\\"\\${%s$i}\\\"\"\n", envArg)
	fmt.Fprintf(&b, "  unset \"%s$i\"\n", envArg)
	b.WriteString("  i=$((i + 1))\n")
	b.WriteString("done\n")
	fmt.Fprintf(&b, "unset %s i\n", envArgc)
	fmt.Fprintf(&b, "if [ \"${%s:-}\" = 1 ] && [ \"$#\" -eq 3 ] && [ \"$1\" = sh ] && [ \"$2\" = -c ]; then\n", envPipefail)
	b.WriteString("  case $3 in *'|'*)\n")
	b.WriteString("    if sh -o pipefail -c '(exit 3) | :' 2>/dev/null; [ $? -eq 3 ]; then\n")
	b.WriteString("      set -- sh -o pipefail -c \"$3\"\n")
	b.WriteString("    elif bash --posix -o pipefail -c '(exit 3) | :' 2>/dev/null; [ $? -eq 3 ]; then\n")
	b.WriteString("      set -- bash --posix -o pipefail -c \"$3\" sh\n")
	b.WriteString("    else\n")
	b.WriteString("      echo 'cairn: no shell with pipefail on this node (sh has no -o pipefail, no bash): a failure of an earlier stage of the pipeline goes unnoticed' >&2\n")
	b.WriteString("    fi;;\n")
	b.WriteString("  esac\n")
	b.WriteString("fi\n")
	fmt.Fprintf(&b, "unset %s\n", envPipefail)
	b.WriteString("\"$@\"\n")
	b.WriteString("code=$?\n")
	q := shellQuote(dir)
	fmt.Fprintf(&b, "printf '%%s\\n' \"$code\" >%s/%s.tmp && mv -f %s/%s.tmp %s/%s\n", q, exitFile, q, exitFile, q, exitFile)
	b.WriteString("exit \"$code\"\n")
	return b.String()
}

// commandEnv returns the variables that carry argv to the batch script,
// and whether it runs a shell line with pipefail.
func commandEnv(argv []string, pipefail bool) []string {
	env := make([]string, 0, len(argv)+2)
	env = append(env, envArgc+"="+strconv.Itoa(len(argv)))
	if pipefail {
		env = append(env, envPipefail+"=1")
	}
	for i, a := range argv {
		env = append(env, envArg+strconv.Itoa(i)+"="+a)
	}
	return env
}

// sbatchArgs returns sbatch's arguments for one job with the phase's
// settings s and budget timeout.
func sbatchArgs(name, workdir, dir string, s Settings, timeout time.Duration) []string {
	args := []string{
		"--parsable",
		"--job-name=" + name,
		"--chdir=" + workdir,
		"--output=" + outputPattern(filepath.Join(dir, stdoutFile)),
		"--error=" + outputPattern(filepath.Join(dir, stderrFile)),
		"--export=ALL",
	}
	if s.Partition != "" {
		args = append(args, "--partition="+s.Partition)
	}
	if s.CPUs > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(s.CPUs))
	}
	if s.Mem != "" {
		args = append(args, "--mem="+s.Mem)
	}
	if s.Gres != "" {
		args = append(args, "--gres="+s.Gres)
	}
	if s.Time > 0 {
		timeout = s.Time
	}
	if timeout > 0 {
		args = append(args, "--time="+Minutes(timeout))
	}
	if s.Account != "" {
		args = append(args, "--account="+s.Account)
	}
	if s.QoS != "" {
		args = append(args, "--qos="+s.QoS)
	}
	args = append(args, s.ExtraArgs...)
	return append(args, filepath.Join(dir, scriptFile))
}

// outputPattern escapes sbatch's filename patterns (%j, %x...) in a path.
func outputPattern(p string) string { return strings.ReplaceAll(p, "%", "%%") }

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// JobName turns a string into a job name Slurm and a shell take as is.
func JobName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}
