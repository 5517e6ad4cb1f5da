package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

// compact returns raw JSON without its layout (state.json is indented).
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// eventLog records warnings.
type eventLog struct {
	mu       sync.Mutex
	warnings []string
}

func (l *eventLog) Report(ev Event) {
	if ev.Kind != EventWarning {
		return
	}
	l.mu.Lock()
	l.warnings = append(l.warnings, ev.Message)
	l.mu.Unlock()
}

func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.warnings
	l.warnings = nil
	return w
}

const metricsSpec = `
variable "lr" {
  default = 0.1
}
variable "token" {
  default   = "s3cret"
  sensitive = true
}
phase "train" {
  for_each = toset(["m1"])
  command  = "write out-${each.key}.json {\"acc\":0.5,\"loss\":{\"train\":0.25}}; write bad.json [1,2]; write model.bin x"
  outputs  = { scores = "out-${each.key}.json", bad = "bad.json", model = "model.bin" }
  params   = { lr = var.lr, model = each.key, auth = "Bearer ${var.token}" }
  metrics  = ["scores", "bad.json"]
}
`

// TestMetricsRecorded: a phase's metrics go into its cache entry and its
// record in state.json; a cached or restored phase gets them from the
// entry; a bad file is a warning, not a failure.
func TestMetricsRecorded(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": metricsSpec})
	log := &eventLog{}
	run := func() (*RunResult, *runrec.PhaseState) {
		t.Helper()
		sp, diags := spec.NewParser().LoadFile(filepath.Join(s.dir, "experiment.hcl"), spec.Options{})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		res, err := New(sp, tiered(s.cache), Config{Executor: s.exec, Reporter: log}).Run(t.Context(), RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ws := workspace.Workspace{Root: s.dir}
		st, err := runrec.ReadState(ws.Records().StatePath(res.RunID))
		if err != nil {
			t.Fatal(err)
		}
		return res, st.Phases[`train["m1"]`]
	}
	const wantMetrics = `{"out-m1.json":{"acc":0.5,"loss":{"train":0.25}}}`
	wantParams := map[string]json.RawMessage{"lr": json.RawMessage(`0.1`), "model": json.RawMessage(`"m1"`), "auth": json.RawMessage(`"(sensitive)"`)}

	res, ps := run()
	if ps.Status != runrec.StatusSucceeded {
		t.Fatalf("first run: status %s (%v)", ps.Status, res.Failures)
	}
	if compact(ps.Metrics) != wantMetrics {
		t.Errorf("first run: metrics %s, want %s", ps.Metrics, wantMetrics)
	}
	if diff := cmp.Diff(wantParams, ps.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	w := log.take()
	if len(w) != 1 || !strings.Contains(w[0], `phase train["m1"]: metrics file bad.json not recorded: holds a JSON array`) {
		t.Errorf("warnings = %q, want one about bad.json", w)
	}
	key, err := cache.ParseActionID(ps.Key)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := s.cache.GetEntry(key)
	if err != nil {
		t.Fatal(err)
	}
	if string(entry.Metrics) != wantMetrics {
		t.Errorf("cache entry metrics %s, want %s", entry.Metrics, wantMetrics)
	}

	// Cached: the entry lacks bad.json, so the files are read again (and
	// the bad one warned about again); the good one is still recorded.
	_, ps = run()
	if ps.Status != runrec.StatusCached || compact(ps.Metrics) != wantMetrics {
		t.Errorf("cached run: status %s, metrics %s; want cached, %s", ps.Status, ps.Metrics, wantMetrics)
	}
	if w := log.take(); len(w) != 1 {
		t.Errorf("cached run warnings = %q, want the one about bad.json", w)
	}
	if s.exec.count(`train["m1"]`) != 1 {
		t.Errorf("command ran %d times, want 1", s.exec.count(`train["m1"]`))
	}
}

// TestMetricsFromEntry: when every metrics file is in the entry, a cached
// or restored phase's metrics are the entry's, whatever the workspace
// holds; an entry made before the spec named a file is completed from the
// workspace.
func TestMetricsFromEntry(t *testing.T) {
	const base = `
phase "eval" {
  command = "write e.json {\"acc\":0.75}; write f.json {\"f1\":0.5}"
  outputs = ["e.json", "f.json"]
`
	s := newSetup(t, map[string]string{"experiment.hcl": base + "}\n"})
	st := func() *runrec.PhaseState {
		t.Helper()
		res := s.run(t, RunOptions{})
		ws := workspace.Workspace{Root: s.dir}
		rs, err := runrec.ReadState(ws.Records().StatePath(res.RunID))
		if err != nil {
			t.Fatal(err)
		}
		return rs.Phases["eval"]
	}
	if ps := st(); ps.Status != runrec.StatusSucceeded || ps.Metrics != nil {
		t.Fatalf("no metrics attribute: status %s, metrics %s", ps.Status, ps.Metrics)
	}
	// The spec now names e.json: the entry has no metrics, so they come
	// from the workspace.
	if err := os.WriteFile(filepath.Join(s.dir, "experiment.hcl"), []byte(base+"  metrics = [\"e.json\"]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ps := st(); ps.Status != runrec.StatusCached || compact(ps.Metrics) != `{"e.json":{"acc":0.75}}` {
		t.Errorf("metrics added later: status %s, metrics %s", ps.Status, ps.Metrics)
	}
	// A run that records both files in the entry.
	if err := os.WriteFile(filepath.Join(s.dir, "experiment.hcl"), []byte(base+"  metrics = [\"e.json\", \"f.json\"]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := s.run(t, RunOptions{Request: runrec.Request{Gates: runrec.Gates{Force: []string{"eval"}}}})
	if res.Counts[runrec.StatusSucceeded] != 1 {
		t.Fatalf("forced run counts %v", res.Counts)
	}
	// Restored: the outputs are gone, the metrics come from the entry,
	// narrowed to the files the spec names now.
	if err := os.WriteFile(filepath.Join(s.dir, "experiment.hcl"), []byte(base+"  metrics = [\"f.json\"]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"e.json", "f.json"} {
		if err := os.Remove(filepath.Join(s.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if ps := st(); ps.Status != runrec.StatusRestored || compact(ps.Metrics) != `{"f.json":{"f1":0.5}}` {
		t.Errorf("restored: status %s, metrics %s", ps.Status, ps.Metrics)
	}
}
