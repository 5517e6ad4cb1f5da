package cores

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestProcs(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		current int
		want    int
		wantOK  bool
	}{
		{"unset: N plus the extra", nil, N, N + Extra, true},
		{"set by the user: left alone", map[string]string{"GOMAXPROCS": "1"}, N, 0, false},
		{"set empty, which the runtime ignores: raised", map[string]string{"GOMAXPROCS": ""}, N, N + Extra, true},
		{"set to 0 or junk, which the runtime ignores: raised", map[string]string{"GOMAXPROCS": "0x"}, N, N + Extra, true},
		{"changed by the program since: left alone", nil, N + 5, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := procs(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }, tt.current)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("procs = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRaiseProcsKeepsN(t *testing.T) {
	before, n := runtime.GOMAXPROCS(0), N
	t.Setenv("GOMAXPROCS", strconv.Itoa(before))
	RaiseProcs()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS set in the environment: RaiseProcs changed it from %d to %d", before, got)
	}
	if N != n {
		t.Errorf("N changed from %d to %d", n, N)
	}
}

// TestMain lets TestRaiseProcsFreshProcess run RaiseProcs in a process of
// its own, whose sync.Once is unspent: with CORES_TEST_CHILD=k the test
// binary sets GOMAXPROCS to k first, as a program or go test -cpu does
// (0: leaves it), calls RaiseProcs and prints N and GOMAXPROCS.
func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv("CORES_TEST_CHILD"); ok {
		if k, _ := strconv.Atoi(v); k > 0 {
			runtime.GOMAXPROCS(k)
		}
		RaiseProcs()
		fmt.Println(N, runtime.GOMAXPROCS(0))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestRaiseProcsFreshProcess(t *testing.T) {
	tests := []struct {
		name    string
		env     string // GOMAXPROCS in the environment ("-": unset)
		program int    // GOMAXPROCS set by the program before (0: none)
		want    func(n int) int
	}{
		{"unset: raised", "-", 0, func(n int) int { return n + Extra }},
		{"set by the user: left alone", "1", 0, func(int) int { return 1 }},
		{"set by the program (go test -cpu): left alone", "-", 1, func(int) int { return 1 }},
		{"set to what the runtime ignores: raised", "0", 0, func(n int) int { return n + Extra }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			// A race-enabled child would sleep a second at exit.
			cmd.Env = []string{"CORES_TEST_CHILD=" + strconv.Itoa(tt.program), "GORACE=" + os.Getenv("GORACE") + " atexit_sleep_ms=0"}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOMAXPROCS=") && !strings.HasPrefix(kv, "GORACE=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			if tt.env != "-" {
				cmd.Env = append(cmd.Env, "GOMAXPROCS="+tt.env)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			var n, got int
			if _, err := fmt.Sscan(string(out), &n, &got); err != nil {
				t.Fatalf("child printed %q: %v", out, err)
			}
			if want := tt.want(n); got != want {
				t.Errorf("GOMAXPROCS after RaiseProcs = %d, want %d (N = %d)", got, want, n)
			}
		})
	}
}
