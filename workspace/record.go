package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/runrec"
)

// The workspace's side of the run records (package runrec): writing a
// run's record into its run directory while it runs, the pointer to the
// run in progress (.cairn/current) and stop requests. When the writer
// writes follows the run (Ready: before the first phase changes the
// workspace); a full disk is reported with the free space left
// (fsx.NoSpace), as every other write of a run is.

// Records returns the workspace's directory of run records.
func (w *Workspace) Records() runrec.Dir { return runrec.Dir(w.RunsDir()) }

// StateWriter owns a run's state and writes it to disk. Updates are cheap;
// writes are grouped: a background loop writes the first record when the
// first phase is about to execute (Ready) or after firstRecordDelay,
// whichever comes first, then at most every interval while something
// changed, and Close writes the final state. A run that finds everything
// cached within firstRecordDelay writes one record, at its end, with one
// fsync.
type StateWriter struct {
	path   string
	tmpDir string // .cairn: where every run looks for temp files a dead cairn left
	// beforeFirst, if set, runs before the first record is written
	// (it names the run in .cairn/current).
	beforeFirst func() error

	mu      sync.Mutex
	st      *runrec.RunState
	dirty   bool
	dirMade bool // the run's directory exists

	writeMu sync.Mutex     // one write at a time: they share enc's buffers
	enc     runrec.Encoder // guarded by writeMu

	kick     chan struct{} // closed by Ready: write the first record now
	kickOnce sync.Once
	first    chan struct{} // closed once the first record is written
	firstErr error

	stop chan struct{}
	done chan struct{}
}

// firstRecordDelay is how long a run that executes nothing goes without a
// record on disk: long enough for a no-op to end first, short enough
// that cairn status soon sees a run that restores or decides for longer.
const firstRecordDelay = 100 * time.Millisecond

func NewStateWriter(path, tmpDir string, st *runrec.RunState, interval time.Duration, beforeFirst func() error) *StateWriter {
	sf := &StateWriter{path: path, tmpDir: tmpDir, beforeFirst: beforeFirst, st: st, kick: make(chan struct{}), first: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go sf.loop(interval)
	return sf
}

// Ready has the first record written, if it is not yet, waits for it and
// returns the error writing it. The engine calls it before the run changes
// the workspace (a phase executes, an output is restored), so no command
// starts before the run's record is on disk, and Close then writes the
// last record durably.
func (sf *StateWriter) Ready() error {
	sf.kickOnce.Do(func() { close(sf.kick) })
	<-sf.first
	return sf.firstErr
}

// Executed reports whether Ready was called.
func (sf *StateWriter) Executed() bool {
	select {
	case <-sf.kick:
		return true
	default:
		return false
	}
}

func (sf *StateWriter) loop(interval time.Duration) {
	defer close(sf.done)
	delay := time.NewTimer(firstRecordDelay)
	select {
	case <-sf.kick:
	case <-delay.C:
	case <-sf.stop:
		delay.Stop()
		sf.firstErr = errors.New("the run ended before its first record")
		close(sf.first)
		return
	}
	delay.Stop()
	if sf.beforeFirst != nil {
		sf.firstErr = sf.beforeFirst()
	}
	// The first record holds nothing a power cut could cost (no phase has
	// finished; finished phases are durable in the cache, and Close
	// writes the last record durably): its content is fsynced like every
	// state write, but the directory is not.
	if sf.firstErr == nil {
		sf.firstErr = sf.write(syncFile)
	}
	close(sf.first)
	t := time.NewTicker(interval)
	defer t.Stop()
	beat := time.Now()
	for {
		select {
		case <-sf.stop:
			return
		case now := <-t.C:
			sf.mu.Lock()
			if now.Sub(beat) >= runrec.HeartbeatInterval {
				sf.st.Heartbeat = now.UTC()
				sf.dirty = true
				beat = now
			}
			dirty := sf.dirty
			sf.mu.Unlock()
			if dirty {
				_ = sf.write(syncFile)
			}
		}
	}
}

// Update applies fn to the state under the lock.
func (sf *StateWriter) Update(fn func(*runrec.RunState)) {
	sf.mu.Lock()
	fn(sf.st)
	sf.dirty = true
	sf.mu.Unlock()
}

// Phase applies fn to one phase's record.
func (sf *StateWriter) Phase(addr string, fn func(*runrec.PhaseState)) {
	sf.Update(func(st *runrec.RunState) {
		ps := st.Phases[addr]
		if ps == nil {
			ps = &runrec.PhaseState{Status: runrec.StatusPending}
			st.Phases[addr] = ps
		}
		fn(ps)
	})
}

// How much of a state write is fsynced.
type stateSync int

const (
	syncFile stateSync = iota + 1 // the content, before the rename
	syncAll                       // the content, then the directory after the rename
)

// Flush writes the record now, its content fsynced: for what must reach
// state.json before cairn can die without a trace of it.
func (sf *StateWriter) Flush() error { return sf.write(syncFile) }

func (sf *StateWriter) write(mode stateSync) error {
	sf.writeMu.Lock()
	defer sf.writeMu.Unlock()
	sf.mu.Lock()
	b, err := sf.enc.Marshal(sf.st)
	sf.dirty = false
	made := sf.dirMade
	sf.dirMade = true
	sf.mu.Unlock()
	if err != nil {
		return err
	}
	if !made {
		// The run's directory, made with its first record.
		if err := os.MkdirAll(filepath.Dir(sf.path), 0o755); err != nil {
			return fmt.Errorf("create run directory: %w", err)
		}
	}
	return fsx.NoSpace(fsx.WriteFileAtomicVia(sf.tmpDir, sf.path, b, 0o600, "state", mode >= syncFile, mode == syncAll), filepath.Dir(sf.path))
}

// Close stops the background loop and writes the final state: durably if
// a phase executed; else (everything was cached or restored) its content
// is fsynced, so the file is never found empty or cut short (RELIABILITY
// I1), but not its directory: such a run's record, if a power cut took
// it, costs nothing to make again, its phases' results being durable in
// the cache.
func (sf *StateWriter) Close() error {
	close(sf.stop)
	<-sf.done
	if sf.Executed() {
		return sf.write(syncAll)
	}
	return sf.write(syncFile)
}

// CurrentRun returns the id of the run in progress, or "".
func (w *Workspace) CurrentRun() string {
	b, err := os.ReadFile(w.CurrentFile())
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	st, err := runrec.ReadState(w.Records().StatePath(id))
	if err != nil {
		return ""
	}
	runrec.Settle(st)
	if st.Status != runrec.RunRunning {
		return ""
	}
	return id
}

// RequestStop asks a running run to stop gracefully by writing a stop
// file into its folder; the run polls for it.
func (w *Workspace) RequestStop(id string) error {
	st, err := runrec.ReadState(w.Records().StatePath(id))
	if err != nil {
		return err
	}
	runrec.Settle(st)
	if st.Status != runrec.RunRunning {
		return fmt.Errorf("run %s is not running (status %s)", id, st.Status)
	}
	return WriteFileAtomic(filepath.Join(w.RunsDir(), id, "stop"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644, false)
}
