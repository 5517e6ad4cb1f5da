package spec

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
	s, diags := load(t, "slurm.hcl", []byte(src), Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	type got struct {
		Executor string
		Slurm    Slurm
	}
	want := map[string]got{
		"inherits":  {"slurm", Slurm{Partition: "cpu", Mem: "4G", Account: "lab"}},
		"overrides": {"slurm", Slurm{Partition: "gpu", CPUs: 8, Mem: "4G", Gres: "gpu:2", Time: 48 * time.Hour, Account: "lab", QoS: "long", ExtraArgs: []string{"--constraint=a100"}}},
		"here":      {"local", Slurm{Partition: "cpu", Mem: "4G", Account: "lab"}},
	}
	for addr, w := range want {
		p := s.Phase(addr)
		if d := cmp.Diff(w, got{p.Executor, p.Slurm}); d != "" {
			t.Errorf("%s (-want +got):\n%s", addr, d)
		}
	}
	// Without an executor anywhere, phases run locally.
	s, diags = load(t, "plain.hcl", []byte(`phase "a" { command = "true" }`), Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if x := s.Phase("a").Executor; x != ExecutorLocal {
		t.Errorf("default executor %q", x)
	}
}

func TestParseSlurmTime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30":         30 * time.Minute,
		"5:30":       5*time.Minute + 30*time.Second,
		"1:30:00":    90 * time.Minute,
		"2-00":       48 * time.Hour,
		"1-12:30":    36*time.Hour + 30*time.Minute,
		"1-00:00:10": 24*time.Hour + 10*time.Second,
	} {
		got, ok := ParseSlurmTime(in)
		if !ok || got != want {
			t.Errorf("ParseSlurmTime(%q) = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "0", "1h", "a:b", "1-", ":30"} {
		if d, ok := ParseSlurmTime(in); ok {
			t.Errorf("ParseSlurmTime(%q) = %s, want an error", in, d)
		}
	}
	for d, want := range map[time.Duration]string{time.Second: "1", time.Minute: "1", 61 * time.Second: "2", 2 * time.Hour: "120"} {
		if got := SlurmMinutes(d); got != want {
			t.Errorf("SlurmMinutes(%s) = %s, want %s", d, got, want)
		}
	}
}
