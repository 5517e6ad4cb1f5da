package spec

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/cairn-run/cairn/internal/testkit"
)

const testDir = "/workspace"

func load(t *testing.T, name string, src []byte, opts Options) (*Spec, hcl.Diagnostics) {
	t.Helper()
	return NewParser().LoadBytes(name, src, testDir, opts)
}

// TestValid: every file in testdata/valid decodes with no diagnostics.
func TestValid(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.hcl")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s, diags := load(t, f, src, Options{})
			if len(diags) > 0 {
				t.Fatalf("unexpected diagnostics:\n%s", diags.Error())
			}
			if s == nil {
				t.Fatal("nil spec")
			}
		})
	}
}

var errorMarker = regexp.MustCompile(`# ERROR: (.+)$`)

// TestInvalid: each file in testdata/invalid carries "# ERROR: summary"
// on the line where each diagnostic must point.
func TestInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.hcl")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			sc := bufio.NewScanner(strings.NewReader(string(src)))
			for line := 1; sc.Scan(); line++ {
				if m := errorMarker.FindStringSubmatch(sc.Text()); m != nil {
					want = append(want, lineSummary(line, m[1]))
				}
			}
			_, diags := load(t, f, src, Options{})
			var got []string
			for _, d := range diags {
				if d.Severity != hcl.DiagError {
					continue
				}
				line := 0
				if d.Subject != nil {
					line = d.Subject.Start.Line
				}
				got = append(got, lineSummary(line, d.Summary))
			}
			sort.Strings(want)
			sort.Strings(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("diagnostics mismatch (-want +got):\n%s\nall:\n%s", diff, diags.Error())
			}
		})
	}
}

