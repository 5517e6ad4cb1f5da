package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cairn-run/cairn/internal/testkit"
)

// runStates returns the workspace's run records, oldest first, as generic
// JSON, so that scripts assert on state.json as users read it.
func runStates(ts *testscript.TestScript) []map[string]any {
	files, _ := filepath.Glob(ts.MkAbs(".cairn/runs/*/state.json"))
	type rec struct {
		started string
		v       map[string]any
	}
	var recs []rec
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var v map[string]any
		if json.Unmarshal(b, &v) != nil {
			continue
		}
		s, _ := v["started"].(string)
		recs = append(recs, rec{s + fmt.Sprint(v["run_id"]), v})
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].started < recs[j].started })
	out := make([]map[string]any, len(recs))
	for i, r := range recs {
		out[i] = r.v
	}
	return out
}

// lookupPath follows a dotted path (phases.a.status) through JSON values.
// A segment in brackets is taken whole, for addresses holding dots.
func lookupPath(v any, path string) (any, bool) {
	for _, seg := range splitPath(path) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return v, true
}

func splitPath(p string) []string {
	var segs []string
	for p != "" {
		if p[0] == '[' {
			// [ ... ] up to "]." or the end: the segment may hold brackets.
			end := strings.Index(p, "].")
			if end < 0 {
				end = len(p) - 1
			}
			segs = append(segs, p[1:end])
			p = strings.TrimPrefix(p[end+1:], ".")
			continue
		}
		i := strings.IndexAny(p, ".[")
		if i < 0 {
			segs = append(segs, p)
			break
		}
		segs = append(segs, p[:i])
		p = strings.TrimPrefix(p[i:], ".")
	}
	return segs
}

func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return "null"
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// cmdRunState asserts a value in a run's state.json:
//
//	runstate [-run N] PATH VALUE
//
// N counts runs from the latest (1, the default, is the latest); PATH is
// dotted (status, phases.a.status, spent.cost); VALUE "absent" asserts
// the path is missing.
func cmdRunState(ts *testscript.TestScript, neg bool, args []string) {
	n := 1
	if len(args) > 2 && args[0] == "-run" {
		var err error
		n, err = strconv.Atoi(args[1])
		ts.Check(err)
		args = args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: runstate [-run N] PATH VALUE")
	}
	runs := runStates(ts)
	if len(runs) < n {
		ts.Fatalf("runstate: %d runs recorded, want at least %d", len(runs), n)
	}
	v, ok := lookupPath(runs[len(runs)-n], args[0])
	got := "absent"
	if ok {
		got = render(v)
	}
	if (got == args[1]) == neg {
		if neg {
			ts.Fatalf("runstate %s: got %s, want anything else", args[0], got)
		}
		ts.Fatalf("runstate %s: got %s, want %s", args[0], got, args[1])
	}
}

// cmdWaitState waits until the latest run's state.json holds a value:
// waitstate PATH VALUE [TIMEOUT].
func cmdWaitState(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: waitstate PATH VALUE [TIMEOUT]")
	}
	timeout := 60 * time.Second
	if len(args) > 2 {
		d, err := time.ParseDuration(args[2])
		ts.Check(err)
		timeout = d
	}
	deadline := time.Now().Add(timeout)
	for {
		if runs := runStates(ts); len(runs) > 0 {
			if v, ok := lookupPath(runs[len(runs)-1], args[0]); ok && render(v) == args[1] {
				return
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitstate %s %s: not reached after %s", args[0], args[1], timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdCensus fails if any process still runs with this script's workspace
// as CAIRN_WORKSPACE: every phase process and its descendants carry it.
// Killed processes may linger as zombies for a moment; those are dead.
func cmdCensus(ts *testscript.TestScript, neg bool, args []string) {
	alive := testkit.Procs("CAIRN_WORKSPACE=" + ts.MkAbs("."))
	if (len(alive) == 0) == neg {
		if neg {
			ts.Fatalf("census: no phase process alive")
		}
		ts.Fatalf("census: phase processes still alive: %s", strings.Join(alive, ", "))
	}
}
