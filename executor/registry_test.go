package executor

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A phase's block overlays the experiment's attribute by attribute; the
// executor reads the result as one JSON object.
func TestConfigOverAndDecode(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	exp := Config{"partition": raw(`"cpu"`), "mem": raw(`"4G"`)}
	for _, tc := range []struct {
		name        string
		base, phase Config
		want        Config
	}{
		{"phase alone", nil, Config{"cpus": raw(`8`)}, Config{"cpus": raw(`8`)}},
		{"experiment alone", exp, nil, exp},
		{"phase wins", exp, Config{"partition": raw(`"gpu"`), "extra_args": raw(`[]`)},
			Config{"partition": raw(`"gpu"`), "mem": raw(`"4G"`), "extra_args": raw(`[]`)}},
	} {
		got := tc.base.Over(tc.phase)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	if exp["partition"] == nil || string(exp["partition"]) != `"cpu"` {
		t.Errorf("Over changed the experiment's settings: %v", exp)
	}
	var s struct {
		Partition string   `json:"partition"`
		CPUs      int      `json:"cpus"`
		ExtraArgs []string `json:"extra_args"`
	}
	if err := exp.Over(Config{"cpus": raw(`8`), "extra_args": raw(`["--x"]`)}).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Partition != "cpu" || s.CPUs != 8 || len(s.ExtraArgs) != 1 {
		t.Errorf("decoded %+v", s)
	}
}

// A name registered twice is a programming error, caught at start.
func TestRegisterTwicePanics(t *testing.T) {
	p := Plugin{Name: "registry-test", New: func(Env) (Executor, error) { return nil, nil }}
	Register(p)
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	Register(p)
}
