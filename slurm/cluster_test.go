package slurm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/executor"
)

// needCluster skips without a Slurm cluster, unless CAIRN_REQUIRE_SERVICES
// is set (CI), where it fails.
func needCluster(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sbatch"); err == nil {
		if err := exec.Command("sinfo", "-h").Run(); err == nil {
			return
		}
	}
	if os.Getenv("CAIRN_REQUIRE_SERVICES") != "" {
		t.Fatal("Slurm is required (CAIRN_REQUIRE_SERVICES is set) but no cluster answers: run scripts/slurm-setup.sh")
	}
	t.Skip("no Slurm cluster; scripts/slurm-setup.sh starts one")
}

// Concurrent jobs through one executor on the real cluster: exit codes,
// output, one cancelled by its context; the poller follows them all
// (run with -race).
func TestExecutorOnCluster(t *testing.T) {
	needCluster(t)
	x := New(Options{PollMin: 200 * time.Millisecond, PollMax: time.Second})
	ws := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH")}
	run := func(ctx context.Context, name string, argv ...string) (int, string, error) {
		var out bytes.Buffer
		j := &executor.Job{Phase: name, Argv: argv, Dir: ws, Env: env, Stdout: &out, Stderr: &out}
		var mu sync.Mutex
		var refs []executor.JobRef
		rj := &executor.RemoteJob{Dir: filepath.Join(ws, "jobs", name), Name: "cairn-test-" + name,
			Submitted: func(r executor.JobRef) { mu.Lock(); refs = append(refs, r); mu.Unlock() }}
		code, err := x.RunRemote(ctx, j, rj)
		mu.Lock()
		defer mu.Unlock()
		if len(refs) != 2 || refs[0].ID != "" || refs[1].ID == "" {
			t.Errorf("%s: Submitted calls %+v, want one before sbatch and one with the id", name, refs)
		}
		return code, out.String(), err
	}
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "ok" + strconv.Itoa(i)
			code, out, err := run(t.Context(), name, "sh", "-c", "echo hi "+name+"; exit "+strconv.Itoa(i))
			if code != i || out != "hi "+name+"\n" {
				t.Errorf("%s: code %d, output %q, err %v", name, code, out, err)
			}
			var ended *executor.JobEndedError
			if (i == 0) != (err == nil) || i > 0 && !errors.As(err, &ended) {
				t.Errorf("%s: err %v", name, err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithCancel(t.Context())
		started := filepath.Join(ws, "started")
		go func() {
			for {
				if _, err := os.Stat(started); err == nil {
					cancel()
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		code, _, err := run(ctx, "cancelled", "sh", "-c", "touch "+started+"; sleep 300")
		if code != -1 || !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: code %d, err %v", code, err)
		}
	}()
	wg.Wait()
	st := x.Stats()
	if st.Submissions != 4 || st.Cancels != 1 {
		t.Errorf("stats %+v, want 4 submissions and 1 cancel", st)
	}
	t.Logf("FIGURE SLURM executor_jobs=4 status_queries=%d", st.StatusQueries)
}
