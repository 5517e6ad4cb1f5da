package cache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// restoreArena is a temp directory holding dest (the restore root) and
// sentinel (a directory beside it that no restore may touch).
type restoreArena struct {
	base, dest, sentinel string
	before               string // snapshot of sentinel
}

func newRestoreArena(t *testing.T) *restoreArena {
	t.Helper()
	base := t.TempDir()
	a := &restoreArena{base: base, dest: filepath.Join(base, "dest"), sentinel: filepath.Join(base, "sentinel")}
	for _, d := range []string{a.dest, filepath.Join(a.sentinel, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"victim", "sub/victim"} {
		if err := os.WriteFile(filepath.Join(a.sentinel, f), []byte("keep "+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a.before = snapshot(t, a.sentinel)
	return a
}

// escapes counts what changed outside dest: entries of base other than
// dest and sentinel, and a changed sentinel. It returns a description.
func (a *restoreArena) escapes(t *testing.T) (int, string) {
	t.Helper()
	n := 0
	var what []string
	for _, name := range listDir(t, a.base) {
		if name != "dest" && name != "sentinel" {
			n++
			what = append(what, "created "+name+" beside dest")
		}
	}
	if now := snapshot(t, a.sentinel); now != a.before {
		n++
		what = append(what, "sentinel changed:\n"+now)
	}
	return n, strings.Join(what, "; ")
}

func (a *restoreArena) root(t *testing.T) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(a.dest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// snapshot lists every path under dir with its type, mode, link target
// and content hash.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// plantHostileEntry writes an entry with these outputs into the cache with a
// correct checksum and key, as an attacker with write access to a shared
// cache can, and returns its key.
func plantHostileEntry(t *testing.T, c *Dir, outputs []OutputFile) ActionID {
	t.Helper()
	comps := []Component{{Kind: "command", Value: fmt.Sprintf("planted %d", time.Now().UnixNano())}}
	e := &Entry{Format: EntryFormat, Key: ComputeKey(comps), Phase: "p", Components: comps, Outputs: outputs}
	p := c.entryPath(e.Key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, encodeUnchecked(t, e), 0o444); err != nil {
		t.Fatal(err)
	}
	return e.Key
}

// TestRestoreRejectsHostileTrees is T26 (and the manifest half of T27):
// each hostile output tree, planted in the cache with a valid checksum, is
// refused by GetEntry as corrupt; handed straight to RestoreTree it is
// refused before anything is written; the error names the entry; nothing
// appears outside dest.
func TestRestoreRejectsHostileTrees(t *testing.T) {
	c := newDir(t)
	d, err := c.PutBytes([]byte("pwned\n"))
	if err != nil {
		t.Fatal(err)
	}
	file := func(p string) OutputFile { return OutputFile{Path: p, Type: TypeFile, Mode: 0o644, Digest: d, Size: 6} }
	dir := func(p string) OutputFile { return OutputFile{Path: p, Type: TypeDir, Mode: 0o755} }
	link := func(p, target string) OutputFile {
		return OutputFile{Path: p, Type: TypeSymlink, Mode: 0o777, Target: target}
	}
	probe := newRestoreArena(t) // for absolute paths that must stay unwritten
	abs := filepath.Join(probe.base, "escaped")
	long := strings.Repeat("n", 300)
	cases := []struct {
		name  string
		tree  []OutputFile
		names string // what the error must quote
	}{
		{"dotdot", []OutputFile{file("../x")}, `"../x"`},
		{"dotdot-inner", []OutputFile{file("a/../../x")}, `"a/../../x"`},
		{"dotdot-unclean", []OutputFile{file("a/../x")}, `"a/../x"`},
		{"dotdot-alone", []OutputFile{file("..")}, `".."`},
		{"dot", []OutputFile{dir(".")}, `"."`},
		{"dot-prefix", []OutputFile{file("./x")}, `"./x"`},
		{"trailing-slash", []OutputFile{file("x/")}, `"x/"`},
		{"double-slash", []OutputFile{file("a//b")}, `"a//b"`},
		{"absolute", []OutputFile{file(abs)}, fmt.Sprintf("%q", abs)},
		{"absolute-double", []OutputFile{file("//x")}, `"//x"`},
		{"empty", []OutputFile{file("")}, `""`},
		{"windows-drive", []OutputFile{file(`C:\x`)}, `"C:\\x"`},
		{"backslash-dotdot", []OutputFile{file(`a\..\..\x`)}, `"a\\..\\..\\x"`},
		{"backslash-leading", []OutputFile{file(`..\x`)}, `"..\\x"`},
		{"nul", []OutputFile{file("a\x00b")}, `"a\x00b"`},
		{"long-name", []OutputFile{file(long)}, long},
		{"long-path", []OutputFile{file(strings.Repeat("abcdefgh/", 500) + "x")}, "over the 4096 limit"},
		{"case-collision", []OutputFile{file("Model.bin"), file("model.bin")}, `"Model.bin" and "model.bin"`},
		{"nfc-nfd-collision", []OutputFile{file("caf\u00e9"), file("cafe\u0301")}, fmt.Sprintf("%q and %q", "caf\u00e9", "cafe\u0301")},
		{"duplicate", []OutputFile{file("x"), file("x")}, `"x": listed twice`},
		{"duplicate-other-type", []OutputFile{file("x"), dir("x")}, `"x": listed twice`},
		{"beneath-file", []OutputFile{file("f"), file("f/x")}, `"f/x": beneath file "f"`},
		{"beneath-symlink", []OutputFile{link("l", "sub"), dir("sub"), file("l/x")}, `"l/x": beneath symlink "l"`},
		{"symlink-abs-then-file", []OutputFile{link("a", "/etc"), file("a/pwn")}, `"a"`},
		{"symlink-abs", []OutputFile{link("a", probe.sentinel)}, fmt.Sprintf("%q", probe.sentinel)},
		{"symlink-dotdot", []OutputFile{link("a", "../../outside")}, `"../../outside"`},
		{"symlink-dotdot-nested", []OutputFile{dir("a"), link("a/l", "../../x")}, `"../../x"`},
		{"symlink-dotdot-exact", []OutputFile{link("l", "..")}, `".."`},
		{"symlink-chain-dotdot", []OutputFile{dir("out"), dir("out/d"), link("out/d/l1", "l2/.."), link("out/d/l2", "../..")}, `"out/d/l1"`},
		{"symlink-chain-sibling", []OutputFile{dir("a"), link("a/up", ".."), link("a/l", "up/../x")}, `"a/l"`},
		{"symlink-backslash", []OutputFile{link("l", `..\..\x`)}, `"..\\..\\x"`},
		{"symlink-nul", []OutputFile{link("l", "a\x00b")}, `"a\x00b"`},
		{"symlink-empty", []OutputFile{link("l", "")}, `"l"`},
		{"device", []OutputFile{{Path: "dev", Type: "chardev", Mode: 0o644}}, `"dev"`},
		{"fifo", []OutputFile{{Path: "fifo", Type: "fifo", Mode: 0o644}}, `"fifo"`},
		{"hardlink", []OutputFile{{Path: "h", Type: "hardlink", Mode: 0o644, Target: "../x"}}, `"h"`},
		{"setuid", []OutputFile{{Path: "s", Type: TypeFile, Mode: 0o4755, Digest: d, Size: 6}}, `"s"`},
		{"file-without-digest", []OutputFile{{Path: "f", Type: TypeFile, Mode: 0o644}}, `"f"`},
		{"negative-size", []OutputFile{{Path: "f", Type: TypeFile, Mode: 0o644, Digest: d, Size: -1}}, `"f"`},
		{"dir-with-target", []OutputFile{{Path: "d", Type: TypeDir, Mode: 0o755, Target: "../x"}}, `"d"`},
	}
	rejected := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The benign file first: a restore that wrote entries one by
			// one before checking would leave it in dest.
			tree := append([]OutputFile{file("aaa-benign")}, tc.tree...)
			key := plantHostileEntry(t, c, tree)
			_, err := c.GetEntry(key)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("GetEntry of a planted entry = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("GetEntry error does not name %s:\n%v", tc.names, err)
			}

			a := newRestoreArena(t)
			err = c.RestoreTree(context.Background(), a.root(t), tree, nil)
			if err == nil {
				t.Fatal("RestoreTree accepted the tree")
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("RestoreTree error does not name %s:\n%v", tc.names, err)
			}
			if got := listDir(t, a.dest); len(got) != 0 {
				t.Errorf("RestoreTree wrote %q before refusing", got)
			}
			if n, what := a.escapes(t); n != 0 {
				t.Errorf("restore reached outside dest: %s", what)
			}
			if n, what := probe.escapes(t); n != 0 {
				t.Errorf("restore reached outside dest: %s", what)
			}
			if !t.Failed() {
				rejected++
			}
		})
	}
	t.Logf("FIGURE T26 cases=%d rejected=%d sentinel_changes=0", len(cases), rejected)
}

// TestRestoreLinksInWorkspace is T27's workspace half: links that are
// already in the destination never carry a restore outside it.
func TestRestoreLinksInWorkspace(t *testing.T) {
	c := newDir(t)
	content := []byte("restored\n")
	d, err := c.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	file := func(p string) OutputFile {
		return OutputFile{Path: p, Type: TypeFile, Mode: 0o644, Digest: d, Size: int64(len(content))}
	}
	dir := func(p string) OutputFile { return OutputFile{Path: p, Type: TypeDir, Mode: 0o755} }
	type testCase struct {
		name    string
		prepare func(a *restoreArena) error
		tree    []OutputFile
		wantErr bool
		check   func(t *testing.T, a *restoreArena) // after a successful restore
	}
	regular := func(rel string) func(t *testing.T, a *restoreArena) {
		return func(t *testing.T, a *restoreArena) {
			p := filepath.Join(a.dest, rel)
			fi, err := os.Lstat(p)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("%s: %v, %v; want a regular file", rel, fi, err)
			}
			if b, _ := os.ReadFile(p); string(b) != string(content) {
				t.Errorf("%s = %q", rel, b)
			}
		}
	}
	cases := []testCase{
		{
			name:    "parent-symlink-relative",
			prepare: func(a *restoreArena) error { return os.Symlink("../sentinel", filepath.Join(a.dest, "out")) },
			tree:    []OutputFile{file("out/pwn")},
			wantErr: true,
		},
		{
			name:    "parent-symlink-absolute",
			prepare: func(a *restoreArena) error { return os.Symlink(a.sentinel, filepath.Join(a.dest, "out")) },
			tree:    []OutputFile{file("out/sub/victim")},
			wantErr: true,
		},
		{
			name:    "dir-output-is-symlink",
			prepare: func(a *restoreArena) error { return os.Symlink(a.sentinel, filepath.Join(a.dest, "out")) },
			tree:    []OutputFile{dir("out"), file("out/victim")},
			wantErr: true,
		},
		{
			name: "grandparent-symlink",
			prepare: func(a *restoreArena) error {
				if err := os.Mkdir(filepath.Join(a.dest, "a"), 0o755); err != nil {
					return err
				}
				return os.Symlink("../../sentinel", filepath.Join(a.dest, "a", "b"))
			},
			tree:    []OutputFile{file("a/b/sub/new")},
			wantErr: true,
		},
		{
			name: "file-is-symlink-outside",
			prepare: func(a *restoreArena) error {
				return os.Symlink(filepath.Join(a.sentinel, "victim"), filepath.Join(a.dest, "f"))
			},
			tree:  []OutputFile{file("f")},
			check: regular("f"),
		},
		{
			name: "file-is-hardlink-outside",
			prepare: func(a *restoreArena) error {
				return os.Link(filepath.Join(a.sentinel, "victim"), filepath.Join(a.dest, "f"))
			},
			tree:  []OutputFile{file("f")},
			check: regular("f"),
		},
		{
			name: "symlink-chain-inside",
			prepare: func(a *restoreArena) error {
				if err := os.Mkdir(filepath.Join(a.dest, "real"), 0o755); err != nil {
					return err
				}
				prev := "real"
				for i := range 12 { // beyond os.Root's and many kernels' hop limits
					name := fmt.Sprintf("hop%02d", i)
					if err := os.Symlink(prev, filepath.Join(a.dest, name)); err != nil {
						return err
					}
					prev = name
				}
				return nil
			},
			tree: []OutputFile{file("hop11/x")},
			// Either outcome is safe: a long chain inside dest may be
			// followed or refused; what matters is that nothing escapes.
		},
		{
			name: "symlink-loop",
			prepare: func(a *restoreArena) error {
				if err := os.Symlink("l2", filepath.Join(a.dest, "l1")); err != nil {
					return err
				}
				return os.Symlink("l1", filepath.Join(a.dest, "l2"))
			},
			tree:    []OutputFile{file("l1/x")},
			wantErr: true,
		},
		{
			name: "symlink-inside-is-followed",
			prepare: func(a *restoreArena) error {
				if err := os.Mkdir(filepath.Join(a.dest, "real"), 0o755); err != nil {
					return err
				}
				return os.Symlink("real", filepath.Join(a.dest, "link"))
			},
			tree:  []OutputFile{file("link/x")},
			check: regular("real/x"),
		},
		{
			name: "entry-links-not-followed",
			tree: []OutputFile{
				dir("a"),
				{Path: "a/loop1", Type: TypeSymlink, Mode: 0o777, Target: "loop2"},
				{Path: "a/loop2", Type: TypeSymlink, Mode: 0o777, Target: "loop1"},
				{Path: "a/up", Type: TypeSymlink, Mode: 0o777, Target: "../b"},
				dir("b"),
				file("b/x"),
			},
			check: regular("b/x"),
		},
	}
	escapes := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newRestoreArena(t)
			if tc.prepare != nil {
				if err := tc.prepare(a); err != nil {
					t.Fatal(err)
				}
			}
			err := c.RestoreTree(context.Background(), a.root(t), tc.tree, nil)
			if n, what := a.escapes(t); n != 0 {
				escapes += n
				t.Errorf("restore reached outside dest: %s", what)
			}
			switch {
			case tc.wantErr && err == nil:
				t.Error("RestoreTree succeeded, want an error")
			case tc.check != nil && err != nil:
				t.Fatalf("RestoreTree: %v", err)
			case tc.check != nil:
				tc.check(t, a)
			}
		})
	}
	t.Logf("FIGURE T27 cases=%d escapes=%d", len(cases), escapes)
}

