package upkeep

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSessionRecords(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	a, b := cache.ComputeKey([]cache.Component{{Kind: "a"}}), cache.ComputeKey([]cache.Component{{Kind: "b"}})
	s, err := StartSession(c, "run train.hcl\nwith a newline")
	if err != nil {
		t.Fatal(err)
	}
	s.Miss(a)
	s.Put(a)
	// A put is written at once, with what waited before it: GC sees it
	// while the run goes on.
	want := "cairn-session 1\nlabel run train.hcl with a newline\nmiss " + a.String() + "\nput " + a.String() + "\n"
	got, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("session file after a put (-want +got):\n%s", diff)
	}
	// A hit may wait in memory, at most sessionLinger, or until Flush.
	s.Hit(b)
	want += "hit " + b.String() + "\n"
	s.Flush()
	got, _ = os.ReadFile(s.Path())
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("session file after Flush (-want +got):\n%s", diff)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	s.Hit(a) // after Close: ignored
	got, _ = os.ReadFile(s.Path())
	if diff := cmp.Diff(want+"end\n", string(got)); diff != "" {
		t.Errorf("session file after Close (-want +got):\n%s", diff)
	}

	sessions, err := readSessions(c, time.Now(), true)
	if err != nil || len(sessions) != 1 {
		t.Fatalf("readSessions = %d sessions, %v", len(sessions), err)
	}
	sf := sessions[0]
	wantStats := SessionStats{PID: os.Getpid(), Label: "run train.hcl with a newline", State: SessionEnded, Hits: 1, Misses: 1, Puts: 1}
	if diff := cmp.Diff(wantStats, sf.SessionStats, cmpopts.IgnoreFields(SessionStats{}, "Name", "Start", "LastActive")); diff != "" {
		t.Errorf("SessionStats (-want +got):\n%s", diff)
	}
	if time.Since(sf.Start) > time.Minute || sf.LastActive.Before(sf.Start.Add(-time.Second)) {
		t.Errorf("Start %v, LastActive %v: want both about now", sf.Start, sf.LastActive)
	}
	if diff := cmp.Diff(map[cache.ActionID]struct{}{a: {}, b: {}}, sf.used); diff != "" {
		t.Errorf("used keys (-want +got):\n%s", diff)
	}
}

// TestSessionHitLingers: a hit not flushed by anyone reaches the file by
// itself within sessionLinger (polled here with a generous deadline).
func TestSessionHitLingers(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	k := cache.ComputeKey([]cache.Component{{Kind: "k"}})
	s, err := StartSession(c, "linger")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Hit(k)
	line := "hit " + k.String() + "\n"
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := os.ReadFile(s.Path())
		if strings.HasSuffix(string(got), line) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hit was not written within 10 s (linger %v): %q", sessionLinger, got)
		}
		time.Sleep(sessionLinger / 5)
	}
}

func TestSessionNil(t *testing.T) {
	t.Parallel()
	var s *Session
	k := cache.ComputeKey(nil)
	s.Hit(k)
	s.Miss(k)
	s.Put(k)
	s.Flush()
	if err := s.Close(); err != nil || s.Path() != "" {
		t.Errorf("nil session: Close = %v, Path = %q", err, s.Path())
	}
}

func TestSessionConcurrent(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	s, err := StartSession(c, "concurrent")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				s.Hit(cache.ComputeKey([]cache.Component{{Kind: "k", Name: fmt.Sprint(g), Value: fmt.Sprint(i)}}))
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(s.Path())
	defer f.Close()
	l, err := parseSessionLog(f, true)
	if err != nil || l.hits != 400 || len(l.used) != 400 || l.bad != 0 || !l.ended {
		t.Errorf("parsed %d hits, %d keys, %d bad lines, ended %v, %v; want 400 hits and keys, no bad line, ended", l.hits, len(l.used), l.bad, l.ended, err)
	}
}

