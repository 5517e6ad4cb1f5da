package memo

import (
	"github.com/cairn-run/cairn/spec"

	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-run/cairn/hint"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/tools/txtar"
)

// memoFixture writes a spec (and the files it reads) into a fresh
// workspace with a state directory, and returns the spec's path and the
// memo's.
func memoFixture(t *testing.T, src string, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "experiment.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, ".cairn")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	return path, Path(state, path)
}

// sameSpec compares two models, the graph by its edges and order.
func sameSpec(t *testing.T, want, got *spec.Spec) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(spec.Spec{}, spec.Phase{}), cmpopts.IgnoreFields(spec.Spec{}, "Graph"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("memoised spec differs (-parsed +memo):\n%s", diff)
	}
	if diff := cmp.Diff(want.Graph.Edges(), got.Graph.Edges(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("memoised graph differs (-parsed +memo):\n%s", diff)
	}
	for _, p := range want.Phases {
		if got.Phase(p.Addr) == nil {
			t.Errorf("memoised spec has no phase %s", p.Addr)
		}
	}
	wo, _ := want.Graph.TopoOrder()
	gotO, _ := got.Graph.TopoOrder()
	if diff := cmp.Diff(wo, gotO); diff != "" {
		t.Errorf("memoised order differs:\n%s", diff)
	}
}

// TestMemoRoundTrip: for every decode and valid fixture, the model from
// the memo equals the parsed one, and the second load is a hit.
func TestMemoRoundTrip(t *testing.T) {
	var cases []struct {
		name string
		src  []byte
		vars []spec.VarValue
	}
	decode, _ := filepath.Glob("../testdata/decode/*.txtar")
	for _, f := range decode {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := struct {
			name string
			src  []byte
			vars []spec.VarValue
		}{name: filepath.Base(f)}
		for _, file := range ar.Files {
			if file.Name == "spec.hcl" {
				c.src = file.Data
			}
		}
		cases = append(cases, c)
	}
	valid, _ := filepath.Glob("../testdata/valid/*.hcl")
	for _, f := range valid {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			src  []byte
			vars []spec.VarValue
		}{name: filepath.Base(f), src: b})
	}
	if len(cases) == 0 {
		t.Fatal("no fixtures")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, memo := memoFixture(t, string(c.src), nil)
			opts := spec.Options{Vars: c.vars, LookupEnv: func(string) (string, bool) { return "", false }}
			parsed, diags := spec.NewParser().LoadFile(path, opts)
			if diags.HasErrors() {
				t.Skipf("fixture needs more than a bare workspace: %s", diags.Error())
			}
			first, _, hit := LoadFile(spec.NewParser(), path, opts, memo, nil)
			if hit {
				t.Fatal("first load was a memo hit")
			}
			if len(parsed.SensitiveVars) > 0 || len(diags) > 0 {
				if _, err := os.Stat(memo); err == nil {
					t.Fatal("a spec with sensitive variables or warnings was memoised")
				}
				return
			}
			sameSpec(t, parsed, first)
			second, diags, hit := LoadFile(spec.NewParser(), path, opts, memo, nil)
			if !hit {
				t.Fatal("second load was not a memo hit")
			}
			if len(diags) > 0 {
				t.Fatalf("memo hit with diagnostics: %s", diags.Error())
			}
			sameSpec(t, parsed, second)
		})
	}
}