// TestRestoreSymlinkSwapRace is T28: while files are restored into
// dest/sub, a goroutine keeps exchanging dest/sub with a symlink to the
// sentinel directory. Nothing may land in the sentinel. The negative
// control, a naive extractor (filepath.Join and os.Create) under the same
// race, must be caught escaping, which shows the race is real.
func TestRestoreSymlinkSwapRace(t *testing.T) {
	races := 200
	if longTier() {
		races = 2000
	}
	c := newDir(t)
	content := []byte("payload\n")
	d, err := c.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()

	a := newRestoreArena(t)
	root := a.root(t)
	ours := swapRace(t, a, races, 1000, func(i int) error {
		return c.RestoreTree(context.Background(), root, []OutputFile{
			{Path: "sub", Type: TypeDir, Mode: 0o755},
			{Path: fmt.Sprintf("sub/f%05d", i), Type: TypeFile, Mode: 0o644, Digest: d, Size: int64(len(content))},
		}, nil)
	})
	n, what := a.escapes(t)
	if n != 0 {
		t.Errorf("restore through os.Root wrote outside dest under the swap race: %s", what)
	}
	// Every restore that reported success left its file in the real sub.
	for _, i := range ours.ok {
		p := filepath.Join(a.dest, "sub", fmt.Sprintf("f%05d", i))
		if b, err := os.ReadFile(p); err != nil || string(b) != string(content) {
			t.Errorf("restore %d reported success, but %s: %q, %v", i, p, b, err)
			break
		}
	}

	naive := newRestoreArena(t)
	ctl := swapRace(t, naive, races, 1000, func(i int) error {
		dir := filepath.Join(naive.dest, "sub")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), content, 0o644)
	})
	naiveEscapes := len(listDir(t, naive.sentinel)) - 2 // beyond victim and sub
	naiveEscapes += len(listDir(t, filepath.Join(naive.sentinel, "sub"))) - 1
	for try := 0; naiveEscapes == 0 && try < 20; try++ {
		more := swapRace(t, naive, races, 1000, func(i int) error {
			return os.WriteFile(filepath.Join(naive.dest, "sub", fmt.Sprintf("g%d-%05d", try, i)), content, 0o644)
		})
		ctl.swaps += more.swaps
		naiveEscapes = len(listDir(t, naive.sentinel)) - 2 + len(listDir(t, filepath.Join(naive.sentinel, "sub"))) - 1
	}
	if naiveEscapes == 0 {
		t.Errorf("negative control: the naive extractor never escaped in %d swaps; the race does not test anything", ctl.swaps)
	}
	t.Logf("FIGURE T28 races=%d files=%d restored=%d refused=%d escapes=%d naive_escapes=%d wall=%.1fs",
		ours.swaps, ours.files, len(ours.ok), ours.failed, n, naiveEscapes, time.Since(start).Seconds())
}

