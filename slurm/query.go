package slurm

import (
	"strings"
)

// Job states Slurm reports (squeue %T, scontrol JobState).
var terminalStates = map[string]bool{
	"COMPLETED":     true,
	"FAILED":        true,
	"CANCELLED":     true,
	"TIMEOUT":       true,
	"OUT_OF_MEMORY": true,
	"NODE_FAIL":     true,
	"BOOT_FAIL":     true,
	"DEADLINE":      true,
	"PREEMPTED":     true,
	"REVOKED":       true,
	"SPECIAL_EXIT":  true,
}

// killedBySlurm holds the end states where Slurm, not the command, ended
// the job.
var killedBySlurm = map[string]bool{
	"CANCELLED":     true,
	"TIMEOUT":       true,
	"OUT_OF_MEMORY": true,
	"NODE_FAIL":     true,
	"BOOT_FAIL":     true,
	"DEADLINE":      true,
	"PREEMPTED":     true,
	"REVOKED":       true,
}

// queueRow is one job in squeue's answer.
type queueRow struct {
	state, reason string
}

// parseQueue reads `squeue -h -o %i|%T|%r` output: one job per line.
func parseQueue(out string) map[string]queueRow {
	rows := map[string]queueRow{}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, "|", 3)
		if len(parts) < 2 {
			continue
		}
		r := queueRow{state: strings.TrimSpace(parts[1])}
		if len(parts) == 3 {
			r.reason = strings.TrimSpace(parts[2])
		}
		// "CANCELLED by 0" in some versions' long form: keep the word.
		r.state, _, _ = strings.Cut(r.state, " ")
		rows[strings.TrimSpace(parts[0])] = r
	}
	return rows
}

// parseScontrol reads `scontrol -o show job ID`: one line of Key=Value
// tokens. Values of JobName, Command, WorkDir and others may hold spaces,
// so only the keys wanted are read, each up to the next space.
func parseScontrol(out string) map[string]string {
	m := map[string]string{}
	for _, key := range []string{"JobState", "Reason", "ExitCode", "NodeList", "TimeLimit"} {
		i := strings.Index(out, " "+key+"=")
		if i < 0 {
			if strings.HasPrefix(out, key+"=") {
				i = -1
			} else {
				continue
			}
		}
		v := out[i+1+len(key)+1:]
		if j := strings.IndexAny(v, " \n"); j >= 0 {
			v = v[:j]
		}
		m[key] = v
	}
	return m
}

// invalidJob reports whether squeue's or scontrol's error says the job id
// is unknown to the controller (never existed, or ended longer than
// MinJobAge ago).
func invalidJob(stderr string) bool {
	return strings.Contains(stderr, "Invalid job id")
}

// transient reports whether an sbatch failure is worth retrying: the
// controller was busy or out of reach, not the request refused.
func transient(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{
		"timed out", "temporarily", "unable to contact", "connection refused",
		"try again", "not responding", "zero bytes", "connection reset",
		"communication connection failure",
	} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
