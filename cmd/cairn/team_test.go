package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// teamSpec is a ten-phase experiment in two layers; round enters every key
// through a param, so each round of a test writes new entries.
func teamSpec(extra string) string {
	var b strings.Builder
	b.WriteString("variable \"round\" {\n  default = \"0\"\n}\n\n")
	for layer := 0; layer < 2; layer++ {
		for j := 0; j < 5; j++ {
			name := fmt.Sprintf("p%d%d", layer, j)
			var ins []string
			if layer > 0 {
				for k := 0; k < 5; k++ {
					ins = append(ins, fmt.Sprintf("out/p%d%d.txt", layer-1, k))
				}
			}
			cmd := fmt.Sprintf(`{ echo %s round $CAIRN_PARAM_ROUND; for f in %s; do while IFS= read -r l; do echo "$l"; done < $f; done; } > out/%s.txt`,
				name, strings.Join(ins, " "), name)
			fmt.Fprintf(&b, "phase %q {\n  command = %q\n  inputs  = %s\n  outputs = [\"out/%s.txt\"]\n  params  = { round = var.round }\n}\n\n",
				name, cmd, hclList(ins), name)
		}
	}
	b.WriteString(extra)
	return b.String()
}

var summaryRe = regexp.MustCompile(`(\d+) ran, (\d+) cached, (\d+) restored`)

// ranCounts extracts "N ran, M cached, K restored" from a run's output.
func ranCounts(t *testing.T, out []byte) (ran, cached, restored int) {
	t.Helper()
	m := summaryRe.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line in:\n%s", out)
	}
	a, _ := strconv.Atoi(string(m[1]))
	b, _ := strconv.Atoi(string(m[2]))
	c, _ := strconv.Atoi(string(m[3]))
	return a, b, c
}

