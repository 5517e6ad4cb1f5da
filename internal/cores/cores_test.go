package cores

import (
	"runtime"
	"strconv"
	"testing"
)

func TestProcs(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		want   int
		wantOK bool
	}{
		{"unset: N plus the extra", nil, N + Extra, true},
		{"set by the user: left alone", map[string]string{"GOMAXPROCS": "1"}, 0, false},
		{"set empty, which the runtime ignores: raised", map[string]string{"GOMAXPROCS": ""}, N + Extra, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := procs(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
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
