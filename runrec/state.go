package runrec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// StateSchemaVersion is the version of state.json's layout. Version 2 adds
// the checksum member (see Marshal); version 1 files, without it,
// are still read.
const StateSchemaVersion = 2

// Run statuses.
const (
	RunRunning     = "running"
	RunSucceeded   = "succeeded"
	RunFailed      = "failed"
	RunStopped     = "stopped"
	RunInterrupted = "interrupted"
)

// Phase statuses.
const (
	StatusPending   = "pending"
	StatusCached    = "cached"
	StatusRestored  = "restored"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusSkipped   = "skipped"
	StatusBlocked   = "blocked"
	StatusStopped   = "stopped"
	// StatusTimedOut: the phase ran past its budget's timeout.
	StatusTimedOut = "timed_out"
	// StatusOverBudget: the phase reported spending past its max_cost or
	// max_iterations and was stopped.
	StatusOverBudget = "over_budget"
)

// Gates select which phases a run or plan considers and which it forces.
// They are recorded with a run so that resume repeats them.
type Gates struct {
	// Force reruns these phases even when cached.
	Force []string `json:"force,omitempty"`
	// From forces these phases and everything downstream of them.
	From []string `json:"from,omitempty"`
	// Until considers only these phases and what they need.
	Until []string `json:"until,omitempty"`
	// Only considers exactly these phases; what they need from other
	// phases must already be in the workspace or the cache.
	Only []string `json:"only,omitempty"`
}

// Request is what a run was asked to do: its targets, gates and settings.
// It is recorded in state.json so that resume repeats it.
type Request struct {
	Targets []string `json:"targets"`
	Gates
	Jobs      int  `json:"jobs,omitempty"`
	KeepGoing bool `json:"keep_going,omitempty"`
	// Vars and VarFiles are the -var NAME=VALUE and -var-file arguments,
	// as given.
	Vars     []string `json:"vars,omitempty"`
	VarFiles []string `json:"var_files,omitempty"`
	// Executor, when set (--executor), runs every phase on that executor
	// whatever the spec says.
	Executor string `json:"executor,omitempty"`
}

// RunState is the content of .cairn/runs/<run-id>/state.json.
type RunState struct {
	SchemaVersion int     `json:"schema_version"`
	RunID         string  `json:"run_id"`
	Spec          string  `json:"spec"`
	SpecHash      string  `json:"spec_hash"`
	Request       Request `json:"request"`
	// ResumeOf is the run this one resumed, whose spending it carries on.
	ResumeOf string `json:"resume_of,omitempty"`
	// MaxCost is the run budget in force (nil: none).
	MaxCost *float64 `json:"max_cost,omitempty"`
	// SpentBefore is what the runs this one resumed spent; Spent is what
	// this run's phases reported. The ledger's total is their sum.
	SpentBefore Spend `json:"spent_before"`
	Spent       Spend `json:"spent"`
	// StopReason says why a stopped run stopped: "interrupt", "stop
	// request" or "budget".
	StopReason string                 `json:"stop_reason,omitempty"`
	Host       string                 `json:"host"`
	PID        int                    `json:"pid"`
	Started    time.Time              `json:"started"`
	Heartbeat  time.Time              `json:"heartbeat"`
	Ended      *time.Time             `json:"ended,omitempty"`
	Status     string                 `json:"status"`
	Phases     map[string]*PhaseState `json:"phases"`
}

