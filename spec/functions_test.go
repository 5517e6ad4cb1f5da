package spec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/spec/funcs"
)

// TestFunctions evaluates each function users expect from Terraform in a
// phase's params and checks the canonical JSON result.
func TestFunctions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prompt.txt"), []byte("be brief\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		`format("%s-%03d", "run", 7)`:             `"run-007"`,
		`join(",", ["a", "b"])`:                   `"a,b"`,
		`split(",", "a,b")`:                       `["a","b"]`,
		`replace("a-b", "-", "_")`:                `"a_b"`,
		`lower("AB")`:                             `"ab"`,
		`upper("ab")`:                             `"AB"`,
		`concat(["a"], ["b"])`:                    `["a","b"]`,
		`merge({a = 1}, {b = 2})`:                 `{"a":1,"b":2}`,
		`keys({b = 1, a = 2})`:                    `["a","b"]`,
		`values({b = 1, a = 2})`:                  `[2,1]`,
		`lookup({a = 1}, "b", 9)`:                 `9`,
		`range(3)`:                                `[0,1,2]`,
		`toset(["b", "a", "b"])`:                  `["a","b"]`,
		`tolist(toset(["b", "a"]))`:               `["a","b"]`,
		`toset([1, "a"])`:                         `["1","a"]`,
		`toset([[1], [2]])`:                       `[[1],[2]]`,
		`tolist([1, 2])`:                          `[1,2]`,
		`toset(tolist(["a", "a"]))`:               `["a"]`,
		`tomap({a = "x"})`:                        `{"a":"x"}`,
		`length([1, 2, 3])`:                       `3`,
		`min(3, 1, 2)`:                            `1`,
		`max(3, 1, 2)`:                            `3`,
		`jsonencode({a = [1, true]})`:             `"{\"a\":[1,true]}"`,
		`jsondecode("{\"a\": 1}")`:                `{"a":1}`,
		`yamlencode({a = 1})`:                     `"\"a\": 1\n"`,
		`yamldecode("a: [1, 2]")`:                 `{"a":[1,2]}`,
		`trimspace(file("prompt.txt"))`:           `"be brief"`,
		`env("CAIRN_TEST_FN")`:                    `"on"`,
		`env("CAIRN_TEST_UNSET")`:                 `""`,
		`[for s in ["a", "b"] : upper(s)]`:        `["A","B"]`,
		`{ for k, v in { a = 1 } : k => v * 10 }`: `{"a":10}`,
	}
	env := func(k string) (string, bool) {
		if k == "CAIRN_TEST_FN" {
			return "on", true
		}
		return "", false
	}
	for expr, want := range tests {
		t.Run(expr, func(t *testing.T) {
			src := "phase \"a\" {\n  command = \"true\"\n  params  = { v = " + expr + " }\n}\n"
			s, diags := NewParser().LoadBytes("f.hcl", []byte(src), dir, Options{LookupEnv: env})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			if got := s.Phase("a").Params["v"]; got != want {
				t.Errorf("%s = %s, want %s", expr, got, want)
			}
		})
	}
}

// TestFileAndEnvEnterThePhase: file() makes the file an input of the
// phase that calls it, env() records the variable for the key.
func TestFileAndEnvEnterThePhase(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.txt"), []byte("x"), 0o644)
	src := `phase "a" {
  command = "echo ${file("p.txt")} ${env("MODEL")}"
}
phase "b" {
  command = "true"
}
`
	s, diags := NewParser().LoadBytes("f.hcl", []byte(src), dir, Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	a, b := s.Phase("a"), s.Phase("b")
	if len(a.Inputs) != 1 || a.Inputs[0] != "p.txt" {
		t.Errorf("a.Inputs = %q, want [p.txt]", a.Inputs)
	}
	if a.EnvRead["MODEL"] != "unset" {
		t.Errorf("a.EnvRead = %v, want MODEL unset", a.EnvRead)
	}
	if len(b.Inputs) != 0 || len(b.EnvRead) != 0 {
		t.Errorf("b picked up a's file or env: %q %v", b.Inputs, b.EnvRead)
	}
}

// TestReadmeFunctions: every function the README names exists.
func TestReadmeFunctions(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "Expressions may use")
	if i < 0 {
		t.Fatal("README.md does not list the functions")
	}
	para := string(b)[i:]
	para = para[:strings.Index(para, "\n\n")]
	fns := funcs.Std()
	(&scope{}).addSpecFuncs(fns)
	n := 0
	for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(para, -1) {
		n++
		if _, ok := fns[m[1]]; !ok {
			t.Errorf("README.md names function %q, which does not exist", m[1])
		}
	}
	if n < 20 {
		t.Errorf("README.md names only %d functions", n)
	}
}