type raceResult struct {
	swaps, files, failed int
	ok                   []int
}

// swapRace calls restore(i) for i = 0, 1, ... (at least files times, and
// until the swapper has made at least races swaps) while a goroutine
// exchanges a.dest/sub with a symlink to a.sentinel, with
// renameat2(RENAME_EXCHANGE) so sub is at every moment either the real
// directory or the link. When it returns, sub is the real directory again.
func swapRace(t *testing.T, a *restoreArena, races, files int, restore func(i int) error) raceResult {
	t.Helper()
	sub := filepath.Join(a.dest, "sub")
	swap := filepath.Join(a.dest, "swap")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(swap)
	if err := os.Symlink("../sentinel", swap); err != nil {
		t.Fatal(err)
	}
	var swaps atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swapErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Two exchanges: sub becomes the link, then the directory again.
			for range 2 {
				if err := unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
					swapErr = err
					return
				}
			}
			swaps.Add(1)
		}
	}()
	var res raceResult
	for i := 0; i < files || swaps.Load() < int64(races); i++ {
		res.files++
		if err := restore(i); err != nil {
			res.failed++
		} else {
			res.ok = append(res.ok, i)
		}
		if i > 100*files {
			break
		}
	}
	close(stop)
	wg.Wait()
	if swapErr != nil {
		t.Fatalf("renameat2(RENAME_EXCHANGE): %v", swapErr)
	}
	res.swaps = int(swaps.Load())
	if fi, err := os.Lstat(sub); err != nil || !fi.IsDir() {
		t.Fatalf("after the race %s is %v, %v; want the directory", sub, fi, err)
	}
	if err := os.Remove(swap); err != nil {
		t.Fatal(err)
	}
	return res
}

