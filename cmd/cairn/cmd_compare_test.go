package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/runrec"
)

func TestCompareNeedsTwoRuns(t *testing.T) {
	dir := t.TempDir()
	g := &globals{File: filepath.Join(dir, "experiment.hcl")}
	err := runCompare(g, compareOptions{}, nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "cairn compare needs two runs, and this workspace has 0 runs") {
		t.Errorf("error %v", err)
	}
	err = runCompare(g, compareOptions{}, []string{"20250101"}, &bytes.Buffer{})
	var unknown *runrec.UnknownRunError
	if err == nil || !errors.As(err, &unknown) {
		t.Errorf("unknown run: error %v", err)
	}
}