func lineSummary(line int, summary string) string {
	return strings.TrimSpace(summary) + " @" + itoa(line)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// decodeView is the JSON shape of a decoded spec in golden files.
type decodeView struct {
	Experiment Experiment        `json:"experiment"`
	Variables  map[string]string `json:"variables"`
	Pools      map[string]*Pool  `json:"pools,omitempty"`
	Phases     []phaseView       `json:"phases"`
	Edges      [][2]string       `json:"edges"`
}

type phaseView struct {
	Addr      string              `json:"addr"`
	Command   []string            `json:"command"`
	Shell     bool                `json:"shell,omitempty"`
	Inputs    []string            `json:"inputs,omitempty"`
	Outputs   []Output            `json:"outputs,omitempty"`
	Params    map[string]string   `json:"params,omitempty"`
	Metrics   []string            `json:"metrics,omitempty"`
	Env       map[string]string   `json:"env,omitempty"`
	SecretEnv []string            `json:"secret_env,omitempty"`
	PassEnv   []string            `json:"pass_env,omitempty"`
	Workdir   string              `json:"workdir"`
	Cache     bool                `json:"cache"`
	NoPipe    bool                `json:"no_pipefail,omitempty"`
	Upstream  map[string][]string `json:"upstream,omitempty"`
	Budget    Budget              `json:"budget,omitzero"`
	Resources map[string]int      `json:"resources,omitempty"`
}

func view(s *Spec) decodeView {
	v := decodeView{Experiment: s.Experiment, Variables: s.Variables, Pools: s.Pools, Edges: s.Graph.Edges()}
	for _, p := range s.Phases {
		v.Phases = append(v.Phases, phaseView{
			Addr: p.Addr, Command: p.Command, Shell: p.Shell, Inputs: p.Inputs, Outputs: p.Outputs,
			Params: p.Params, Metrics: p.Metrics, Env: p.Env, SecretEnv: p.SecretEnv, PassEnv: p.PassEnv,
			Workdir: p.Workdir, Cache: p.Cache, NoPipe: p.NoPipefail, Upstream: p.Upstream,
			Budget: p.Budget, Resources: p.Resources,
		})
	}
	return v
}

// TestDecodeGolden: testdata/decode/*.txtar hold a spec.hcl (and optional
// vars.txt lines NAME=VALUE) and the decoded model as want.json.
func TestDecodeGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/decode/*.txtar")
	if len(files) == 0 {
		t.Fatal("no decode goldens")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ar, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var src []byte
			var opts Options
			wantIdx := -1
			for i, file := range ar.Files {
				switch file.Name {
				case "spec.hcl":
					src = file.Data
				case "vars.txt":
					for _, l := range strings.Split(strings.TrimSpace(string(file.Data)), "\n") {
						n, v, _ := strings.Cut(l, "=")
						opts.Vars = append(opts.Vars, VarValue{Name: n, Value: v})
					}
				case "want.json":
					wantIdx = i
				}
			}
			s, diags := load(t, "spec.hcl", src, opts)
			if diags.HasErrors() {
				t.Fatalf("diagnostics:\n%s", diags.Error())
			}
			got, err := json.MarshalIndent(view(s), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			if testkit.Updating() {
				if wantIdx < 0 {
					ar.Files = append(ar.Files, txtar.File{Name: "want.json"})
					wantIdx = len(ar.Files) - 1
				}
				ar.Files[wantIdx].Data = got
				if err := os.WriteFile(f, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if wantIdx < 0 {
				t.Fatal("no want.json; run with -update")
			}
			if diff := cmp.Diff(string(ar.Files[wantIdx].Data), string(got)); diff != "" {
				t.Errorf("decoded model mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVariablePrecedence(t *testing.T) {
	src := []byte(`
variable "model" {
  default = "from-default"
}
variable "rounds" {
  type    = number
  default = 1
}
phase "a" {
  command = "echo ${var.model} ${var.rounds}"
}
`)
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	tests := map[string]struct {
		opts Options
		want string
	}{
		"default": {Options{}, "echo from-default 1"},
		"env":     {Options{LookupEnv: env(map[string]string{"CAIRN_VAR_model": "from-env", "CAIRN_VAR_rounds": "7"})}, "echo from-env 7"},
		"cli beats env": {Options{
			Vars:      []VarValue{{Name: "model", Value: "from-cli"}, {Name: "rounds", Value: "3"}},
			LookupEnv: env(map[string]string{"CAIRN_VAR_model": "from-env"}),
		}, "echo from-cli 3"},
		"last -var wins": {Options{Vars: []VarValue{{Name: "model", Value: "one"}, {Name: "model", Value: "two"}}}, "echo two 1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, diags := load(t, "p.hcl", src, tc.opts)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			if got := s.Phase("a").Command[2]; got != tc.want {
				t.Errorf("command = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVarErrors(t *testing.T) {
	src := []byte(`
variable "rounds" {
  type = number
  validation {
    condition     = var.rounds < 100
    error_message = "Keep rounds under 100: each costs money."
  }
}
phase "a" {
  command = "echo ${var.rounds}"
}
`)
	tests := map[string]struct {
		vars []VarValue
		want string
	}{
		"undeclared": {[]VarValue{{Name: "rounds", Value: "1"}, {Name: "round", Value: "1"}}, `Did you mean "rounds"?`},
		"bad number": {[]VarValue{{Name: "rounds", Value: "many"}}, "Invalid value for variable"},
		"missing":    {nil, "-var rounds=VALUE"},
		"validation": {[]VarValue{{Name: "rounds", Value: "500"}}, "Keep rounds under 100: each costs money.\n\nVariable \"rounds\" failed this validation rule with the value from -var rounds."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, diags := load(t, "p.hcl", src, Options{Vars: tc.vars})
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
				t.Errorf("diagnostics %q do not mention %q", diags.Error(), tc.want)
			}
		})
	}
}

func TestFileEdges(t *testing.T) {
	src := []byte(`
phase "gen" {
  command = "true"
  outputs = { a = "data/a.txt", dir = "models" }
}
phase "literal" {
  command = "true"
  inputs  = ["data/a.txt"]
}
phase "parent" {
  command = "true"
  inputs  = ["data"]
}
phase "inside" {
  command = "true"
  inputs  = ["models/best.bin"]
}
phase "glob" {
  command = "true"
  inputs  = ["data/*.txt"]
}
phase "unrelated" {
  command = "true"
  inputs  = ["src/"]
}
`)
	s, diags := load(t, "p.hcl", src, Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	want := [][2]string{{"gen", "glob"}, {"gen", "inside"}, {"gen", "literal"}, {"gen", "parent"}}
	if diff := cmp.Diff(want, s.Graph.Edges()); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"gen": {"models"}}, s.Phase("inside").Upstream); diff != "" {
		t.Errorf("upstream of inside (-want +got):\n%s", diff)
	}
}
