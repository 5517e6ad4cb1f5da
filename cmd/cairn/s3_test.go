package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// s3Env returns the environment of the S3 server scripts/s3-setup.sh
// starts (versitygw on loopback), or skips; with CAIRN_REQUIRE_SERVICES=1
// (CI) a missing server fails the test.
func s3Env(t *testing.T) (url, endpoint string) {
	t.Helper()
	url, endpoint = os.Getenv("CAIRN_TEST_S3_URL"), os.Getenv("AWS_ENDPOINT_URL_S3")
	if url == "" || endpoint == "" {
		if os.Getenv("CAIRN_REQUIRE_SERVICES") == "1" {
			t.Fatal("CAIRN_TEST_S3_URL or AWS_ENDPOINT_URL_S3 not set (CAIRN_REQUIRE_SERVICES=1): .ci/run starts the server with scripts/s3-setup.sh")
		}
		t.Skip("no S3 server: run scripts/s3-setup.sh and source /var/tmp/s3local/env")
	}
	return url, endpoint
}

// s3Spec is teamSpec plus a phase with a 22 MB output, which moves as a
// multipart upload and ranged parallel downloads.
func s3Spec() string {
	return teamSpec(`phase "big" {
  command = "seq 1 3000000 > out/big.txt"
  outputs = ["out/big.txt"]
  params  = { round = var.round }
}
`)
}

// TestS3TwoUsersShareThroughBucket: two Unix users (when run as root),
// each with a workspace and a local cache of their own, share results only
// through the bucket: the second runs nothing and gets byte-identical
// outputs.
func TestS3TwoUsersShareThroughBucket(t *testing.T) {
	url, _ := s3Env(t)
	base, err := os.MkdirTemp("", "cairn-s3-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "cairn")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	names := []string{"cairn-s3-ann", "cairn-s3-ben"}
	asRoot := os.Geteuid() == 0
	if asRoot {
		ensureGroupUsers(t, "cairns3", names)
	}
	round := fmt.Sprint(time.Now().UnixNano())
	prefix := url + "/two-users-" + round
	var ws []string
	for _, name := range names {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ws", "experiment.hcl"), []byte(s3Spec()), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "-var", "round="+round)
		cmd.Dir = filepath.Join(dir, "ws")
		// Only the AWS chain's environment is shared: HOME, the local
		// cache and the workspace are each user's own.
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "HOME="+dir, "CAIRN_CACHE_DIR="+filepath.Join(dir, "cache"), "CAIRN_REMOTE_CACHE="+prefix)
		if asRoot {
			u, err := user.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			if out, err := exec.Command("chown", "-R", u.Uid+":"+u.Gid, dir).CombinedOutput(); err != nil {
				t.Fatalf("chown: %v\n%s", err, out)
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		}
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: cairn run: %v\n%s%s", name, err, o.String(), e.String())
		}
		if e.Len() > 0 {
			t.Errorf("%s: warnings with a healthy bucket:\n%s", name, e.String())
		}
		ran, cached, restored := ranCounts(t, o.Bytes())
		if len(ws) == 0 && ran != 11 {
			t.Fatalf("%s ran %d phases, want 11\n%s", name, ran, o.String())
		}
		if len(ws) == 1 && (ran != 0 || cached+restored != 11) {
			t.Fatalf("%s ran %d (cached %d, restored %d), want everything from the bucket\n%s", name, ran, cached, restored, o.String())
		}
		ws = append(ws, filepath.Join(dir, "ws"))
	}
	if diff := cmp.Diff(outTexts(t, ws[0]), outTexts(t, ws[1])); diff != "" {
		t.Fatalf("outputs through the bucket differ (-first +second):\n%s", diff)
	}
}

// s3Proxy stands between cairn and the S3 server and misbehaves.
type s3Proxy struct {
	target string
	mode   string
	n      atomic.Int64 // requests seen
	hc     *http.Client
	done   chan struct{}
	mu     sync.Mutex
	bad    int // faults injected
}

