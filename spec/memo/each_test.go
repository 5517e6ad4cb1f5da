package memo

import (
	"github.com/cairn-run/cairn/spec"

	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEachMemo: after an edit that leaves a for_each's text and the values
// it names unchanged, its keys come from the for_each memo and the model
// is the one a fresh load gives; any change to what the keys came from
// evaluates the expression again; expressions reading outside the spec
// are never kept.
func TestEachMemo(t *testing.T) {
	const text = `
variable "n" {
  default = 12
}
locals {
  prefix = "p"
}
phase "cell" {
  for_each = toset([for i in range(var.n) : format("%s%03d", local.prefix, i)])
  command  = "echo ${each.key} > out/${each.key}"
  outputs  = { o = "out/${each.key}" }
}
phase "files" {
  for_each = toset(split(",", trimspace(file("keys.txt"))))
  command  = "echo ${each.key} > out/f-${each.key}"
  outputs  = { o = "out/f-${each.key}" }
}
phase "envs" {
  for_each = toset([env("SWEEP")])
  command  = "echo ${each.key} > out/e-${each.key}"
  outputs  = { o = "out/e-${each.key}" }
}
phase "over" {
  for_each = phase.cell
  command  = "cat ${each.value.outputs.o} > out/o-${each.key}"
  outputs  = { o = "out/o-${each.key}" }
}
`
	path, memo := memoFixture(t, text, map[string]string{"keys.txt": "a,b"})
	env := map[string]string{"SWEEP": "s1"}
	var fromMemo []string
	testHookEachMemo = func(block string) { fromMemo = append(fromMemo, block) }
	defer func() { testHookEachMemo = nil }()
	load := func(src string, vars ...spec.VarValue) *spec.Spec {
		t.Helper()
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		opts := spec.Options{Vars: vars, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
		fromMemo = nil
		got, diags, hit := LoadFile(spec.NewParser(), path, opts, memo, nil)
		if diags.HasErrors() || hit {
			t.Fatalf("diagnostics %v, memo hit %v", diags, hit)
		}
		testHookEachMemo = nil
		want, diags := spec.NewParser().LoadFile(path, opts)
		testHookEachMemo = func(block string) { fromMemo = append(fromMemo, block) }
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		sameSpec(t, want, got)
		return got
	}
	steps := []struct {
		name, src string
		vars      []spec.VarValue
		files     map[string]string
		env       string
		want      []string // blocks whose keys come from the memo
	}{
		{"first load", text, nil, nil, "", nil},
		{"a comment added", text + "# edited\n", nil, nil, "", []string{"cell"}},
		{"the command edited", strings.Replace(text, "echo ${each.key} > out/${each.key}", "echo x${each.key} > out/${each.key}", 1), nil, nil, "", []string{"cell"}},
		{"the file read changed", text + "# again\n", nil, map[string]string{"keys.txt": "a,b,c"}, "", []string{"cell"}},
		{"the environment changed", text, nil, nil, "s2", []string{"cell"}},
		{"a variable it names set", text + "#\n", []spec.VarValue{{Name: "n", Value: "13"}}, nil, "", nil},
		{"back to the default", text + "# back\n", nil, nil, "", nil},
		{"unchanged again", text + "# back again\n", nil, nil, "", []string{"cell"}},
		{"a local it names edited", strings.Replace(text, `prefix = "p"`, `prefix = "q"`, 1), nil, nil, "", nil},
		{"the expression edited", strings.Replace(text, `"%s%03d"`, `"%s%04d"`, 1), nil, nil, "", nil},
		{"the same text again", strings.Replace(text, `"%s%03d"`, `"%s%04d"`, 1) + "#\n", nil, nil, "", []string{"cell"}},
	}
	for _, st := range steps {
		for name, content := range st.files {
			if err := os.WriteFile(strings.TrimSuffix(path, "experiment.hcl")+name, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if st.env != "" {
			env["SWEEP"] = st.env
		}
		s := load(st.src, st.vars...)
		if diff := cmp.Diff(st.want, fromMemo); diff != "" {
			t.Errorf("%s: blocks from the memo (-want +got):\n%s", st.name, diff)
		}
		if st.name == "the file read changed" && s.Phase(`files["c"]`) == nil {
			t.Errorf("%s: no instance for the new key", st.name)
		}
		if st.name == "the environment changed" && s.Phase(`envs["s2"]`) == nil {
			t.Errorf("%s: no instance for the new value", st.name)
		}
	}
}

// TestEachMemoDamaged: a damaged for_each memo is ignored.
func TestEachMemoDamaged(t *testing.T) {
	const text = `phase "cell" {
  for_each = toset([for i in range(20) : tostring(i)])
  command  = "echo ${each.key}"
}
`
	path, memo := memoFixture(t, text, nil)
	if _, diags, _ := LoadFile(spec.NewParser(), path, spec.Options{}, memo, nil); diags.HasErrors() {
		t.Fatal(diags)
	}
	b, err := os.ReadFile(eachMemoPath(memo))
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		bad := []byte(string(b))
		bad[i] ^= 0x20
		if err := os.WriteFile(eachMemoPath(memo), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text+strings.Repeat("#\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		used := false
		testHookEachMemo = func(string) { used = true }
		s, diags, _ := LoadFile(spec.NewParser(), path, spec.Options{}, memo, nil)
		testHookEachMemo = nil
		if diags.HasErrors() || len(s.Phases) != 20 {
			t.Fatalf("byte %d damaged: %v, %d phases", i, diags, len(s.Phases))
		}
		if used {
			t.Fatalf("byte %d damaged: the memo was used", i)
		}
	}
}

// FuzzEachMemoDecode: any bytes decode to records or an error, never a
// panic, and records encode back to what decodes to them.
func FuzzEachMemoDecode(f *testing.F) {
	f.Add(eachMemoStore.Marshal(map[string]eachRecord{"cell": {hash: "h", keys: []string{"a", "b"}}}))
	f.Add(eachMemoStore.Marshal(map[string]eachRecord{}))
	f.Add([]byte(eachMemoStore.Format.Header()))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := eachMemoStore.Unmarshal(b)
		if err != nil {
			return
		}
		again, err := eachMemoStore.Unmarshal(eachMemoStore.Marshal(recs))
		if err != nil {
			t.Fatalf("re-encoded records do not decode: %v", err)
		}
		if diff := cmp.Diff(recs, again, cmp.AllowUnexported(eachRecord{})); diff != "" {
			t.Fatalf("round trip (-first +again):\n%s", diff)
		}
	})
}
