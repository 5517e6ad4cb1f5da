package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRemoteCacheServers runs cairn against the real servers that
// scripts/httpcache-setup.sh starts (nginx with WebDAV PUT, bazel-remote):
// a second workspace with an empty local cache and the same remote runs
// nothing and gets byte-identical outputs; a read-only client uploads
// nothing; a stopped server costs one warning, not a failure.
func TestRemoteCacheServers(t *testing.T) {
	servers := map[string]string{
		"nginx":        os.Getenv("HTTPCACHE_NGINX_URL"),
		"bazel-remote": os.Getenv("HTTPCACHE_BAZEL_REMOTE_URL"),
	}
	for name, url := range servers {
		if url == "" {
			if os.Getenv("CAIRN_REQUIRE_SERVICES") == "1" {
				t.Fatalf("%s: HTTPCACHE_*_URL not set; .ci/run starts the servers with scripts/httpcache-setup.sh", name)
			}
			t.Skipf("%s not running: start it with scripts/httpcache-setup.sh and source /var/tmp/httpcache/env", name)
		}
	}
	bin := buildCairn(t)
	// A round no earlier test run used, so the servers start without our keys.
	round := fmt.Sprint(time.Now().UnixNano())
	for _, name := range []string{"nginx", "bazel-remote"} {
		url := servers[name]
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			ws := func(n string) string {
				d := filepath.Join(root, n)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "experiment.hcl"), []byte(teamSpec("")), 0o644); err != nil {
					t.Fatal(err)
				}
				return d
			}
			run := func(dir, cacheDir string, args ...string) (stdout, stderr []byte) {
				t.Helper()
				cmd := exec.Command(bin, append([]string{"run", "-var", "round=" + round}, args...)...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+filepath.Join(root, cacheDir), "NO_COLOR=1", "CAIRN_REMOTE_CACHE="+url)
				var o, e bytes.Buffer
				cmd.Stdout, cmd.Stderr = &o, &e
				if err := cmd.Run(); err != nil {
					t.Fatalf("cairn run %v: %v\n%s%s", args, err, o.Bytes(), e.Bytes())
				}
				return o.Bytes(), e.Bytes()
			}

			a := ws("a")
			out, errOut := run(a, "cache-a")
			if ran, _, _ := ranCounts(t, out); ran != 10 {
				t.Fatalf("first workspace ran %d, want 10\n%s", ran, out)
			}
			if len(errOut) > 0 {
				t.Errorf("warnings on a healthy server:\n%s", errOut)
			}
			b := ws("b")
			out, _ = run(b, "cache-b")
			if ran, cached, restored := ranCounts(t, out); ran != 0 || cached+restored != 10 {
				t.Fatalf("second workspace with an empty cache ran %d (cached %d, restored %d), want everything from the remote\n%s", ran, cached, restored, out)
			}
			if diff := cmp.Diff(outTexts(t, a), outTexts(t, b)); diff != "" {
				t.Fatalf("outputs from the remote differ (-a +b):\n%s", diff)
			}
			vcmd := exec.Command(bin, "cache", "verify")
			vcmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+filepath.Join(root, "cache-b"))
			if out, err := vcmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("no problems")) {
				t.Fatalf("cache verify of what came from the remote: %v\n%s", err, out)
			}

			// Read-only: a new round is computed but not uploaded.
			ro := round + "-ro"
			for _, d := range []string{"c", "d"} {
				dir := ws(d)
				cmd := exec.Command(bin, "run", "-var", "round="+ro, "--remote-read-only")
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+filepath.Join(root, "cache-"+d), "NO_COLOR=1", "CAIRN_REMOTE_CACHE="+url)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("read-only run: %v\n%s", err, out)
				}
				if ran, _, _ := ranCounts(t, out); ran != 10 {
					t.Fatalf("read-only workspace %s ran %d, want 10 (nothing may have been uploaded)\n%s", d, ran, out)
				}
			}
		})
	}

	t.Run("stopped server", func(t *testing.T) {
		// A port nobody listens on: take one, then close it.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String()
		l.Close()
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "experiment.hcl"), []byte(teamSpec("")), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "-var", "round="+round+"-dead", "--remote-cache", dead)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+filepath.Join(root, "cache"), "NO_COLOR=1")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		began := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("run with a stopped remote failed: %v\n%s%s", err, o.Bytes(), e.Bytes())
		}
		if ran, _, _ := ranCounts(t, o.Bytes()); ran != 10 {
			t.Fatalf("ran %d, want 10", ran)
		}
		var warnings []string
		for _, l := range strings.Split(strings.TrimSpace(e.String()), "\n") {
			if strings.Contains(l, dead) {
				warnings = append(warnings, l)
			}
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], "unreachable") {
			t.Fatalf("want exactly one 'unreachable' warning naming %s, got stderr:\n%s", dead, e.String())
		}
		t.Logf("stopped server: one warning, run took %s: %s", time.Since(began).Round(time.Millisecond), warnings[0])
	})
}