// TestTwoUsersShareCache is RELIABILITY.md T10: two Unix users in one
// group, each with umask 022, share one cache directory set up with cairn
// cache init --shared. Each hits the other's entries, both add new ones,
// and every file in the cache keeps the shared modes.
func TestTwoUsersShareCache(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CAIRN_REQUIRE_SERVICES") == "1" {
			t.Fatal("the two-user test needs root (CI runs as root)")
		}
		t.Skip("needs root to create two users")
	}
	for _, tool := range []string{"groupadd", "useradd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: %v", tool, err)
		}
	}
	const group = "cairnteam"
	users := []string{"cairn-alice", "cairn-bob"}
	ensureGroupUsers(t, group, users)

	base, err := os.MkdirTemp("", "cairn-team-")
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
	// As an admin would: a team directory owned by the group, setgid.
	g0, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	gid0, _ := strconv.Atoi(g0.Gid)
	teamDir := filepath.Join(base, "team")
	if err := os.Mkdir(teamDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(teamDir, 0, gid0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(teamDir, 0o775|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(teamDir, "cache")
	type person struct {
		name     string
		uid, gid uint32
		ws       string
	}
	var ps []person
	for _, name := range users {
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		ws := filepath.Join(base, name)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "experiment.hcl"), []byte(teamSpec("")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(ws, uid, gid); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, person{name, uint32(uid), uint32(gid), ws})
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	teamGid, _ := strconv.Atoi(g.Gid)

	// as runs cairn as p with umask 022 and returns its output.
	as := func(p person, wantOK bool, args ...string) []byte {
		t.Helper()
		cmd := exec.Command("/bin/sh", append([]string{"-c", `umask 022; exec "$@"`, "sh", bin}, args...)...)
		cmd.Dir = p.ws
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + p.ws, "CAIRN_CACHE_DIR=" + cacheDir, "NO_COLOR=1"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: p.uid, Gid: p.gid, Groups: []uint32{uint32(teamGid)},
		}}
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("%s: cairn %s: %v\n%s", p.name, strings.Join(args, " "), err, out)
		}
		return out
	}
	alice, bob := ps[0], ps[1]

	out := as(alice, true, "cache", "init", "--shared", "--group", group)
	t.Logf("alice: %s", bytes.TrimSpace(out))
	if ran, _, _ := ranCounts(t, as(alice, true, "run")); ran != 10 {
		t.Fatalf("alice's first run ran %d phases, want 10", ran)
	}
	// Bob, in his own clone, hits every one of Alice's entries.
	if ran, cached, restored := ranCounts(t, as(bob, true, "run")); ran != 0 || cached+restored != 10 {
		t.Fatalf("bob ran %d (cached %d, restored %d), want 0 ran: he should hit alice's entries", ran, cached, restored)
	}
	if diff := cmp.Diff(outTexts(t, alice.ws), outTexts(t, bob.ws)); diff != "" {
		t.Fatalf("bob's outputs differ from alice's (-alice +bob):\n%s", diff)
	}
	// Bob adds new entries (round 1); Alice hits them.
	if ran, _, _ := ranCounts(t, as(bob, true, "run", "-var", "round=1")); ran != 10 {
		t.Fatalf("bob's round 1 ran %d, want 10", ran)
	}
	if ran, _, _ := ranCounts(t, as(alice, true, "run", "-var", "round=1")); ran != 0 {
		t.Fatalf("alice's round 1 ran %d, want 0: she should hit bob's entries", ran)
	}
	// Alice forces one of Bob's phases: her result (same bytes, new
	// mtime) supersedes his entry (his file goes from the team's
	// directory, hers takes its name), and Bob's next plain run finds it
	// without running anything.
	before := entryOwners(t, cacheDir)
	if ran, _, _ := ranCounts(t, as(alice, true, "run", "-var", "round=1", "--force", "p00")); ran != 1 {
		t.Fatalf("alice's forced run ran %d, want 1 (p00: its bytes are the same, so nothing downstream)", ran)
	}
	after := entryOwners(t, cacheDir)
	if after[alice.uid] != before[alice.uid]+1 || after[bob.uid] != before[bob.uid]-1 {
		t.Fatalf("entries by owner before the forced run %v, after %v: want one of bob's (uid %d) replaced by alice's (uid %d)", before, after, bob.uid, alice.uid)
	}
	if ran, _, _ := ranCounts(t, as(bob, true, "run", "-var", "round=1")); ran != 0 {
		t.Fatalf("bob's round 1 after alice's forced run ran %d, want 0", ran)
	}
	// Either can check the whole cache and evict the other's entries.
	as(bob, true, "cache", "verify")
	gcOut := as(bob, true, "cache", "gc", "--max-size", "0")
	if !bytes.Contains(gcOut, []byte("gc removed 20 entries")) {
		t.Fatalf("bob's gc did not evict all 20 entries:\n%s", gcOut)
	}
	if ran, _, _ := ranCounts(t, as(alice, true, "run", "-var", "round=1")); ran != 10 {
		t.Fatalf("alice's round 1 after bob's gc ran %d, want 10 (the entries were evicted)", ran)
	}
	as(alice, true, "cache", "verify")

	// Every file and directory has the shared modes and the team's group.
	bad := 0
	err = filepath.WalkDir(cacheDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		sys := st.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(cacheDir, p)
		top := strings.Split(rel, string(filepath.Separator))[0]
		m := st.Mode()
		var ok bool
		switch {
		case d.IsDir():
			ok = m&fs.ModeSetgid != 0 && m.Perm() == 0o770
		case top == "sessions" || top == "locks":
			ok = m.Perm() == 0o660
		default:
			ok = m.Perm() == 0o440
		}
		if !ok || int(sys.Gid) != teamGid {
			bad++
			t.Errorf("%s: mode %v gid %d, want the shared mode and gid %d", rel, m, sys.Gid, teamGid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("T10: permission mismatches %d; cross-user hits 10/10 both ways", bad)
}

// entryOwners counts the names in the cache's ac/ by the uid owning them.
func entryOwners(t *testing.T, cacheDir string) map[uint32]int {
	t.Helper()
	n := map[uint32]int{}
	err := filepath.WalkDir(filepath.Join(cacheDir, "ac"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		n[st.Sys().(*syscall.Stat_t).Uid]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ensureGroupUsers creates group and users in it if missing.
func ensureGroupUsers(t *testing.T, group string, users []string) {
	t.Helper()
	if _, err := user.LookupGroup(group); err != nil {
		if out, err := exec.Command("groupadd", group).CombinedOutput(); err != nil {
			t.Fatalf("groupadd: %v\n%s", err, out)
		}
	}
	for _, u := range users {
		if _, err := user.Lookup(u); err == nil {
			continue
		}
		if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", "--groups", group, u).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v\n%s", u, err, out)
		}
	}
}

// TestConcurrentRunsOneCache is RELIABILITY.md T6: K cairn processes in K
// workspaces on one cache, producing the same keys at the same time, for R
// rounds. None fails, every workspace gets the same outputs, the cache
// verifies clean, and no published object is ever replaced (its inode
// stays the same from round to round: the first writer wins).
func TestConcurrentRunsOneCache(t *testing.T) {
	k, rounds := 4, 3
	if testing.Short() {
		rounds = 1
	}
	bin := buildCairn(t)
	root := t.TempDir()
	cacheDir := filepath.Join(root, "cache")
	var wss []string
	for i := 0; i < k; i++ {
		ws := filepath.Join(root, fmt.Sprintf("ws%d", i))
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "experiment.hcl"), []byte(teamSpec("")), 0o644); err != nil {
			t.Fatal(err)
		}
		wss = append(wss, ws)
	}
	inodes := map[string]uint64{}
	totalRan, replaced := 0, 0
	for r := 0; r < rounds; r++ {
		outs := make([][]byte, k)
		errs := make([]error, k)
		var wg sync.WaitGroup
		for i := range wss {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(bin, "run", "-j", "2", "-var", fmt.Sprintf("round=%d", r))
				cmd.Dir = wss[i]
				cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+cacheDir, "NO_COLOR=1")
				outs[i], errs[i] = cmd.CombinedOutput()
			}()
		}
		wg.Wait()
		ran := 0
		for i := range wss {
			if errs[i] != nil {
				t.Fatalf("round %d, workspace %d: %v\n%s", r, i, errs[i], outs[i])
			}
			n, _, _ := ranCounts(t, outs[i])
			ran += n
		}
		totalRan += ran
		want := outTexts(t, wss[0])
		if len(want) != 10 {
			t.Fatalf("round %d: %d outputs, want 10", r, len(want))
		}
		for i := 1; i < k; i++ {
			if diff := cmp.Diff(want, outTexts(t, wss[i])); diff != "" {
				t.Fatalf("round %d: workspace %d differs from workspace 0:\n%s", r, i, diff)
			}
		}
		// No object replaced: inodes seen in earlier rounds are unchanged.
		err := filepath.WalkDir(cacheDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(cacheDir, p)
			if top := strings.Split(rel, string(filepath.Separator))[0]; top != "cas" && top != "ac" {
				return nil
			}
			st, err := os.Lstat(p)
			if err != nil {
				return err
			}
			ino := st.Sys().(*syscall.Stat_t).Ino
			if old, ok := inodes[rel]; ok && old != ino {
				replaced++
				t.Errorf("%s was replaced in round %d", rel, r)
			}
			inodes[rel] = ino
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	verifyCache(t, cacheDir, 10*rounds)
	t.Logf("T6: %d runs × %d rounds, 0 failures, %d objects, %d phase executions for %d distinct results (%d duplicated), %d objects replaced",
		k, rounds, len(inodes), totalRan, 10*rounds, totalRan-10*rounds, replaced)
}
