package slurm

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/executor/local"
	"github.com/cairn-run/cairn/spec"
)

// The executors of cmd/cairn, for specs loaded in these tests.
func init() {
	executor.Register(local.Plugin)
	executor.Register(Plugin)
}

func load(t *testing.T, name string, src []byte) (*spec.Spec, error) {
	t.Helper()
	s, diags := spec.NewParser().LoadBytes(name, src, t.TempDir(), spec.Options{})
	if diags.HasErrors() {
		return nil, diags
	}
	return s, nil
}

// The experiment's executor and slurm block are every phase's defaults; a
// phase's own settings win field by field.
func TestSlurmSettings(t *testing.T) {
	src := `
experiment "x" {
  executor = "slurm"
  slurm {
    partition = "cpu"
    mem       = "4g"
    account   = "lab"
  }
}

phase "inherits" {
  command = "true"
  budget {
    timeout = "90s"
  }
}

phase "overrides" {
  command = "true"
  slurm {
    partition  = "gpu"
    cpus       = 8
    gres       = "gpu:2"
    time       = "2-00:00:00"
    qos        = "long"
    extra_args = ["--constraint=a100"]
  }
}

phase "here" {
  command  = "true"
  executor = "local"
}
`
	s, err := load(t, "slurm.hcl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Executor string
		Slurm    Settings
	}
	want := map[string]got{
		"inherits":  {"slurm", Settings{Partition: "cpu", Mem: "4G", Account: "lab"}},
		"overrides": {"slurm", Settings{Partition: "gpu", CPUs: 8, Mem: "4G", Gres: "gpu:2", Time: 48 * time.Hour, Account: "lab", QoS: "long", ExtraArgs: []string{"--constraint=a100"}}},
		"here":      {"local", Settings{Partition: "cpu", Mem: "4G", Account: "lab"}},
	}
	for addr, w := range want {
		p := s.Phase(addr)
		st, err := settingsOf(p.ExecutorConfig["slurm"])
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(w, got{p.Executor, st}); d != "" {
			t.Errorf("%s (-want +got):\n%s", addr, d)
		}
	}
	// Without an executor anywhere, phases run locally.
	s, err = load(t, "plain.hcl", []byte(`phase "a" { command = "true" }`))
	if err != nil {
		t.Fatal(err)
	}
	if x := s.Phase("a").Executor; x != executor.Local {
		t.Errorf("default executor %q", x)
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30":         30 * time.Minute,
		"5:30":       5*time.Minute + 30*time.Second,
		"1:30:00":    90 * time.Minute,
		"2-00":       48 * time.Hour,
		"1-12:30":    36*time.Hour + 30*time.Minute,
		"1-00:00:10": 24*time.Hour + 10*time.Second,
	} {
		got, ok := ParseTime(in)
		if !ok || got != want {
			t.Errorf("ParseTime(%q) = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "0", "1h", "a:b", "1-", ":30"} {
		if d, ok := ParseTime(in); ok {
			t.Errorf("ParseTime(%q) = %s, want an error", in, d)
		}
	}
	for d, want := range map[time.Duration]string{time.Second: "1", time.Minute: "1", 61 * time.Second: "2", 2 * time.Hour: "120"} {
		if got := Minutes(d); got != want {
			t.Errorf("Minutes(%s) = %s, want %s", d, got, want)
		}
	}
}

// TestBlockDiagnostics: the diagnostics of slurm blocks and executor
// attributes, positions and words, are those spec gave when it decoded
// slurm blocks itself (testdata/diagnostics.golden holds them).
func TestBlockDiagnostics(t *testing.T) {
	golden, err := os.ReadFile("testdata/diagnostics.golden")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, name := range []string{"bad_slurm.hcl", "bad_values.hcl", "bad_block.hcl"} {
		src, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		_, diags := spec.NewParser().LoadBytes(name, src, t.TempDir(), spec.Options{})
		for _, d := range diags {
			fmt.Fprintf(&got, "%s: %s: %s\n", d.Subject, d.Summary, d.Detail)
		}
	}
	if d := cmp.Diff(string(golden), got.String()); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
