package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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
	runs, _, err := w.RunsAndDamaged()
	return runs, err
}

// RunsAndDamaged returns what Runs does and, in the same reading, the
// error of every record that is damaged (ErrDamagedState), which Runs
// skips. The records are read and decoded on every core: a workspace of
// 128 runs of 1,000 phases holds 16 MiB of them.
func (w *Workspace) RunsAndDamaged() ([]*RunState, []error, error) {
	names, err := w.runDirs()
	if err != nil || len(names) == 0 {
		return nil, nil, err
	}
	states := make([]*RunState, len(names))
	errs := make([]error, len(names))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(names)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(names) {
					return
				}
				states[i], errs[i] = ReadState(w.StatePath(names[i]))
			}
		})
	}
	wg.Wait()
	var out []*RunState
	var damaged []error
	for i, st := range states {
		if errs[i] != nil {
			if errors.Is(errs[i], ErrDamagedState) {
				damaged = append(damaged, errs[i])
			}
			continue
		}
		w.settle(st)
		out = append(out, st)
	}
	sortRuns(out)
	return out, damaged, nil
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
	if id == "" {
		var latest *RunState
		err := w.RunsNewestFirst(func(st *RunState) bool {
			latest = st
			return false
		})
		if err != nil {
			return nil, err
		}
		if latest == nil {
			return nil, ErrNoRuns
		}
		return latest, nil
	}
	// Only the records whose id id names are read: a workspace of
	// hundreds of runs of a large sweep holds hundreds of MiB of them.
	names, err := w.runDirs()
	if err != nil {
		return nil, err
	}
	var match []*RunState
	var ids []string
	for _, n := range names {
		if n != id && !strings.HasPrefix(n, id) {
			if _, err := os.Lstat(w.StatePath(n)); err == nil {
				ids = append(ids, n)
			}
			continue
		}
		st, err := ReadState(w.StatePath(n))
		if err != nil {
			continue
		}
		w.settle(st)
		if n == id {
			return st, nil
		}
		ids = append(ids, n)
		match = append(match, st)
	}
	if len(match) == 1 {
		return match[0], nil
	}
	if len(ids) == 0 {
		return nil, &UnknownRunError{ID: id}
	}
	return nil, &UnknownRunError{ID: id, Known: ids}
}

// runDirs returns the names of the run directories, sorted.
func (w *Workspace) runDirs() ([]string, error) {
	ents, err := os.ReadDir(w.RunsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ent := range ents {
		if ent.IsDir() {
			names = append(names, ent.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// runIDSecond is the length of a run id's start time to the second
// (YYYYMMDD-HHMMSS, UTC): ids sort by it.
const runIDSecond = len("20060102-150405")

// secondOf returns the start second of run id n, or false if n is not a
// run id cairn made.
func secondOf(n string) (string, bool) {
	if len(n) <= runIDSecond || n[runIDSecond] != '-' || n[8] != '-' {
		return "", false
	}
	for i := 0; i < runIDSecond; i++ {
		if c := n[i]; i != 8 && (c < '0' || c > '9') {
			return "", false
		}
	}
	return n[:runIDSecond], true
}

// RunsNewestFirst calls yield with the workspace's readable run records,
// newest first (the order of Runs, reversed), until yield returns false.
// It reads records only as it reaches them: a run id starts with its
// start second, so a group of ids of one second is read, ordered by start
// time, and yielded before an older one is opened. A workspace holding a
// directory whose name is no run id is read whole, as Runs does.
func (w *Workspace) RunsNewestFirst(yield func(*RunState) bool) error {
	names, err := w.runDirs()
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, ok := secondOf(n); !ok {
			runs, err := w.Runs()
			if err != nil {
				return err
			}
			for i := len(runs) - 1; i >= 0; i-- {
				if !yield(runs[i]) {
					return nil
				}
			}
			return nil
		}
	}
	for end := len(names); end > 0; {
		sec, _ := secondOf(names[end-1])
		start := end - 1
		for start > 0 && strings.HasPrefix(names[start-1], sec) {
			start--
		}
		var group []*RunState
		for _, n := range names[start:end] {
			st, err := ReadState(w.StatePath(n))
			if err != nil {
				continue
			}
			w.settle(st)
			group = append(group, st)
		}
		sortRuns(group)
		for i := len(group) - 1; i >= 0; i-- {
			if !yield(group[i]) {
				return nil
			}
		}
		end = start
	}
	return nil
}

// sortRuns sorts run records oldest first: by start time, then id.
func sortRuns(runs []*RunState) {
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].Started.Equal(runs[j].Started) {
			return runs[i].Started.Before(runs[j].Started)
		}
		return runs[i].RunID < runs[j].RunID
	})
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
			// A temporary output is not in the cache: the run removed
			// it once the phases reading it were done.
			if isTemporary(part) || e.outputMatches(o, part) {
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
