package engine

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// -update-keys rewrites testdata/keys.golden; do it only for an intended
// change of the key format (and bump cache.KeyFormat if old keys could
// collide with new ones).
var updateKeys = flag.Bool("update-keys", false, "rewrite testdata/keys.golden")

const stableSpec = `
variable "lr" {
  default = 0.01
}
phase "prep" {
  command = "write data.txt prepared"
  inputs  = ["raw.csv", "tool.sh"]
  outputs = ["data.txt"]
  env     = { MODE = "fast" }
}
phase "train" {
  command    = "cp ${phase.prep.outputs[0]} model.txt"
  outputs    = ["model.txt"]
  params     = { lr = var.lr, layers = [1, 2] }
  secret_env = ["API_KEY"]
  pass_env   = ["LANG"]
  budget {
    max_cost       = 2.5
    max_iterations = 10
    timeout        = "1m"
    retries        = 1
  }
}
phase "eval" {
  for_each   = toset(["a", "b"])
  command    = "write eval-${each.key}.txt ${each.key}"
  outputs    = ["eval-${each.key}.txt"]
  depends_on = [phase.train]
}
`

var stableFiles = map[string]string{
	"experiment.hcl": stableSpec,
	"raw.csv":        "x,y\n1,2\n",
	"tool.sh":        "#!/bin/sh\necho tool\n",
}

// keysOf writes files into dir (a workspace at that path), runs the spec
// with a fresh cache and returns every phase's key from state.json.
func keysOf(t *testing.T, dir string, files map[string]string, vars ...spec.VarValue) map[string]string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	s := &setup{dir: dir, cache: c, exec: &fakeExec{}}
	res := s.run(t, RunOptions{}, vars...)
	st, err := runrec.ReadState(filepath.Join(dir, ".cairn", "runs", res.RunID, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for addr, ps := range st.Phases {
		keys[addr] = ps.Key
	}
	return keys
}

func goldenKeys(keys map[string]string) string {
	var lines []string
	for addr, k := range keys {
		lines = append(lines, addr+" "+k)
	}
	slices.Sort(lines)
	return fmt.Sprintf("# phase keys of stableSpec (engine/key_stability_test.go), key format %d\n%s\n", cache.KeyFormat, strings.Join(lines, "\n"))
}

// TestKeyStability is T30: the same spec gives the same keys in another
// directory, at another time and under an environment that differs in
// everything outside the allowlist (HOME, USER, PWD, TMPDIR, LANG, PATH
// order, TZ, random variables, the secret_env and pass_env values); the
// keys equal a golden list; and each declared thing changes the keys it
// should.
func TestKeyStability(t *testing.T) {
	base := keysOf(t, t.TempDir(), stableFiles)
	if len(base) != 4 {
		t.Fatalf("keys for %d phases, want 4: %v", len(base), base)
	}
	golden := filepath.Join("testdata", "keys.golden")
	if *updateKeys {
		if err := os.WriteFile(golden, []byte(goldenKeys(base)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), goldenKeys(base)); diff != "" {
		t.Errorf("keys changed for a fixed spec (-golden +now); if the key format changed on purpose, rerun with -update-keys:\n%s", diff)
	}

	// Another user's workspace, elsewhere, later, another environment.
	path := os.Getenv("PATH")
	parts := strings.Split(path, string(os.PathListSeparator))
	slices.Reverse(parts)
	for k, v := range map[string]string{
		"HOME": t.TempDir(), "USER": "someone-else", "LOGNAME": "someone-else", "PWD": "/nowhere",
		"TMPDIR": t.TempDir(), "LANG": "fr_FR.UTF-8", "LC_ALL": "C", "TZ": "Pacific/Kiritimati",
		"PATH": strings.Join(parts, string(os.PathListSeparator)), "RANDOM_VAR": fmt.Sprint(os.Getpid()),
		"API_KEY": "another-secret", "SOURCE_DATE_EPOCH": "1",
	} {
		t.Setenv(k, v)
	}
	other := filepath.Join(t.TempDir(), "deeper", "home of", "another user")
	same := keysOf(t, other, stableFiles)
	equal := 0
	if diff := cmp.Diff(base, same); diff != "" {
		t.Errorf("keys differ for the same spec in another directory and environment (-first +second):\n%s", diff)
	} else {
		equal = len(same)
	}

	// Declared things change the keys of the phases they reach.
	changes := []struct {
		name    string
		files   map[string]string
		vars    []spec.VarValue
		changed []string // phases whose key must differ; the rest must not
	}{
		{"input content", map[string]string{"raw.csv": "x,y\n1,3\n"}, nil, []string{"prep"}},
		{"variable (a param)", nil, []spec.VarValue{{Name: "lr", Value: "0.02"}}, []string{"train"}},
		{"declared env", map[string]string{"experiment.hcl": strings.Replace(stableSpec, `MODE = "fast"`, `MODE = "slow"`, 1)}, nil, []string{"prep"}},
		{"param", map[string]string{"experiment.hcl": strings.Replace(stableSpec, "layers = [1, 2]", "layers = [1, 3]", 1)}, nil, []string{"train"}},
		{"budget", map[string]string{"experiment.hcl": strings.Replace(stableSpec, "max_cost       = 2.5", "max_cost       = 3", 1)}, nil, []string{"train"}},
		{"timeout and retries are not in the key", map[string]string{"experiment.hcl": strings.Replace(strings.Replace(stableSpec, `"1m"`, `"2m"`, 1), "retries        = 1", "retries        = 3", 1)}, nil, nil},
	}
	differ := 0
	for _, ch := range changes {
		files := maps(stableFiles, ch.files)
		got := keysOf(t, t.TempDir(), files, ch.vars...)
		for addr, k := range base {
			if slices.Contains(ch.changed, addr) != (got[addr] != k) {
				t.Errorf("%s: phase %s key %s -> %s; want it changed: %v", ch.name, addr, k[:12], got[addr][:12], slices.Contains(ch.changed, addr))
			}
		}
		differ++
	}
	// The executable bit of an input is in the key.
	dir := t.TempDir()
	keysOf(t, dir, stableFiles)
	if err := os.Chmod(filepath.Join(dir, "tool.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := cache.Open(filepath.Join(t.TempDir(), "cache"))
	s := &setup{dir: dir, cache: c, exec: &fakeExec{}}
	res := s.run(t, RunOptions{})
	st, err := runrec.ReadState(filepath.Join(dir, ".cairn", "runs", res.RunID, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Phases["prep"].Key == base["prep"] {
		t.Error("clearing an input's executable bit left prep's key unchanged")
	}
	t.Logf("FIGURE T30 phases=%d same_spec_other_env_equal=%d/%d declared_changes=%d hit_rate=%.0f%%", len(base), equal, len(base), differ+1, 100*float64(equal)/float64(len(base)))
}

// maps returns a copy of a with b's entries added; an empty value removes.
func maps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}