// PhaseState is one phase's record in a run.
type PhaseState struct {
	Status     string     `json:"status"`
	Key        string     `json:"key,omitempty"`
	Reasons    []string   `json:"reasons,omitempty"`
	Attempts   int        `json:"attempts,omitempty"`
	Started    *time.Time `json:"started,omitempty"`
	Ended      *time.Time `json:"ended,omitempty"`
	DurationMS int64      `json:"duration_ms,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Cost       float64    `json:"cost,omitempty"`
	Iterations int64      `json:"iterations,omitempty"`
	Error      string     `json:"error,omitempty"`
	// Warning says why a phase that succeeded was not cached (an input
	// changed while it ran).
	Warning string `json:"warning,omitempty"`
	LogTail string `json:"log_tail,omitempty"`
	Stdout  string `json:"stdout,omitempty"` // log path, relative to the workspace
	Stderr  string `json:"stderr,omitempty"`
	// Metrics is the phase's recorded metrics: one JSON object with a
	// member per file named in its metrics attribute (the file's path,
	// relative to the workspace), whose value is that file's JSON.
	Metrics json.RawMessage `json:"metrics,omitempty"`
	// Params is the phase's params as canonical JSON values.
	Params map[string]json.RawMessage `json:"params,omitempty"`
	// Executor names the remote executor of the phase's last attempt
	// ("slurm"); empty for local phases. JobID is the job's id in that
	// backend (empty while it is being submitted), JobDir the directory
	// of its batch script, output and exit status (relative to the
	// workspace) and JobName its name in the queue: cairn status, stop
	// --cancel and resume find the job by them after cairn itself died.
	Executor string `json:"executor,omitempty"`
	JobID    string `json:"job_id,omitempty"`
	JobDir   string `json:"job_dir,omitempty"`
	JobName  string `json:"job_name,omitempty"`
}

// Marshal encodes st as indented JSON whose last member is
//
//	"checksum": "sha256:<64 hex>"
//
// the SHA-256 of the same document without that member (the bytes up to
// the comma before it, followed by "\n}"). So any damage to the file (a
// torn write, a flipped bit) is detected when it is read, while it stays
// plain JSON for people and tools.
func Marshal(st *RunState) ([]byte, error) {
	var enc Encoder
	return enc.Marshal(st)
}

// Encoder encodes states as Marshal does, reusing its buffer
// from one record to the next: a run of 1,000 phases rewrites a record of
// hundreds of KiB every interval, and a fresh buffer each time made
// megabytes of garbage. It writes the JSON itself (stateenc.go), byte for
// byte what encoding/json writes. The bytes it returns are valid until
// its next use.
type Encoder struct {
	out []byte
}

func (se *Encoder) Marshal(st *RunState) ([]byte, error) {
	cp := *st
	cp.SchemaVersion = StateSchemaVersion
	// A cached phase's record is about 130 bytes: one allocation, not a
	// doubling series of them, each faulting in fresh pages.
	if need := 1024 + 160*len(st.Phases); cap(se.out) < need {
		se.out = make([]byte, 0, need)
	}
	out, err := appendHeader(se.out[:0], &cp)
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	switch {
	case st.Phases == nil:
		out = append(out, "null"...)
	case len(st.Phases) == 0:
		out = append(out, "{}"...)
	default:
		out = append(out, '{')
		if out, err = appendPhases(out, st.Phases); err != nil {
			return nil, fmt.Errorf("encode state: %w", err)
		}
		out = append(out, "\n  }"...)
	}
	out = append(out, "\n}"...) // as json.MarshalIndent ends it
	sum := sha256.Sum256(out)
	out = out[:len(out)-2] // without the closing "\n}"
	out = append(out, ",\n  \"checksum\": \"sha256:"...)
	out = hex.AppendEncode(out, sum[:])
	out = append(out, "\"\n}\n"...)
	se.out = out
	return out, nil
}

// checksumTail matches the checksum member Marshal appends.
var checksumTail = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`,\n  "checksum": "sha256:([0-9a-f]{64})"\n}\n?$`)
})

// ErrDamagedState matches a *DamagedStateError.
var ErrDamagedState = errors.New("run record damaged")

// DamagedStateError reports a state.json that cannot be trusted: empty,
// cut short, not JSON, failing its checksum, or of an unknown version. The
// phases the run finished are still in the cache, so a new run gets them
// back as cache hits; only the record of the run itself is lost.
type DamagedStateError struct {
	Path  string
	Cause string
	Newer bool // written by a newer cairn, not damaged
}

func (e *DamagedStateError) Error() string {
	dir := filepath.Dir(e.Path)
	if e.Newer {
		return fmt.Sprintf("run record %s %s: upgrade cairn to read it, or start a new run with cairn run", e.Path, e.Cause)
	}
	return fmt.Sprintf("run record %s is damaged (%s); the results of the phases it finished are still in the cache: "+
		"cairn run starts again and gets them back as cache hits. Remove the record with: rm -r %s", e.Path, e.Cause, dir)
}

func (e *DamagedStateError) Is(target error) bool { return target == ErrDamagedState }

// ReadState reads a run's state.json. A file that is damaged (see
// DamagedStateError) is an error matching ErrDamagedState; a missing one
// an error matching fs.ErrNotExist.
func ReadState(path string) (*RunState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	damaged := func(format string, args ...any) (*RunState, error) {
		return nil, &DamagedStateError{Path: path, Cause: fmt.Sprintf(format, args...)}
	}
	if len(b) == 0 {
		return damaged("empty file")
	}
	m := checksumTail().FindSubmatchIndex(b)
	if m != nil {
		body := append(b[:m[0]:m[0]], "\n}"...)
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != string(b[m[2]:m[3]]) {
			return damaged("checksum mismatch: the content changed after it was written")
		}
	}
	var st RunState
	if err := json.Unmarshal(b, &st); err != nil {
		return damaged("not valid JSON: %v", err)
	}
	switch {
	case st.SchemaVersion > StateSchemaVersion:
		return nil, &DamagedStateError{Path: path, Newer: true,
			Cause: fmt.Sprintf("has schema version %d, newer than this cairn's %d", st.SchemaVersion, StateSchemaVersion)}
	case st.SchemaVersion < 1:
		return damaged("no valid schema_version")
	case st.SchemaVersion >= 2 && m == nil:
		return damaged("its checksum is missing or garbled")
	case st.RunID == "" || st.Phases == nil || bytes.ContainsAny([]byte(st.RunID), "/\x00"):
		return damaged("run_id or phases missing")
	}
	return &st, nil
}

// Total is the run's ledger: what it and the runs it resumed spent.
func (st *RunState) Total() Spend { return st.SpentBefore.Add(st.Spent) }