// TestMemoInvalidation: a change to anything evaluation depended on
// makes the memo miss, and the fresh model reflects the change.
func TestMemoInvalidation(t *testing.T) {
	const src = `
variable "n" {
  type    = number
  default = 1
}

phase "a" {
  command = "echo ${var.n} ${file("prompt.txt")} ${env("MODEL")} > out.txt"
  outputs = ["out.txt"]
}
`
	env := map[string]string{"MODEL": "m1"}
	look := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	path, memo := memoFixture(t, src, map[string]string{"prompt.txt": "hello"})
	load := func() (*spec.Spec, bool) {
		t.Helper()
		s, diags, hit := LoadFile(spec.NewParser(), path, spec.Options{LookupEnv: look}, memo, nil)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		return s, hit
	}
	command := func(s *spec.Spec) string { return s.Phase("a").Command[2] }
	if _, hit := load(); hit {
		t.Fatal("first load hit")
	}
	if s, hit := load(); !hit || command(s) != "echo 1 hello m1 > out.txt" {
		t.Fatalf("unchanged: hit %v, command %q", hit, command(s))
	}
	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{"file() content", func() { os.WriteFile(filepath.Join(filepath.Dir(path), "prompt.txt"), []byte("bye"), 0o644) }, "echo 1 bye m1 > out.txt"},
		{"env() value", func() { env["MODEL"] = "m2" }, "echo 1 bye m2 > out.txt"},
		{"CAIRN_VAR_n", func() { env["CAIRN_VAR_n"] = "7" }, "echo 7 bye m2 > out.txt"},
		{"env() unset", func() { delete(env, "MODEL") }, "echo 7 bye  > out.txt"},
		{"spec bytes", func() {
			os.WriteFile(path, []byte(src+"\n# a comment\n"), 0o644)
		}, "echo 7 bye  > out.txt"},
	}
	for _, st := range steps {
		st.change()
		s, hit := load()
		if hit {
			t.Errorf("%s: changed, but the memo was used", st.name)
		}
		if command(s) != st.want {
			t.Errorf("%s: command %q, want %q", st.name, command(s), st.want)
		}
		if s, hit := load(); !hit || command(s) != st.want {
			t.Errorf("%s: reload: hit %v, command %q", st.name, hit, command(s))
		}
	}
	// A CAIRN_VAR_ that a -var-file overrides is not read, so changing it
	// keeps the memo.
	vf := filepath.Join(filepath.Dir(path), "n.vars")
	if err := os.WriteFile(vf, []byte("n = 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withFile := spec.Options{LookupEnv: look, VarFiles: []string{vf}}
	if s, _, _ := LoadFile(spec.NewParser(), path, withFile, memo, nil); command(s) != "echo 5 bye  > out.txt" {
		t.Errorf("-var-file n = 5: command %q", command(s))
	}
	env["CAIRN_VAR_n"] = "8"
	if s, _, hit := LoadFile(spec.NewParser(), path, withFile, memo, nil); !hit || command(s) != "echo 5 bye  > out.txt" {
		t.Errorf("CAIRN_VAR_n changed under a -var-file: hit %v, command %q; want the memo kept", hit, command(s))
	}
	// -var values are part of the key.
	s, diags, hit := LoadFile(spec.NewParser(), path, spec.Options{LookupEnv: look, Vars: []spec.VarValue{{Name: "n", Value: "9"}}}, memo, nil)
	if diags.HasErrors() || hit || command(s) != "echo 9 bye  > out.txt" {
		t.Errorf("-var n=9: hit %v, command %q, %v", hit, command(s), diags)
	}
}

// TestMemoNeverHoldsSensitiveValues: a spec with a sensitive variable is
// not memoised, so its value never reaches the disk.
func TestMemoNeverHoldsSensitiveValues(t *testing.T) {
	const src = `
variable "token" {
  type      = string
  default   = "canary-5f1e"
  sensitive = true
}

phase "a" {
  command = "echo ${var.token} > out.txt"
  outputs = ["out.txt"]
}
`
	path, memo := memoFixture(t, src, nil)
	for i := 0; i < 2; i++ {
		_, diags, hit := LoadFile(spec.NewParser(), path, spec.Options{}, memo, nil)
		if diags.HasErrors() || hit {
			t.Fatalf("load %d: hit %v, %v", i, hit, diags)
		}
	}
	if _, err := os.Stat(memo); err == nil {
		t.Fatal("a spec with a sensitive variable was memoised")
	}
}

// FuzzDecodeMemo: a damaged memo file is an error or a valid model,
// never a panic.
// FuzzDecodeMemo feeds the memo decoder damaged files; with fixSum the
// input gets a valid checksum appended, so the fuzzer reaches the record
// decoder instead of stopping at the checksum.
func FuzzDecodeMemo(f *testing.F) {
	f.Add([]byte{}, false)
	f.Add([]byte("garbage"), true)
	dir := f.TempDir()
	path := filepath.Join(dir, "experiment.hcl")
	os.WriteFile(path, []byte("phase \"a\" {\n  command = \"true\"\n}\nphase \"b\" {\n  command = \"true\"\n  depends_on = [phase.a]\n}\n"), 0o644)
	os.Mkdir(filepath.Join(dir, ".cairn"), 0o755)
	memo := Path(filepath.Join(dir, ".cairn"), path)
	if _, diags, _ := LoadFile(spec.NewParser(), path, spec.Options{}, memo, nil); diags.HasErrors() {
		f.Fatal(diags.Error())
	}
	if b, err := os.ReadFile(memo); err == nil {
		f.Add(b, false)
		f.Add(b[:len(b)-hint.TrailerSize], true)
	}
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		if fixSum {
			b = hint.AppendTrailer(b[:len(b):len(b)])
		}
		rec, err := decodeMemo(b)
		if err != nil {
			return
		}
		_ = rec.spec()
		again, err := decodeMemo(encodeMemo(rec))
		if err != nil {
			t.Fatalf("re-encoded memo does not decode: %v", err)
		}
		if diff := cmp.Diff(rec, again, cmpopts.IgnoreUnexported(spec.Spec{}, spec.Phase{}), cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("re-encode changed the memo (-first +second):\n%s", diff)
		}
	})
}