func (p *s3Proxy) fault() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bad >= 3 && p.mode != "wrong" && p.mode != "slow" && p.mode != "dead" {
		return false
	}
	p.bad++
	return true
}

func (p *s3Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.n.Add(1)
	if p.mode == "dead" {
		select { // accept, never answer
		case <-p.done:
		case <-r.Context().Done():
		}
		return
	}
	if p.mode == "throttle" && p.fault() {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	req.Host = r.Host // the signature covers the Host the client used
	req.ContentLength = r.ContentLength
	if r.ContentLength == 0 {
		req.Body = http.NoBody
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	body := r.Method == http.MethodGet && resp.StatusCode/100 == 2 && resp.ContentLength > 0 &&
		(strings.Contains(r.URL.Path, "/cas/") || strings.Contains(r.URL.Path, "/ac/") && p.mode != "wrong")
	if !body || !p.fault() {
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	switch p.mode {
	case "reset": // half the body, then the connection drops
		w.WriteHeader(resp.StatusCode)
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err == nil {
			buf.Flush()
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	case "wrong": // same length, one byte of a blob changed
		b[len(b)/2] ^= 0xff
		w.WriteHeader(resp.StatusCode)
		w.Write(b)
	case "slow": // a kilobyte every 100 ms
		w.WriteHeader(resp.StatusCode)
		for i := 0; i < len(b); i += 1024 {
			if _, err := w.Write(b[i:min(i+1024, len(b))]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
				return
			case <-p.done:
				return
			}
		}
	default:
		w.WriteHeader(resp.StatusCode)
		w.Write(b)
	}
}

// TestS3Faults puts a misbehaving proxy between cairn and the bucket that
// another workspace filled: throttling, connections reset mid-body, slow
// bodies, wrong bytes, a server that stops answering. Every run ends in
// bounded time with the right outputs, and nothing wrong enters the local
// cache (cairn cache verify is clean).
func TestS3Faults(t *testing.T) {
	url, endpoint := s3Env(t)
	bin := buildCairn(t)
	round := fmt.Sprint(time.Now().UnixNano())
	prefix := url + "/faults-" + round
	mkws := func(name string) string {
		d := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "experiment.hcl"), []byte(s3Spec()), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	src := mkws("source")
	out, errOut, _, err := runBounded(t, bin, src, 120*time.Second, []string{"CAIRN_REMOTE_CACHE=" + prefix}, "run", "-var", "round="+round)
	if err != nil {
		t.Fatalf("filling the bucket: %v\n%s%s", err, out, errOut)
	}
	want := outTexts(t, src)

	for _, tc := range []struct {
		mode      string
		allRemote bool // every phase still comes from the bucket
		warn      bool // the remote is switched off, with a warning
	}{
		{"throttle", true, false},
		{"reset", true, false},
		{"wrong", false, false},
		{"slow", false, true},
		{"dead", false, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			p := &s3Proxy{target: endpoint, mode: tc.mode, hc: &http.Client{}, done: make(chan struct{})}
			srv := httptest.NewServer(p)
			defer func() { close(p.done); srv.Close() }()
			ws := mkws(tc.mode)
			env := []string{"CAIRN_REMOTE_CACHE=" + prefix, "AWS_ENDPOINT_URL_S3=" + srv.URL,
				"CAIRN_REMOTE_TIMEOUT=2s", "CAIRN_REMOTE_MIN_RATE=2000000"}
			out, errOut, took, err := runBounded(t, bin, ws, 90*time.Second, env, "run", "-var", "round="+round)
			if err != nil {
				t.Fatalf("cairn run: %v\n%s%s", err, out, errOut)
			}
			t.Logf("%s: %v, %d requests\n%s", tc.mode, took, p.n.Load(), errOut)
			ran, cached, restored := ranCounts(t, []byte(out))
			if tc.allRemote && (ran != 0 || cached+restored != 11) {
				t.Errorf("ran %d (cached %d, restored %d): the retries should have fetched everything\n%s%s", ran, cached, restored, out, errOut)
			}
			if diff := cmp.Diff(want, outTexts(t, ws)); diff != "" {
				t.Errorf("outputs differ from the source workspace (-want +got):\n%s", diff)
			}
			if got := strings.Count(errOut, "switched off"); tc.warn && got != 1 || !tc.warn && got != 0 {
				t.Errorf("%d switch-off warnings, want %v:\n%s", got, tc.warn, errOut)
			}
			if took > 60*time.Second {
				t.Errorf("run took %v", took)
			}
			if sec := os.Getenv("AWS_SECRET_ACCESS_KEY"); sec != "" && strings.Contains(out+errOut, sec) {
				t.Errorf("the secret access key appears in cairn's output:\n%s", errOut)
			}
			vout, verr, _, err := runBounded(t, bin, ws, 60*time.Second, nil, "cache", "verify")
			if err != nil {
				t.Fatalf("cairn cache verify after %s: %v\n%s%s", tc.mode, err, vout, verr)
			}
		})
	}
}

// TestS3ReadOnlyAndSigned: --remote-read-only writes nothing to the
// bucket, and with require_signed a reader uses only entries signed with
// its team key, as with an HTTP server.
func TestS3ReadOnlyAndSigned(t *testing.T) {
	url, _ := s3Env(t)
	bin := buildCairn(t)
	round := fmt.Sprint(time.Now().UnixNano())
	prefix := url + "/signed-" + round
	run := func(env ...string) (ran, fromCache int, stdout string) {
		t.Helper()
		d := filepath.Join(t.TempDir(), "ws")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "experiment.hcl"), []byte(teamSpec("")), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, _, err := runBounded(t, bin, d, 60*time.Second, env, "run", "-var", "round="+round)
		if err != nil {
			t.Fatalf("cairn run: %v\n%s%s", err, out, errOut)
		}
		r, c, rs := ranCounts(t, []byte(out))
		so, se, _, err := runBounded(t, bin, d, 60*time.Second, env, "cache", "stats", "--remote")
		if err != nil {
			t.Fatalf("cairn cache stats --remote: %v\n%s%s", err, so, se)
		}
		return r, c + rs, so
	}
	// Read-only first: it runs everything and the bucket stays empty.
	ran, _, stats := run("CAIRN_REMOTE_CACHE="+prefix, "CAIRN_REMOTE_READ_ONLY=1")
	if ran != 10 || !strings.Contains(stats, ": 0 entries") {
		t.Fatalf("read-only run: ran %d, bucket:\n%s", ran, stats)
	}
	// A writer signs with the team key.
	if ran, _, stats = run("CAIRN_REMOTE_CACHE="+prefix, "CAIRN_CACHE_SIGNING_KEY=team-key"); ran != 10 || !strings.Contains(stats, ": 10 entries") {
		t.Fatalf("signing writer: ran %d, bucket:\n%s", ran, stats)
	}
	// A reader requiring another key uses none of them.
	if ran, _, _ = run("CAIRN_REMOTE_CACHE="+prefix, "CAIRN_CACHE_SIGNING_KEY=other-key", "CAIRN_CACHE_REQUIRE_SIGNED=1", "CAIRN_REMOTE_READ_ONLY=1"); ran != 10 {
		t.Fatalf("a reader with another key ran %d phases, want all 10 (the entries are not signed with its key)", ran)
	}
	// A reader with the team key uses them all.
	if ran, got, _ := run("CAIRN_REMOTE_CACHE="+prefix, "CAIRN_CACHE_SIGNING_KEY=team-key", "CAIRN_CACHE_REQUIRE_SIGNED=1", "CAIRN_REMOTE_READ_ONLY=1"); ran != 0 || got != 10 {
		t.Fatalf("a reader with the team key ran %d, got %d from the bucket; want 0 and 10", ran, got)
	}
}
