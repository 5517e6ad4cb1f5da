package cache

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/internal/fsx/fsxtest"
)

// scratchDir returns a temp dir on a memory file system if there is one
// (/dev/shm), where the thousands of small files and fsyncs of a crash
// state walk cost nothing, else on the ordinary temp dir.
func scratchDir(t *testing.T) string {
	if d, err := os.MkdirTemp("/dev/shm", "cairn-crash-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return t.TempDir()
}

// powerLossRun publishes one blob, one entry referencing it and a state
// file update through a Recorder (wrapped by wrap, for negative controls)
// and returns the recorder, with marks after each acknowledgement.
type powerLossRun struct {
	root, cacheRoot, statePath string
	oldState, newState         []byte
	blob                       []byte
	d                          Digest
	key, key2                  ActionID // key2: the second entry of a packed run
	rec                        *fsxtest.Recorder
}

// recordPublish records the protocol with entries in a pack (packed) or
// each in a file of its own. A packed run stores a second entry in the
// same pack after the first is acknowledged, so a crash state can lose
// or garble the second record's unsynced append while the first entry
// must stay readable, and then closes the cache (the pack's temp name
// goes).
func recordPublish(t *testing.T, wrap func(fsx.FS) fsx.FS, packed bool) *powerLossRun {
	t.Helper()
	r := &powerLossRun{root: t.TempDir()}
	r.cacheRoot = filepath.Join(r.root, "cache")
	r.statePath = filepath.Join(r.root, "ws", ".cairn", "runs", "r1", "state.json")
	r.oldState = []byte(`{"status": "running", "phases": {"p": {"status": "running"}}}` + "\n")
	r.newState = []byte(`{"status": "running", "phases": {"p": {"status": "succeeded"}}}` + "\n")
	r.blob = []byte(strings.Repeat("self-validating output line\n", 40))
	c, err := Open(r.cacheRoot)
	if err != nil {
		t.Fatal(err)
	}
	if !packed {
		noPack(c)
	}
	if err := os.MkdirAll(filepath.Dir(r.statePath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.statePath, r.oldState, 0o600); err != nil {
		t.Fatal(err)
	}
	r.rec = &fsxtest.Recorder{Base: fsx.OS{}, Root: r.root}
	if err := r.rec.Start(); err != nil {
		t.Fatal(err)
	}
	var layer fsx.FS = r.rec
	if wrap != nil {
		layer = wrap(r.rec)
	}
	restore := fsx.Set(layer)
	defer restore()

	if r.d, err = c.PutBytes(r.blob); err != nil {
		t.Fatal(err)
	}
	r.rec.Mark("blob")
	e := testEntry("power loss", r.d)
	e.Outputs[0].Size = int64(len(r.blob))
	r.key = e.Key
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	r.rec.Mark("entry")
	if packed {
		e2 := testEntry("power loss 2", r.d)
		e2.Outputs[0].Size = int64(len(r.blob))
		r.key2 = e2.Key
		if err := c.PutEntry(e2); err != nil {
			t.Fatal(err)
		}
		r.rec.Mark("entry2")
		c.Close()
	}
	if err := fsx.WriteFileAtomic(r.statePath, r.newState, 0o600, "state", true, true); err != nil {
		t.Fatal(err)
	}
	r.rec.Mark("state")
	return r
}

// check materialises every crash state of the recorded protocol and
// returns the violations found: an acknowledged object missing or bad, a
// visible object that is not valid, an entry whose blob is missing, a
// state file that is neither the old nor the new content.
func (r *powerLossRun) check(t *testing.T, limit int) (states int, violations []string) {
	t.Helper()
	scratch := scratchDir(t)
	n := 0
	states, err := r.rec.CrashStates(limit, 1, func(cs fsxtest.CrashState) error {
		n++
		dst := filepath.Join(scratch, fmt.Sprint(n))
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		defer os.RemoveAll(dst)
		if err := cs.WriteTo(dst); err != nil {
			return err
		}
		if v := r.checkState(dst, cs); v != "" {
			violations = append(violations, fmt.Sprintf("after %d ops (%s): %s", cs.Prefix, cs.Choice, v))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return states, violations
}

func (r *powerLossRun) checkState(dst string, cs fsxtest.CrashState) string {
	acked := map[string]bool{}
	for _, a := range cs.Acked {
		acked[a] = true
	}
	var bad []string
	rel := func(p string) string { s, _ := filepath.Rel(r.root, p); return filepath.Join(dst, s) }
	c, err := Open(rel(r.cacheRoot))
	if err != nil {
		return "open: " + err.Error()
	}
	rep, err := c.Verify(VerifyOptions{})
	if err != nil {
		return "verify: " + err.Error()
	}
	for _, p := range rep.Problems {
		bad = append(bad, fmt.Sprintf("verify: %s %s %s: %s", p.Class, p.Kind, p.ID, p.Cause))
	}
	if acked["blob"] {
		if b, err := c.ReadBlob(r.d); err != nil || !bytes.Equal(b, r.blob) {
			bad = append(bad, fmt.Sprintf("acknowledged blob: %v", err))
		}
	}
	if acked["entry"] {
		if _, err := c.GetLocalEntry(r.key); err != nil {
			bad = append(bad, fmt.Sprintf("acknowledged entry: %v", err))
		}
	}
	if acked["entry2"] {
		if _, err := c.GetLocalEntry(r.key2); err != nil {
			bad = append(bad, fmt.Sprintf("acknowledged second entry: %v", err))
		}
	}
	st, err := os.ReadFile(rel(r.statePath))
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		bad = append(bad, "state: "+err.Error())
	case err != nil:
		bad = append(bad, "state.json is gone")
	case acked["state"] && !bytes.Equal(st, r.newState):
		bad = append(bad, fmt.Sprintf("acknowledged state update lost: state.json holds %q", st))
	case !bytes.Equal(st, r.newState) && !bytes.Equal(st, r.oldState):
		bad = append(bad, fmt.Sprintf("state.json holds %q: neither the old nor the new state", st))
	}
	return strings.Join(bad, "; ")
}

// TestPowerLoss is RELIABILITY.md T4: the write protocol of one blob, one
// entry and a state update, replayed under every crash state of a
// pessimistic power-loss model (fsxtest.Recorder.CrashStates), leaves
// every acknowledged object intact, every visible object valid and every
// state file parseable. Removing any one fsync or directory fsync from the
// protocol must make the checker find a violation (negative controls). It
// runs twice: with entries as files of their own, and packed (two entries
// appended to one pack, each published as a link to it).
func TestPowerLoss(t *testing.T) {
	for _, packed := range []bool{false, true} {
		name := "file"
		if packed {
			name = "packed"
		}
		t.Run(name, func(t *testing.T) { testPowerLoss(t, packed) })
	}
}

func testPowerLoss(t *testing.T, packed bool) {
	began := time.Now()
	limit := 64
	if longTier() {
		limit = 1024
	}
	r := recordPublish(t, nil, packed)
	log := r.rec.Log()
	// Ops per object that decide durability: fsyncs, directory fsyncs,
	// and the link or rename that publishes.
	perObject := map[string]int{}
	next := map[string]string{"blob": "entry", "entry": "state", "state": "-"}
	if packed {
		next = map[string]string{"blob": "entry", "entry": "entry2", "entry2": "state", "state": "-"}
	}
	// The directory fsync after creating a shard directory is paid once
	// per shard (256 of them), not per object: counted apart.
	obj := "blob"
	var ops []string
	shardSyncs := 0
	for i, e := range log {
		switch e.Kind {
		case "mark":
			obj = next[e.Label]
		case "syncdir":
			if i > 0 && log[i-1].Kind == "mkdir" {
				shardSyncs++
				break
			}
			perObject[obj]++
		case "sync", "link", "rename":
			perObject[obj]++
		}
		ops = append(ops, e.Kind)
	}
	for o, n := range perObject {
		if n > 3 {
			t.Errorf("%s: %d fsync-relevant operations, want at most 3", o, n)
		}
	}
	t.Logf("protocol: %s", strings.Join(ops, " "))
	states, violations := r.check(t, limit)
	for _, v := range violations[:min(len(violations), 10)] {
		t.Errorf("violation %s", v)
	}

	// Negative controls: the same protocol with one durability step
	// skipped (the call reports success without reaching the recorder).
	sep := string(filepath.Separator)
	entryFsync := struct {
		name  string
		op    fsxtest.Op
		match string
	}{"entry fsync", fsxtest.OpSync, sep + "entry-"}
	if packed {
		entryFsync.name, entryFsync.match = "pack fsync", sep+"pack-"
	}
	controls := []struct {
		name  string
		op    fsxtest.Op
		match string
	}{
		{"blob fsync", fsxtest.OpSync, sep + "blob-"},
		entryFsync,
		{"shard dir fsync", fsxtest.OpSyncDir, sep + "cas" + sep},
		{"entry shard dir fsync", fsxtest.OpSyncDir, sep + "ac" + sep},
		{"state fsync", fsxtest.OpSync, ".state.json.tmp-"},
		{"state dir fsync", fsxtest.OpSyncDir, "r1"},
	}
	caught := 0
	for _, ctl := range controls {
		nr := recordPublish(t, func(base fsx.FS) fsx.FS {
			return &fsxtest.Fault{Base: base, Op: ctl.op, Match: ctl.match, Drop: true}
		}, packed)
		_, v := nr.check(t, limit/4)
		if len(v) == 0 {
			t.Errorf("negative control %q: the checker found no violation without that step", ctl.name)
			continue
		}
		caught++
		t.Logf("negative control %q: %d violations, e.g. %s", ctl.name, len(v), v[0])
	}
	t.Logf("FIGURE T4 protocol=%s ops=%d fsync_relevant_blob=%d fsync_relevant_entry=%d fsync_relevant_entry2=%d fsync_relevant_state=%d shard_dir_syncs=%d crash_states=%d violations=%d negative_controls=%d/%d negative_control_fails=%v wall=%.1fs",
		map[bool]string{false: "file", true: "packed"}[packed], len(log), perObject["blob"], perObject["entry"], perObject["entry2"], perObject["state"], shardSyncs, states, len(violations), caught, len(controls), caught == len(controls), time.Since(began).Seconds())
}
