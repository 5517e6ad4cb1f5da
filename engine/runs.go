package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/cache"
)

// ErrNoRuns is returned when a workspace has no run records.
var ErrNoRuns = errors.New("no runs recorded in this workspace yet")

// heartbeatStale is how old a running run's heartbeat may get before the
// run counts as interrupted; the heartbeat is written every 5s.
const heartbeatStale = 30 * time.Second

// Runs returns the workspace's run records, oldest first. Records that
// cannot be read are skipped.
func (w *Workspace) Runs() ([]*RunState, error) {
	ents, err := os.ReadDir(w.RunsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*RunState
	for _, ent := range ents {
		if !ent.IsDir() {
			continue
		}
		st, err := ReadState(w.StatePath(ent.Name()))
		if err != nil {
			continue
		}
		w.settle(st)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}

// DamagedRuns returns the error of every run record that is damaged
// (ErrDamagedState), which Runs skips.
func (w *Workspace) DamagedRuns() []error {
	ents, err := os.ReadDir(w.RunsDir())
	if err != nil {
		return nil
	}
	var errs []error
	for _, ent := range ents {
		if !ent.IsDir() {
			continue
		}
		if _, err := ReadState(w.StatePath(ent.Name())); errors.Is(err, ErrDamagedState) {
			errs = append(errs, err)
		}
	}
	return errs
}

// settle marks a run recorded as running as interrupted when its process
// is gone: its pid is dead (on this host), or its heartbeat is stale.
func (w *Workspace) settle(st *RunState) {
	if st.Status != RunRunning {
		return
	}
	host, _ := os.Hostname()
	gone := time.Since(st.Heartbeat) > heartbeatStale
	if st.Host == host && !processAlive(st.PID) {
		gone = true
	}
	if gone {
		st.Status = RunInterrupted
		for _, ps := range st.Phases {
			if ps.Status == StatusRunning {
				ps.Status = StatusStopped
				ps.Error = "interrupted: the cairn process running it is gone"
			}
		}
	}
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A zombie is dead for our purpose.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// UnknownRunError names a run id that has no record, with the ones that do.
type UnknownRunError struct {
	ID    string
	Known []string
}

func (e *UnknownRunError) Error() string {
	msg := fmt.Sprintf("no run %q in this workspace", e.ID)
	if len(e.Known) == 0 {
		return msg + "; no runs are recorded yet"
	}
	if len(e.Known) > 10 {
		return msg + "; the latest runs: " + strings.Join(e.Known[len(e.Known)-10:], ", ") + " (cairn runs lists them all)"
	}
	return msg + "; runs: " + strings.Join(e.Known, ", ")
}

// FindRun returns the record of run id, or of the latest run when id is
// empty. A unique prefix of an id is accepted.
//
// A damaged record (ErrDamagedState) is an error when it is the one asked
// for, or the latest when id is empty: falling back to another run would
// silently resume or show the wrong one.
func (w *Workspace) FindRun(id string) (*RunState, error) {
	if err := w.damagedRecord(id); err != nil {
		return nil, err
	}
	runs, err := w.Runs()
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		if id == "" {
			return nil, ErrNoRuns
		}
		return nil, &UnknownRunError{ID: id}
	}
	if id == "" {
		return runs[len(runs)-1], nil
	}
	var match []*RunState
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.RunID
		if r.RunID == id {
			return r, nil
		}
		if strings.HasPrefix(r.RunID, id) {
			match = append(match, r)
		}
	}
	if len(match) == 1 {
		return match[0], nil
	}
	return nil, &UnknownRunError{ID: id, Known: ids}
}

// damagedRecord returns the error of the record FindRun(id) would pick by
// directory name (the latest run directory with a state.json when id is
// empty; run ids sort by start time) if that record is damaged.
func (w *Workspace) damagedRecord(id string) error {
	ents, err := os.ReadDir(w.RunsDir())
	if err != nil {
		return nil
	}
	var names []string
	for _, ent := range ents {
		if ent.IsDir() {
			if _, err := os.Lstat(w.StatePath(ent.Name())); err == nil {
				names = append(names, ent.Name())
			}
		}
	}
	sort.Strings(names)
	pick := ""
	switch {
	case len(names) == 0:
		return nil
	case id == "":
		pick = names[len(names)-1]
	default:
		for _, n := range names {
			if n == id {
				pick = n
				break
			}
			if strings.HasPrefix(n, id) {
				if pick != "" {
					return nil // ambiguous: FindRun says so
				}
				pick = n
			}
		}
	}
	if pick == "" {
		return nil
	}
	if _, err := ReadState(w.StatePath(pick)); errors.Is(err, ErrDamagedState) {
		return err
	}
	return nil
}

// CurrentRun returns the id of the run in progress, or "".
func (w *Workspace) CurrentRun() string {
	b, err := os.ReadFile(w.currentFile())
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	st, err := ReadState(w.StatePath(id))
	if err != nil {
		return ""
	}
	w.settle(st)
	if st.Status != RunRunning {
		return ""
	}
	return id
}

// RequestStop asks a running run to stop gracefully by writing a stop
// file into its folder; the run polls for it.
func (w *Workspace) RequestStop(id string) error {
	st, err := ReadState(w.StatePath(id))
	if err != nil {
		return err
	}
	w.settle(st)
	if st.Status != RunRunning {
		return fmt.Errorf("run %s is not running (status %s)", id, st.Status)
	}
	return writeFileAtomic(filepath.Join(w.RunsDir(), id, "stop"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644, false)
}

// PruneRuns removes the records (state, logs, reports) of all but the
// newest keep runs. It never touches the cache, nor a run in progress.
func (w *Workspace) PruneRuns(keep int) ([]string, error) {
	runs, err := w.Runs()
	if err != nil {
		return nil, err
	}
	var removed []string
	for i := 0; i < len(runs)-keep; i++ {
		r := runs[i]
		if r.Status == RunRunning {
			continue
		}
		if err := os.RemoveAll(filepath.Join(w.RunsDir(), r.RunID)); err != nil {
			return removed, err
		}
		removed = append(removed, r.RunID)
	}
	return removed, nil
}

// RecordedSpend returns what a run spent: the larger of its recorded
// ledger and the sum of its phases' report files, which a run killed
// before its last state write still holds.
func (w *Workspace) RecordedSpend(st *RunState) Spend {
	total := st.Spent
	var fromReports Spend
	dir := filepath.Join(w.RunsDir(), st.RunID, "reports")
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		if data, err := os.ReadFile(filepath.Join(dir, ent.Name())); err == nil {
			fromReports = fromReports.Add(sumReport(data))
		}
	}
	if fromReports.Cost > total.Cost {
		total.Cost = fromReports.Cost
	}
	if fromReports.Iterations > total.Iterations {
		total.Iterations = fromReports.Iterations
	}
	return st.SpentBefore.Add(total)
}

// CheckoutResult counts what Checkout did.
type CheckoutResult struct {
	Restored  []string // phases whose outputs were restored
	UpToDate  int      // phases whose outputs were already in place
	NotCached []string // phases whose result is not in the cache
}

// Checkout restores into the workspace the outputs that the phases of
// run st produced or found cached, from cache c, without running
// anything. Outputs already in place are left alone.
func Checkout(ws Workspace, c *cache.Dir, st *RunState) (*CheckoutResult, error) {
	lock, err := ws.TryLock("checkout")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	e := &Engine{ws: ws, cache: c, now: time.Now}
	e.mem = LoadMemory(filepath.Join(ws.StateDir(), "digests"))
	res := &CheckoutResult{}
	addrs := make([]string, 0, len(st.Phases))
	for a := range st.Phases {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, addr := range addrs {
		ps := st.Phases[addr]
		switch ps.Status {
		case StatusSucceeded, StatusCached, StatusRestored:
		default:
			continue
		}
		key, err := cache.ParseActionID(ps.Key)
		if err != nil {
			continue
		}
		entry, err := c.GetEntry(key)
		if err != nil {
			res.NotCached = append(res.NotCached, addr)
			continue
		}
		if problem := treeProblem(entry); problem != "" {
			return res, fmt.Errorf("phase %s: cached result %s %s; refusing to restore it", addr, key.Short(), problem)
		}
		restored := false
		for _, o := range declaredOutputs(entry) {
			part := treeOf(entry.Outputs, o)
			if e.outputMatches(o, part) {
				continue
			}
			if err := e.restoreOutput(o, part, entry.Inline); err != nil {
				return res, fmt.Errorf("phase %s: %w", addr, err)
			}
			restored = true
		}
		if restored {
			res.Restored = append(res.Restored, addr)
		} else {
			res.UpToDate++
		}
	}
	if err := e.mem.Save(); err != nil {
		return res, err
	}
	return res, nil
}
