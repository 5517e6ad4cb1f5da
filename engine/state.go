package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// StateSchemaVersion is the version of state.json's layout.
const StateSchemaVersion = 1

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
)

// RunState is the content of .cairn/runs/<run-id>/state.json.
type RunState struct {
	SchemaVersion int                    `json:"schema_version"`
	RunID         string                 `json:"run_id"`
	Spec          string                 `json:"spec"`
	SpecHash      string                 `json:"spec_hash"`
	Targets       []string               `json:"targets"`
	Flags         map[string]any         `json:"flags,omitempty"`
	Host          string                 `json:"host"`
	PID           int                    `json:"pid"`
	Started       time.Time              `json:"started"`
	Heartbeat     time.Time              `json:"heartbeat"`
	Ended         *time.Time             `json:"ended,omitempty"`
	Status        string                 `json:"status"`
	Phases        map[string]*PhaseState `json:"phases"`
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
	Error      string     `json:"error,omitempty"`
	LogTail    string     `json:"log_tail,omitempty"`
	Stdout     string     `json:"stdout,omitempty"` // log path, relative to the workspace
	Stderr     string     `json:"stderr,omitempty"`
}

// stateFile owns a run's state and writes it to disk. Updates are cheap;
// writes are grouped: a background loop writes at most every interval
// while something changed, and Close writes the final state durably.
type stateFile struct {
	path string

	mu    sync.Mutex
	st    *RunState
	dirty bool

	stop chan struct{}
	done chan struct{}
}

func newStateFile(path string, st *RunState, interval time.Duration) (*stateFile, error) {
	sf := &stateFile{path: path, st: st, stop: make(chan struct{}), done: make(chan struct{})}
	if err := sf.write(true); err != nil {
		return nil, err
	}
	go sf.loop(interval)
	return sf, nil
}

func (sf *stateFile) loop(interval time.Duration) {
	defer close(sf.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	beat := time.Now()
	for {
		select {
		case <-sf.stop:
			return
		case now := <-t.C:
			sf.mu.Lock()
			if now.Sub(beat) >= 5*time.Second {
				sf.st.Heartbeat = now.UTC()
				sf.dirty = true
				beat = now
			}
			dirty := sf.dirty
			sf.mu.Unlock()
			if dirty {
				_ = sf.write(false)
			}
		}
	}
}

// update applies fn to the state under the lock.
func (sf *stateFile) update(fn func(*RunState)) {
	sf.mu.Lock()
	fn(sf.st)
	sf.dirty = true
	sf.mu.Unlock()
}

// phase applies fn to one phase's record.
func (sf *stateFile) phase(addr string, fn func(*PhaseState)) {
	sf.update(func(st *RunState) {
		ps := st.Phases[addr]
		if ps == nil {
			ps = &PhaseState{Status: StatusPending}
			st.Phases[addr] = ps
		}
		fn(ps)
	})
}

func (sf *stateFile) write(durable bool) error {
	sf.mu.Lock()
	b, err := marshalState(sf.st)
	sf.dirty = false
	sf.mu.Unlock()
	if err != nil {
		return err
	}
	return writeFileAtomic(sf.path, b, 0o600, durable)
}

func marshalState(st *RunState) ([]byte, error) {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return append(b, '\n'), nil
}

// Close stops the background loop and writes the final state durably.
func (sf *stateFile) Close() error {
	close(sf.stop)
	<-sf.done
	return sf.write(true)
}

// ReadState reads a run's state.json.
func ReadState(path string) (*RunState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st RunState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &st, nil
}

// StatePath returns the state.json path of a run.
func (w *Workspace) StatePath(runID string) string {
	return filepath.Join(w.RunsDir(), runID, "state.json")
}
