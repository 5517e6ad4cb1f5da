package planfile

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

var testKey = strings.Repeat("ab", 32)

func testPlan() *Plan {
	return &Plan{
		Spec:            "experiment.hcl",
		SpecSHA256:      strings.Repeat("0f", 32),
		Targets:         []string{"optimize"},
		Gates:           runrec.Gates{Until: []string{"optimize"}},
		Variables:       map[string]string{"rounds": "40"},
		Sensitive:       []string{"token"},
		SensitiveDigest: "0123456789abcdef",
		Phases: []Phase{
			{Phase: "prepare", Action: engine.ActionRun, Key: testKey, Reasons: []string{"input raw.txt changed"},
				Components: []cache.Component{{Kind: "input", Name: "raw.txt", Value: "-:" + testKey}}},
			{Phase: "optimize", Action: engine.ActionRun, ProvisionalKey: testKey},
		},
	}
}

func TestPlanFileRoundTrip(t *testing.T) {
	sp := testPlan()
	data, err := Encode(sp, &spec.Spec{}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sp, got); diff != "" {
		t.Errorf("decoded plan differs (-want +got):\n%s", diff)
	}
}

func TestPlanFileDecodeRejects(t *testing.T) {
	good, err := Encode(testPlan(), &spec.Spec{}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"no magic", bytes.TrimPrefix(good, []byte(Magic)), "not a saved plan"},
		{"other version", append([]byte("cairn-plan 2\n"), good[len(Magic):]...), "not a saved plan"},
		{"truncated", good[:len(good)/2], "damaged"},
		{"unknown field", bytes.Replace(good, []byte(`"spec":`), []byte(`"extra": 1, "spec":`), 1), "unknown field"},
		{"trailing data", append(bytes.Clone(good), "{}"...), "data after the plan"},
		{"bad spec digest", bytes.Replace(good, []byte(strings.Repeat("0f", 32)), []byte("nothex"), 1), "spec_sha256"},
		{"bad action", bytes.Replace(good, []byte(`"action": "run"`), []byte(`"action": "explode"`), 1), "unknown action"},
		{"bad key", bytes.Replace(good, []byte(`"key": "`+testKey), []byte(`"key": "`+strings.ToUpper(testKey)), 1), "not a SHA-256"},
		{"phase twice", bytes.Replace(good, []byte(`"phase": "optimize"`), []byte(`"phase": "prepare"`), 1), "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode: got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPlanFileRefusesSecrets(t *testing.T) {
	tests := []struct {
		name string
		s    *spec.Spec
		env  map[string]string
		want string
	}{
		{"sensitive value", &spec.Spec{SensitiveVars: []string{"token"}, SensitiveValues: []string{"40"}}, nil, "sensitive variable (one of token)"},
		{"secret_env value", &spec.Spec{Phases: []*spec.Phase{{Addr: "optimize", SecretEnv: []string{"API_KEY"}}}}, map[string]string{"API_KEY": "raw.txt"}, "secret_env API_KEY (phase optimize)"},
		{"neither", &spec.Spec{Phases: []*spec.Phase{{Addr: "optimize", SecretEnv: []string{"API_KEY"}}}}, map[string]string{"API_KEY": "sk-not-there"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Encode(testPlan(), tt.s, func(n string) (string, bool) { v, ok := tt.env[n]; return v, ok })
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Encode: %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Encode: got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// FuzzDecode: a saved plan may come from anywhere; decoding any
// bytes returns a plan or an error, never panics, and a decoded plan
// encodes and decodes to itself.
func FuzzDecode(f *testing.F) {
	good, err := Encode(testPlan(), &spec.Spec{}, func(string) (string, bool) { return "", false })
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(Magic))
	f.Add([]byte(Magic + `{"spec":"x","spec_sha256":"` + strings.Repeat("0", 64) + `","targets":[],"gates":{},"variables":{},"phases":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sp, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Encode(sp, &spec.Spec{}, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("encoding a decoded plan: %v", err)
		}
		sp2, err := Decode(again)
		if err != nil {
			t.Fatalf("decoding a re-encoded plan: %v", err)
		}
		if diff := cmp.Diff(sp, sp2); diff != "" {
			t.Errorf("plan changed through encode and decode (-first +second):\n%s", diff)
		}
	})
}