func TestSessionHeartbeat(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	s, err := startSession(c, "beating", 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(s.Path(), old, old); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.Stat(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		if st.ModTime().After(old.Add(time.Minute)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("heartbeat did not refresh the session file's modification time")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sessions, _ := readSessions(c, time.Now(), false)
	if len(sessions) != 1 || sessions[0].State != SessionLive {
		t.Errorf("sessions = %+v, want one live", sessions)
	}
}

func TestSessionStates(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := map[string]struct {
		lines []string
		age   time.Duration
		want  SessionState
	}{
		"live":                {nil, time.Minute, SessionLive},
		"dead":                {nil, SessionTTL + time.Second, SessionDead},
		"ended":               {[]string{"end"}, time.Second, SessionEnded},
		"ended long ago":      {[]string{"end"}, 30 * 24 * time.Hour, SessionEnded},
		"end with arguments":  {[]string{"end now"}, time.Minute, SessionLive},
		"partial end (crash)": {[]string{"en"}, SessionTTL + time.Second, SessionDead},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDir(t)
			plantSession(t, c, now.Add(-time.Hour), 7, tt.lines, now.Add(-tt.age))
			sessions, err := readSessions(c, now, false)
			if err != nil || len(sessions) != 1 {
				t.Fatalf("readSessions = %+v, %v", sessions, err)
			}
			if got := sessions[0].State; got != tt.want {
				t.Errorf("state %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseSessionLog(t *testing.T) {
	t.Parallel()
	k := cache.ComputeKey(nil).String()
	tests := map[string]struct {
		in   string
		want sessionLog
	}{
		"empty":          {"", sessionLog{}},
		"header only":    {"cairn-session 1\n", sessionLog{}},
		"other format":   {"cairn-session 2\nhit " + k + "\n", sessionLog{foreign: true}},
		"not a session":  {"hello\n", sessionLog{foreign: true}},
		"counts":         {"cairn-session 1\nlabel x y\nhit " + k + "\nhit " + k + "\nmiss " + k + "\nput " + k + "\nend\n", sessionLog{label: "x y", hits: 2, misses: 1, puts: 1, ended: true}},
		"bad key":        {"cairn-session 1\nhit " + strings.ToUpper(k) + "\nhit 12\nhit\n", sessionLog{bad: 3}},
		"unknown verb":   {"cairn-session 1\nstart " + k + "\n\n", sessionLog{bad: 2}},
		"partial last":   {"cairn-session 1\nhit " + k + "\nput " + k[:10], sessionLog{hits: 1, bad: 1}},
		"long line":      {"cairn-session 1\nlabel " + strings.Repeat("x", 3*maxSessionLine) + "\nhit " + k + "\n", sessionLog{hits: 1, bad: 1}},
		"long first":     {strings.Repeat("x", 3*maxSessionLine) + "\n", sessionLog{foreign: true}},
		"long last":      {"cairn-session 1\n" + strings.Repeat("x", 3*maxSessionLine), sessionLog{bad: 1}},
		"no header line": {"cairn-session 1", sessionLog{bad: 1}},
	}
	for name, tt := range tests {
		got, err := parseSessionLog(strings.NewReader(tt.in), false)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(sessionLog{})); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", name, diff)
		}
	}
}

func TestParseSessionName(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		start int64
		pid   int
		ok    bool
	}{
		"1700000000000000000-42-00000000deadbeef": {1700000000000000000, 42, true},
		"1700000000000000000-42-deadbeef":         {0, 0, false},
		"1700000000000000000-42-0000000deadbeefg": {0, 0, false},
		"-1-42-00000000deadbeef":                  {0, 0, false},
		"x-42-00000000deadbeef":                   {0, 0, false},
		"1-x-00000000deadbeef":                    {0, 0, false},
		"1-2-3-00000000deadbeef":                  {0, 0, false},
		".nfs0000000001":                          {0, 0, false},
	}
	for name, tt := range tests {
		start, pid, ok := parseSessionName(name)
		if ok != tt.ok || ok && (start.UnixNano() != tt.start || pid != tt.pid) {
			t.Errorf("parseSessionName(%q) = %v, %d, %v; want %d, %d, %v", name, start.UnixNano(), pid, ok, tt.start, tt.pid, tt.ok)
		}
	}
}

// FuzzSessionLog checks the session parser never panics, never fails on
// content, and stays bounded: no more records than lines, no more keys
// than hits and puts.
func FuzzSessionLog(f *testing.F) {
	k := cache.ComputeKey(nil).String()
	f.Add([]byte("cairn-session 1\nlabel l\nhit " + k + "\nmiss " + k + "\nput " + k + "\nend\n"))
	f.Add([]byte("cairn-session 1\nhit " + k[:63] + "\n"))
	f.Add([]byte("cairn-session 1\n" + strings.Repeat("z", 600)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseSessionLog(bytes.NewReader(b), true)
		if err != nil {
			t.Fatalf("error on content: %v", err)
		}
		lines := bytes.Count(b, []byte("\n")) + 1
		if n := l.hits + l.misses + l.puts + l.bad; n > lines {
			t.Errorf("%d records from %d lines", n, lines)
		}
		if len(l.used) > l.hits+l.puts || len(l.used) > maxSessionKeys {
			t.Errorf("%d keys from %d hits and %d puts", len(l.used), l.hits, l.puts)
		}
		if len(l.label) > len(b) {
			t.Errorf("label longer than the input")
		}
	})
}

// TestSharedSessionAndLockModes checks that what the usage and GC code creates in a
// shared cache gets the shared modes whatever the umask, and that Verify
// finds nothing to fix in it. Not parallel: the umask is per process.
func TestSharedSessionAndLockModes(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	c, err := cache.OpenWith(filepath.Join(t.TempDir(), "cache"), cache.Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartSession(c, "shared")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	s.Put(e.Key)
	if _, err := GC(c, GCOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := fs.ModeDir | fs.ModeSetgid | cache.SharedDirPerm
	want := map[string]fs.FileMode{
		sessionsDir:                       dir,
		locksDir:                          dir,
		filepath.Join(locksDir, "gc"):     cache.SharedRWPerm,
		s.Path():                          cache.SharedRWPerm,
		entryPath(c, e.Key):               cache.SharedObjectPerm,
		filepath.Dir(entryPath(c, e.Key)): dir,
	}
	got := map[string]fs.FileMode{}
	for p := range want {
		full := p
		if !filepath.IsAbs(p) {
			full = filepath.Join(c.Root(), p)
		}
		st, err := os.Lstat(full)
		if err != nil {
			t.Fatal(err)
		}
		got[p] = st.Mode()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modes under umask 077 (-want +got):\n%s", diff)
	}
	rep, err := Verify(c, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("Verify of a fresh shared cache: %+v", rep.Problems)
	}
}
