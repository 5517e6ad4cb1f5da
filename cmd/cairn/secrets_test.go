package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/cairn-run/cairn/cache/remote/remotetest"
)

// canarySpec has a phase with a secret_env variable that prints it and
// passes it to cairn memo (in the argv, and printed by the memoised
// command), a phase using a sensitive variable in its command, env,
// params and metrics, a failing phase and a timing-out phase that print
// both.
const canarySpec = `
variable "token" {
  type      = string
  sensitive = true
}

phase "prep" {
  command    = "echo key=$API_KEY; echo key=$API_KEY >&2; cairn memo -- sh -c 'echo called' arg0 $API_KEY; cairn memo -- sh -c 'echo memo-out=$API_KEY'; cairn memo -- echo plain; echo data > data.txt"
  outputs    = ["data.txt"]
  secret_env = ["API_KEY"]
}

phase "train" {
  command = "echo tok=${var.token}; echo tok=$TOKEN_ENV >&2; cat $CAIRN_PARAMS; printf '{\"loss\": 1, \"note\": \"%s\"}' ok > m.json; cp ${phase.prep.outputs[0]} model.txt"
  outputs = ["model.txt", "m.json"]
  env     = { TOKEN_ENV = var.token }
  params  = { tok = var.token, lr = 0.1 }
  metrics = ["m.json"]
}

phase "fail" {
  command    = "echo failing with $API_KEY ${var.token}; echo $API_KEY >&2; exit 3"
  secret_env = ["API_KEY"]
  depends_on = [phase.train]
}

phase "slow" {
  command    = "echo slow $API_KEY; sleep 30"
  secret_env = ["API_KEY"]
  budget {
    timeout = "1s"
  }
}
`

func newCanary(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "canary" + hex.EncodeToString(b[:])
}

// canaryForms returns the canary as it could appear: raw (also its JSON
// and URL encodings: it is alphanumeric), base64 and hex of its bytes.
func canaryForms(c string) []string {
	return []string{
		c,
		base64.StdEncoding.EncodeToString([]byte(c))[:40],
		base64.URLEncoding.EncodeToString([]byte(c))[:40],
		hex.EncodeToString([]byte(c)),
	}
}

// TestSecretCanariesNeverLeak is T29: three canaries (a secret_env value, a
// sensitive variable given through CAIRN_VAR_, the remote cache token) go
// through a run with failing and timing-out phases, cairn memo, debug key
// output and a remote cache; then every command that shows something runs
// in every format. No canary may appear, in any encoding, in any output,
// in the workspace's .cairn directory, in any cache object (zstd blobs
// decompressed), or in what the remote server received (but for the
// Authorization header).
func TestSecretCanariesNeverLeak(t *testing.T) {
	bin := buildCairn(t)
	secretEnv, sensitive, token := newCanary(t), newCanary(t), newCanary(t)
	srv := remotetest.New(t, remotetest.Options{})

	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	cacheDir := filepath.Join(root, "cache")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "experiment.hcl"), []byte(canarySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	var outputs bytes.Buffer // everything every command printed
	run := func(extraEnv []string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(),
			"CAIRN_CACHE_DIR="+cacheDir, "NO_COLOR=1",
			"API_KEY="+secretEnv, "CAIRN_VAR_token="+sensitive,
			"CAIRN_REMOTE_CACHE="+srv.URL, "CAIRN_REMOTE_TOKEN="+token)
		cmd.Env = append(cmd.Env, extraEnv...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		fmt.Fprintf(&outputs, "$ cairn %s (%v)\n%s", strings.Join(args, " "), err, out.Bytes())
	}
	run(nil, "run", "--keep-going", "--verbose")
	run([]string{"CAIRN_DEBUG_KEY=1"}, "run", "--keep-going", "--json")
	// A changed sensitive value: "command changed" reasons.
	run([]string{"CAIRN_VAR_token=" + sensitive + "x"}, "plan")
	run(nil, "run", "--keep-going", "--force", "prep")
	for _, args := range [][]string{
		{"plan"}, {"plan", "--json"}, {"run", "--dry-run"},
		{"why", "prep"}, {"why", "train"}, {"why", "fail"}, {"why", "slow"},
		{"graph"}, {"graph", "--format", "mermaid"}, {"graph", "--format", "json"},
		{"graph", "--status"}, {"graph", "--run", "latest"},
		{"show"}, {"status"}, {"runs"}, {"runs", "--json"},
		{"logs", "prep"}, {"logs", "prep", "--stderr"}, {"logs", "train"}, {"logs", "train", "--stderr"},
		{"logs", "fail"}, {"logs", "fail", "--stderr"}, {"logs", "slow"},
		{"metrics"}, {"report", "-o", filepath.Join(ws, ".cairn", "report.html")},
		{"cache", "stats"}, {"cache", "verify"}, {"cache", "push"},
		{"validate"},
	} {
		run(nil, args...)
	}
	if len(outputs.Bytes()) < 2000 {
		t.Fatalf("the commands printed almost nothing; something is broken:\n%s", outputs.Bytes())
	}

	type place struct {
		name string
		data []byte
	}
	places := []place{{"command output", outputs.Bytes()}}
	addTree := func(dir string) {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.HasSuffix(p, ".zst") {
				dec, err := zstd.NewReader(bytes.NewReader(b))
				if err != nil {
					return err
				}
				plain, err := io.ReadAll(dec)
				dec.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				b = plain
			}
			places = append(places, place{p, b})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	addTree(filepath.Join(ws, ".cairn"))
	addTree(cacheDir)
	sawAuth := false
	for i, r := range srv.Requests() {
		h := r.Header.Clone()
		if strings.Contains(h.Get("Authorization"), token) {
			sawAuth = true
		}
		h.Del("Authorization")
		var hb bytes.Buffer
		h.Write(&hb)
		places = append(places, place{fmt.Sprintf("remote request %d %s %s", i, r.Method, r.Path), append(append([]byte(r.Path+"\n"), hb.Bytes()...), r.Body...)})
	}
	if !sawAuth {
		t.Errorf("the remote never received the token in Authorization (%d requests): the remote part of the test did nothing", len(srv.Requests()))
	}

	hits := 0
	var scanned int64
	for _, p := range places {
		scanned += int64(len(p.data))
		for name, c := range map[string]string{"secret_env": secretEnv, "sensitive variable": sensitive, "remote token": token} {
			for _, form := range canaryForms(c) {
				if i := bytes.Index(p.data, []byte(form)); i >= 0 {
					hits++
					lo, hi := max(0, i-80), min(len(p.data), i+len(form)+40)
					t.Errorf("%s canary in %s: ...%q...", name, p.name, p.data[lo:hi])
				}
			}
		}
	}
	// The masking is seen working: the phases printed the secrets.
	if !bytes.Contains(outputs.Bytes(), []byte("key=***")) || !bytes.Contains(outputs.Bytes(), []byte("tok=***")) {
		t.Errorf("the logs do not show the masked secrets; did the phases run?\n%s", outputs.Bytes())
	}
	t.Logf("FIGURE T29 locations=%d bytes_scanned=%d hits=%d", len(places), scanned, hits)
}
