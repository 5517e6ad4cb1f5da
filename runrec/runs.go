package runrec

import (
	"crypto/rand"
	"encoding/hex"
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
	"time"

	"github.com/cairn-run/cairn/internal/proc"
)

// Dir is a workspace's directory of run records, .cairn/runs: one
// directory per run, named by its id, holding its state.json, logs and
// reports.
type Dir string

// StatePath returns the state.json path of a run.
func (d Dir) StatePath(runID string) string {
	return filepath.Join(string(d), runID, "state.json")
}

// NewID returns a sortable, unique run id: UTC time plus random bits.
func NewID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// ErrNoRuns is returned when a workspace has no run records.
var ErrNoRuns = errors.New("no runs recorded in this workspace yet")

// HeartbeatInterval is how often a running run's record is rewritten
// with a new heartbeat, whatever else changed.
const HeartbeatInterval = 5 * time.Second

// heartbeatStale is how old a running run's heartbeat may get before the
// run counts as interrupted.
const heartbeatStale = 6 * HeartbeatInterval

// Runs returns the workspace's run records, oldest first. Records that
// cannot be read are skipped.
func (d Dir) Runs() ([]*RunState, error) {
	runs, _, err := d.RunsAndDamaged()
	return runs, err
}

// RunsAndDamaged returns what Runs does and, in the same reading, the
// error of every record that is damaged (ErrDamagedState), which Runs
// skips. The records are read and decoded on every core: a workspace of
// 128 runs of 1,000 phases holds 16 MiB of them.
func (d Dir) RunsAndDamaged() ([]*RunState, []error, error) {
	names, err := d.runDirs()
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
				states[i], errs[i] = ReadState(d.StatePath(names[i]))
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
		Settle(st)
		out = append(out, st)
	}
	sortRuns(out)
	return out, damaged, nil
}

// Settle marks a run recorded as running as interrupted when its process
// is gone: its pid is dead (on this host), or its heartbeat is stale.
func Settle(st *RunState) {
	if st.Status != RunRunning {
		return
	}
	host, _ := os.Hostname()
	gone := time.Since(st.Heartbeat) > heartbeatStale
	if st.Host == host && !proc.Alive(st.PID) {
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
func (d Dir) FindRun(id string) (*RunState, error) {
	if err := d.damagedRecord(id); err != nil {
		return nil, err
	}
	if id == "" {
		var latest *RunState
		err := d.RunsNewestFirst(func(st *RunState) bool {
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
	names, err := d.runDirs()
	if err != nil {
		return nil, err
	}
	var match []*RunState
	var ids []string
	for _, n := range names {
		if n != id && !strings.HasPrefix(n, id) {
			if _, err := os.Lstat(d.StatePath(n)); err == nil {
				ids = append(ids, n)
			}
			continue
		}
		st, err := ReadState(d.StatePath(n))
		if err != nil {
			continue
		}
		Settle(st)
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
func (d Dir) runDirs() ([]string, error) {
	ents, err := os.ReadDir(string(d))
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
func (d Dir) RunsNewestFirst(yield func(*RunState) bool) error {
	names, err := d.runDirs()
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, ok := secondOf(n); !ok {
			runs, err := d.Runs()
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
			st, err := ReadState(d.StatePath(n))
			if err != nil {
				continue
			}
			Settle(st)
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
func (d Dir) damagedRecord(id string) error {
	ents, err := os.ReadDir(string(d))
	if err != nil {
		return nil
	}
	var names []string
	for _, ent := range ents {
		if ent.IsDir() {
			if _, err := os.Lstat(d.StatePath(ent.Name())); err == nil {
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
	if _, err := ReadState(d.StatePath(pick)); errors.Is(err, ErrDamagedState) {
		return err
	}
	return nil
}

// Prune removes the records (state, logs, reports) of all but the
// newest keep runs. It never touches the cache, nor a run in progress.
func (d Dir) Prune(keep int) ([]string, error) {
	runs, err := d.Runs()
	if err != nil {
		return nil, err
	}
	var removed []string
	for i := 0; i < len(runs)-keep; i++ {
		r := runs[i]
		if r.Status == RunRunning {
			continue
		}
		if err := os.RemoveAll(filepath.Join(string(d), r.RunID)); err != nil {
			return removed, err
		}
		removed = append(removed, r.RunID)
	}
	return removed, nil
}

// RecordedSpend returns what a run spent: the larger of its recorded
// ledger and the sum of its phases' report files, which a run killed
// before its last state write still holds.
func (d Dir) RecordedSpend(st *RunState) Spend {
	total := st.Spent
	var fromReports Spend
	dir := filepath.Join(string(d), st.RunID, "reports")
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		if data, err := os.ReadFile(filepath.Join(dir, ent.Name())); err == nil {
			fromReports = fromReports.Add(SumReport(data))
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
