package callmemo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/runrec"
)

func TestMemoCallKey(t *testing.T) {
	secretEnv := []string{"CAIRN_SECRET_NAMES=API_KEY", "API_KEY=sk-very-secret"}
	base := Call{Function: "model.ask", Version: "1", Args: `{"q":"why"}`}
	tests := []struct {
		name      string
		a, b      Call
		envA      []string
		envB      []string
		wantEqual bool
	}{
		{name: "same call", a: base, b: base, wantEqual: true},
		{name: "another function", a: base, b: Call{Function: "model.tell", Version: "1", Args: base.Args}},
		{name: "another version", a: base, b: Call{Function: base.Function, Version: "2", Args: base.Args}},
		{name: "other arguments", a: base, b: Call{Function: base.Function, Version: "1", Args: `{"q":"how"}`}},
		{
			name: "a secret enters as its name, whatever its value",
			a:    Call{Function: "f", Args: `{"key":"sk-very-secret"}`}, envA: secretEnv,
			b: Call{Function: "f", Args: `{"key":"sk-other-value"}`}, envB: []string{"CAIRN_SECRET_NAMES=API_KEY", "API_KEY=sk-other-value"},
			wantEqual: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, kb := CallKey(tt.a, tt.envA), CallKey(tt.b, tt.envB)
			if (ka == kb) != tt.wantEqual {
				t.Errorf("keys equal = %v, want %v", ka == kb, tt.wantEqual)
			}
		})
	}
	comps := callComponents(Call{Function: "f", Args: `{"key":"sk-very-secret"}`}, secretEnv)
	if b, _ := json.Marshal(comps); strings.Contains(string(b), "sk-very-secret") {
		t.Errorf("a secret's value is in the key's components: %s", b)
	}
}

func TestRecordAndLookupCall(t *testing.T) {
	dir, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	c := remote.NewTiered(dir, nil, false, nil)
	env := []string{"CAIRN_SECRET_NAMES=API_KEY", "API_KEY=sk-very-secret"}
	call := Call{Function: "model.ask", Version: "1", Args: `{"q":"why"}`}
	if rec, err := LookupCall(c, call, env); err != nil || rec != nil {
		t.Fatalf("LookupCall before any record = %v, %v; want a miss", rec, err)
	}
	tests := []struct {
		name       string
		call       Call
		rec        CallRecord
		wantReason string
		want       *CallRecord
	}{
		{
			name: "a result and what the call reported",
			call: call,
			rec:  CallRecord{Result: json.RawMessage(`{"answer":42}`), Spend: runrec.Spend{Cost: 0.25, Iterations: 1}},
			want: &CallRecord{Result: json.RawMessage(`{"answer":42}`), Spend: runrec.Spend{Cost: 0.25, Iterations: 1}},
		},
		{
			name: "an exception",
			call: Call{Function: "model.fail", Version: "1", Args: `{}`},
			rec:  CallRecord{Result: json.RawMessage(`{"message":"bad","type":"builtins.ValueError"}`), Raised: true},
			want: &CallRecord{Result: json.RawMessage(`{"message":"bad","type":"builtins.ValueError"}`), Raised: true},
		},
		{
			name:       "a result holding a secret is not recorded",
			call:       Call{Function: "model.leak", Version: "1", Args: `{}`},
			rec:        CallRecord{Result: json.RawMessage(`"sk-very-secret"`)},
			wantReason: "not cached: the result holds the value of secret API_KEY",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, err := RecordCall(c, tt.call, tt.rec, env)
			if err != nil {
				t.Fatal(err)
			}
			if why != tt.wantReason {
				t.Errorf("RecordCall reason = %q, want %q", why, tt.wantReason)
			}
			got, err := LookupCall(c, tt.call, env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LookupCall (-want +got):\n%s", diff)
			}
		})
	}
	// The first result recorded stays.
	if _, err := RecordCall(c, call, CallRecord{Result: json.RawMessage(`{"answer":43}`)}, env); err != nil {
		t.Fatal(err)
	}
	got, _ := LookupCall(c, call, env)
	if string(got.Result) != `{"answer":42}` {
		t.Errorf("after a second record, result = %s, want the first", got.Result)
	}
	if _, err := RecordCall(c, call, CallRecord{Result: json.RawMessage(`{not json`)}, env); err == nil {
		t.Error("RecordCall of a result that is not JSON: no error")
	}
	// Nothing of the secret reached the cache.
	filepath.Walk(c.Root(), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "sk-very-secret") {
				t.Errorf("%s holds the secret", p)
			}
		}
		return nil
	})
}