// TestMemoKeyIs checks the quick look at a memo's key: only a memo
// written for the key passes it, and damaged or foreign bytes never do.
func TestMemoKeyIs(t *testing.T) {
	path, memo := memoFixture(t, `phase "a" { command = "true" }`, nil)
	if _, diags, _ := LoadFile(spec.NewParser(), path, spec.Options{}, memo, nil); diags.HasErrors() {
		t.Fatal(diags)
	}
	_, _, key, err := memoKeyOf(path, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(memo)
	if err != nil {
		t.Fatal(err)
	}
	other := []byte(string(good))
	other[len(memoHeader)+1] ^= 1 // the key's first character
	for _, tc := range []struct {
		name  string
		bytes []byte // nil: no file
		want  bool
	}{
		{"written for the key", good, true},
		{"another key", other, false},
		{"no file", nil, false},
		{"empty", []byte{}, false},
		{"header only", []byte(memoHeader), false},
		{"cut inside the key", good[:len(memoHeader)+10], false},
		{"another header", append([]byte("cairn-spec-memo 2\n"), good[len(memoHeader):]...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m")
			if tc.bytes != nil {
				if err := os.WriteFile(p, tc.bytes, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := memoKeyIs(p, key); got != tc.want {
				t.Errorf("memoKeyIs = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMemoInitDir: without a state directory the memo is written only
// if LoadFile's initDir makes one, and only for a spec that loaded
// cleanly; the next load is then a hit.
func TestMemoInitDir(t *testing.T) {
	const good = "phase \"a\" {\n  command = \"echo a > a.txt\"\n  outputs = [\"a.txt\"]\n}\n"
	tests := []struct {
		name    string
		src     string
		init    bool
		wantHit bool // the second load
	}{
		{"no initDir: no memo", good, false, false},
		{"initDir: memo written", good, true, true},
		{"initDir, spec with errors: nothing made", "phase \"a\" {\n  command = nope\n}\n", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "experiment.hcl")
			if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			state := filepath.Join(dir, ".cairn")
			memo := Path(state, path)
			inits := 0
			load := func() bool {
				var initDir func() error
				if tt.init {
					initDir = func() error { inits++; return os.Mkdir(state, 0o755) }
				}
				_, _, hit := LoadFile(spec.NewParser(), path, spec.Options{}, memo, initDir)
				return hit
			}
			if load() {
				t.Fatal("first load hit a memo")
			}
			if hit := load(); hit != tt.wantHit {
				t.Errorf("second load hit %v, want %v", hit, tt.wantHit)
			}
			_, err := os.Stat(state)
			if made := err == nil; made != tt.wantHit {
				t.Errorf("state directory made %v, want %v (initDir called %d times)", made, tt.wantHit, inits)
			}
		})
	}
}

// TestMemoHome: a cache.dir under ~ depends on HOME, so a memo made with
// one HOME is not used with another (cairn cache path, which reads the
// memo with Load, printed the first HOME's directory).
func TestMemoHome(t *testing.T) {
	const src = "experiment \"e\" {\n  cache {\n    dir = \"~/c\"\n  }\n}\n\nphase \"a\" {\n  command = \"echo a > a.txt\"\n  outputs = [\"a.txt\"]\n}\n"
	path, memo := memoFixture(t, src, nil)
	opts := spec.Options{LookupEnv: os.LookupEnv} // as the CLI's
	t.Setenv("HOME", "/home/one")
	if s, diags, _ := LoadFile(spec.NewParser(), path, opts, memo, nil); diags.HasErrors() || s.Experiment.CacheDir != "/home/one/c" {
		t.Fatalf("first load: %v %v", s, diags)
	}
	t.Setenv("HOME", "/home/two")
	tests := []struct {
		name string
		load func() *spec.Spec
	}{
		{"Load", func() *spec.Spec { return Load(path, opts, memo) }},
		{"LoadFile", func() *spec.Spec {
			s, diags, _ := LoadFile(spec.NewParser(), path, opts, memo, nil)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			return s
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.load()
			if s == nil {
				return // a miss: the caller parses the spec
			}
			if diff := cmp.Diff("/home/two/c", s.Experiment.CacheDir); diff != "" {
				t.Errorf("cache.dir after HOME changed (-want +got):\n%s", diff)
			}
		})
	}
}
