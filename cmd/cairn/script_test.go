package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cairn-run/cairn/internal/testkit"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"cairn": func() { os.Exit(Main()) },
		// A phase of the crash tests' generated experiment (crashdag_test.go).
		"cairn-testphase": testPhaseMain,
	})
}

func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		// -update (internal/testkit) also rewrites the cmp files
		// inside the scripts, as UPDATE_SCRIPTS=1 does.
		UpdateScripts: testkit.Updating() || os.Getenv("UPDATE_SCRIPTS") != "",
		Setup: func(e *testscript.Env) error {
			// Hermetic: each script has its own cache and no colour.
			e.Setenv("CAIRN_CACHE_DIR", filepath.Join(e.WorkDir, ".cache"))
			e.Setenv("NO_COLOR", "1")
			// The repository's Python module, for scripts whose phases
			// are Python (they pass_env PYTHONPATH).
			py, err := filepath.Abs(filepath.Join("..", "..", "python"))
			if err != nil {
				return err
			}
			e.Setenv("PYTHONPATH", py)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfor":   cmdWaitFor,
			"runstate":  cmdRunState,
			"waitstate": cmdWaitState,
			"census":    cmdCensus,
		},
	})
}

// cmdWaitFor waits until a file exists: waitfor FILE [TIMEOUT]. It is how
// scripts synchronise with a phase running in the background (the phase
// creates the file), never a fixed sleep.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: waitfor FILE [TIMEOUT]")
	}
	timeout := 60 * time.Second
	if len(args) > 1 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		timeout = d
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfor %s: not there after %s", args[0], timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