// FuzzRestoreTree (T31's FuzzExtract for our manifest format): a tree read
// from arbitrary text, one "type path [target]" per line, restored into a
// fresh root beside a sentinel: it may be refused, or fail half way, but
// nothing may ever appear outside dest.
func FuzzRestoreTree(f *testing.F) {
	f.Add("dir a\nfile a/x\nsymlink a/l x\n")
	f.Add("file ../x\n")
	f.Add("symlink a ..\nfile a/pwn\n")
	f.Add("symlink out ../sentinel\nfile out/victim\n")
	f.Add("dir Model\nfile model/x\n")
	c := newDir(f)
	d, err := c.PutBytes([]byte("fuzz\n"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var tree []OutputFile
		for line := range strings.SplitSeq(text, "\n") {
			fields := strings.SplitN(line, " ", 3)
			if len(fields) < 2 {
				continue
			}
			o := OutputFile{Type: fields[0], Path: fields[1], Mode: 0o755}
			switch o.Type {
			case TypeFile:
				o.Mode, o.Digest, o.Size = 0o644, d, 5
			case TypeSymlink:
				o.Mode = 0o777
				if len(fields) == 3 {
					o.Target = fields[2]
				}
			}
			tree = append(tree, o)
		}
		a := newRestoreArena(t)
		// A symlink already in dest, pointing at the sentinel, as a
		// hostile workspace could hold.
		if err := os.Symlink("../sentinel", filepath.Join(a.dest, "out")); err != nil {
			t.Fatal(err)
		}
		_ = c.RestoreTree(context.Background(), a.root(t), tree, nil)
		if n, what := a.escapes(t); n != 0 {
			t.Fatalf("tree %q reached outside dest: %s", text, what)
		}
	})
}
