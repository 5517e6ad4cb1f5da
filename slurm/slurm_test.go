package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The batch script rebuilds the exact argv from the environment, runs it,
// records its exit status, and holds none of the arguments itself.
func TestBatchScriptRunsArgvFromEnv(t *testing.T) {
	dir := t.TempDir()
	argv := []string{"sh", "-c", `printf '%s|' "$@" > out; exit 7`, "sh", "two words", `quote'd "x"`, "$HOME", "new\nline", "", "-n"}
	script := batchScript(`work["a b"]`, dir)
	for _, a := range argv[2:] {
		if a != "" && a != "sh" && a != "-n" && strings.Contains(script, a) {
			t.Errorf("the script holds the argument %q:\n%s", a, script)
		}
	}
	path := filepath.Join(dir, scriptFile)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, commandEnv(argv, true)...)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("script exit: %v, want exit status 7", err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "out"))
	want := strings.Join(argv[4:], "|") + "|"
	if string(got) != want {
		t.Errorf("the command got %q, want %q", got, want)
	}
	if code, ok := readExit(dir); !ok || code != 7 {
		t.Errorf("exit file: %d %v, want 7", code, ok)
	}
}

func TestSbatchArgs(t *testing.T) {
	s := Settings{Partition: "gpu", CPUs: 4, Mem: "8G", Gres: "gpu:1", Account: "lab", QoS: "high",
		ExtraArgs: []string{"--constraint=a100"}}
	timeout := 90 * time.Second
	got := sbatchArgs("cairn-x", "/ws", "/ws/.cairn/runs/r/jobs/100%.1", s, timeout)
	want := []string{
		"--parsable", "--job-name=cairn-x", "--chdir=/ws",
		"--output=/ws/.cairn/runs/r/jobs/100%%.1/stdout", "--error=/ws/.cairn/runs/r/jobs/100%%.1/stderr",
		"--export=ALL", "--partition=gpu", "--cpus-per-task=4", "--mem=8G", "--gres=gpu:1",
		"--time=2", // 90s budget.timeout, rounded up to whole minutes
		"--account=lab", "--qos=high", "--constraint=a100",
		"/ws/.cairn/runs/r/jobs/100%.1/job.sh",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sbatch args (-want +got):\n%s", d)
	}
	// slurm.time wins over budget.timeout.
	s.Time = 2 * time.Hour
	got = sbatchArgs("n", "/ws", "/d", s, timeout)
	if !contains(got, "--time=120") {
		t.Errorf("time = 2h gave %v", got)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestParseQueue(t *testing.T) {
	got := parseQueue("12|RUNNING|None\n13|PENDING|Resources\n\n14|CANCELLED by 0|None\n")
	want := map[string]queueRow{
		"12": {"RUNNING", "None"},
		"13": {"PENDING", "Resources"},
		"14": {"CANCELLED", "None"},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(queueRow{})); d != "" {
		t.Error(d)
	}
}

func TestParseScontrol(t *testing.T) {
	// JobName and Command hold spaces; the keys read stop at a space.
	line := "JobId=20 JobName=my job UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) ExitCode=0:15 RunTime=00:01:11 TimeLimit=00:01:00 Command=/a b/job.sh NodeList=vm"
	got := parseScontrol(line)
	want := map[string]string{"JobState": "TIMEOUT", "Reason": "TimeLimit", "ExitCode": "0:15", "TimeLimit": "00:01:00", "NodeList": "vm"}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
}

func TestTransient(t *testing.T) {
	for msg, want := range map[string]bool{
		"sbatch: error: Batch job submission failed: Socket timed out on send/recv operation":              true,
		"sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying":                     true,
		"sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)": true,
		"sbatch: error: invalid partition specified: nope":                                                 false,
		"sbatch: error: Memory specification can not be satisfied":                                         false,
	} {
		if got := transient(msg); got != want {
			t.Errorf("transient(%q) = %v, want %v", msg, got, want)
		}
	}
}

func TestEndingResult(t *testing.T) {
	cases := []struct {
		name     string
		e        ending
		code     int
		status   string
		contains string
	}{
		{"ok", ending{fromFile: true}, 0, "", ""},
		{"exit", ending{fromFile: true, code: 3}, 3, "failed", "exit status 3 (Slurm job 9)"},
		{"timeout", ending{state: "TIMEOUT", reason: "TimeLimit", exitCode: "0:15"}, -1, "timed_out", "Slurm job 9 TIMEOUT (TimeLimit), ExitCode=0:15: Slurm ended it at its time limit"},
		{"oom", ending{state: "OUT_OF_MEMORY"}, -1, "failed", "raise slurm.mem"},
		{"gone", ending{gone: true}, -1, "failed", "left Slurm's queue"},
		{"failed no file", ending{state: "FAILED", reason: "NonZeroExitCode", exitCode: "42:0"}, 42, "failed", "no exit status"},
	}
	for _, c := range cases {
		code, err := c.e.result("9", "/d")
		if code != c.code {
			t.Errorf("%s: code %d, want %d", c.name, code, c.code)
		}
		if c.status == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.contains) {
			t.Errorf("%s: error %v, want it to hold %q", c.name, err, c.contains)
		}
	}
}

// The limiter lets a burst through at once, then spaces calls by 1/rate.
func TestLimiter(t *testing.T) {
	l := newLimiter(20, 3)
	start := time.Now()
	for i := 0; i < 7; i++ {
		if err := l.wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// 3 at once, 4 more at 20/s: at least 200ms.
	if d := time.Since(start); d < 190*time.Millisecond {
		t.Errorf("7 calls at 20/s with a burst of 3 took %s", d)
	}
}

// A shell pipeline whose first stage fails fails the job when the job
// asks for pipefail, and is the last stage's status otherwise.
func TestBatchScriptPipefail(t *testing.T) {
	for _, tc := range []struct {
		name     string
		line     string
		pipefail bool
		want     int
	}{
		{"strict", "(echo partial; exit 3) | cat > out", true, 3},
		{"lax", "(echo partial; exit 3) | cat > out", false, 0},
		{"no pipe", "echo whole > out; exit 0", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, scriptFile)
			if err := os.WriteFile(path, []byte(batchScript("p", dir)), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(path)
			cmd.Dir = dir
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, commandEnv([]string{"sh", "-c", tc.line}, tc.pipefail)...)
			_ = cmd.Run()
			if code, ok := readExit(dir); !ok || code != tc.want {
				t.Errorf("exit file: %d %v, want %d", code, ok, tc.want)
			}
		})
	}
}
