package upkeep

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/google/go-cmp/cmp"
)

// injection is one corruption class of RELIABILITY.md T11. other is the
// path of another valid object of the same kind.
type injection struct {
	name   string
	apply  func(t *testing.T, p, other string)
	noRoot bool // cannot be injected when running as root
}

func writable(t *testing.T, p string) int64 {
	t.Helper()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func truncateTo(t *testing.T, p string, size func(int64) int64) {
	t.Helper()
	if err := os.Truncate(p, size(writable(t, p))); err != nil {
		t.Fatal(err)
	}
}

var injections = []injection{
	{name: "bit flip", apply: func(t *testing.T, p, _ string) {
		n := writable(t, p)
		corruptFile(t, p, n/2)
	}},
	{name: "truncate 1 byte", apply: func(t *testing.T, p, _ string) { truncateTo(t, p, func(n int64) int64 { return n - 1 }) }},
	{name: "truncate half", apply: func(t *testing.T, p, _ string) { truncateTo(t, p, func(n int64) int64 { return n / 2 }) }},
	{name: "zero length", apply: func(t *testing.T, p, _ string) { truncateTo(t, p, func(int64) int64 { return 0 }) }},
	{name: "same-size overwrite", apply: func(t *testing.T, p, _ string) {
		n := writable(t, p)
		if err := os.WriteFile(p, bytes.Repeat([]byte("X"), int(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "append", apply: func(t *testing.T, p, _ string) {
		writable(t, p)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("appended\n"))
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "symlink to another object", apply: func(t *testing.T, p, other string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(other, p); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "directory", apply: func(t *testing.T, p, _ string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "unreadable", noRoot: true, apply: func(t *testing.T, p, _ string) {
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
	}},
}

// verifyClasses returns the problems Verify reports for id, as "class".
func verifyClasses(t *testing.T, c *cache.Dir, id string) string {
	t.Helper()
	rep, err := Verify(c, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		if p.ID == id {
			got = append(got, string(p.Class))
		}
	}
	if len(got) == 0 {
		return "MISSED"
	}
	return strings.Join(got, "+")
}

// checkMiss checks a lookup of a damaged object failed as a miss, and that
// the damaged object was moved out of the way.
func checkMiss(t *testing.T, c *cache.Dir, what string, err error, p string) string {
	t.Helper()
	if err == nil {
		t.Errorf("%s of a damaged object succeeded", what)
		return "HIT"
	}
	if !errors.Is(err, cache.ErrCorrupt) && !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("%s = %v, want a miss (ErrCorrupt or ErrNotFound)", what, err)
		return "ERROR"
	}
	if _, lerr := os.Lstat(p); !errors.Is(lerr, os.ErrNotExist) {
		t.Errorf("%s: damaged object still in place (%v)", what, lerr)
		return "miss, not quarantined"
	}
	if q := listDir(t, filepath.Join(c.Root(), cache.QuarantineDir)); len(q) == 0 {
		t.Errorf("%s: quarantine/ is empty", what)
	}
	return "miss+quarantined"
}

// TestCorruptionClasses is T11: every corruption class, injected into raw
// blobs, compressed blobs and entries, is a miss on lookup, is moved to
// quarantine, is found by Verify, and heals with the next put.
func TestCorruptionClasses(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	table := map[string]map[string]string{} // class → target → result
	record := func(class, target, result string) {
		mu.Lock()
		defer mu.Unlock()
		if table[class] == nil {
			table[class] = map[string]string{}
		}
		table[class][target] = result
	}
	targets := []string{"blob raw", "blob zst", "entry", "packed entry"}
	t.Cleanup(func() {
		var b strings.Builder
		fmt.Fprintf(&b, "T11 corruption class × detected (lookup; verify):\n%-26s", "class")
		for _, tg := range targets {
			fmt.Fprintf(&b, " | %-44s", tg)
		}
		for _, inj := range injections {
			fmt.Fprintf(&b, "\n%-26s", inj.name)
			for _, tg := range targets {
				fmt.Fprintf(&b, " | %-44s", table[inj.name][tg])
			}
		}
		t.Log(b.String())
	})
	root := os.Geteuid() == 0
	for _, inj := range injections {
		for _, target := range targets {
			t.Run(inj.name+"/"+target, func(t *testing.T) {
				t.Parallel()
				if inj.noRoot && root {
					record(inj.name, target, "skipped: root reads mode 000 files")
					t.Skip("running as root, which reads files whatever their mode: the unreadable class cannot be injected")
				}
				c := newDir(t)
				switch target {
				case "entry":
					record(inj.name, target, corruptEntryClass(t, c, inj))
				case "packed entry":
					record(inj.name, target, corruptPackedClass(t, c, inj))
				default:
					record(inj.name, target, corruptBlobClass(t, c, inj, target == "blob zst"))
				}
			})
		}
	}
}

func corruptBlobClass(t *testing.T, c *cache.Dir, inj injection, compressed bool) string {
	content := randomBytes(t, 4096)
	if compressed {
		content = textBytes(64 << 10)
	}
	d, err := c.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	p := blobPath(c, d, compressed)
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("blob not stored in the expected form: %v", err)
	}
	otherD, err := c.PutBytes([]byte("another blob"))
	if err != nil {
		t.Fatal(err)
	}
	other := blobPath(c, otherD, false)
	var results []string
	for _, via := range []string{"ReadBlob", "RestoreFile"} {
		inj.apply(t, p, other)
		verified := verifyClasses(t, c, d.String())
		var err error
		if via == "ReadBlob" {
			var got []byte
			got, err = c.ReadBlob(d)
			if err == nil && !bytes.Equal(got, content) {
				t.Fatalf("ReadBlob returned wrong bytes")
			}
		} else {
			dst := filepath.Join(t.TempDir(), "out")
			err = c.RestoreFile(d, dst, 0o644)
			if _, serr := os.Lstat(dst); err != nil && !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("RestoreFile wrote %s from a damaged blob", dst)
			}
		}
		results = append(results, via+": "+checkMiss(t, c, via, err, p)+"; verify: "+verified)
		if _, err := c.PutBytes(content); err != nil {
			t.Fatalf("re-put after %s: %v", inj.name, err)
		}
		got, err := c.ReadBlob(d)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("ReadBlob after re-put: %d bytes, %v", len(got), err)
		}
		if _, err := os.Lstat(p); err != nil { // damaged again for the next lookup
			t.Fatalf("re-put stored another form: %v", err)
		}
	}
	return strings.Join(results, " / ")
}

// corruptPackedClass damages the pack holding an entry: the pack holds
// only that entry's record (another entry went to another process's pack),
// so the damage hits the record, except for bytes appended after it: a
// pack's tail beyond its last record is where a crashed writer leaves a
// torn record, not damage, and the entry stays a hit.
func corruptPackedClass(t *testing.T, c *cache.Dir, inj injection) string {
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	c2, err := cache.Open(c.Root())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	other := testEntry("other", cache.HashBytes([]byte("weights")))
	if err := c2.PutEntry(other); err != nil {
		t.Fatal(err)
	}
	p := entryPath(c, e.Key)
	if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte(packHeader)) {
		t.Fatalf("entry not stored in a pack: %q, %v", b[:min(len(b), 16)], err)
	}
	inj.apply(t, p, entryPath(c, other.Key))
	verified := verifyClasses(t, c, e.Key.String())
	got, err := c.GetEntry(e.Key)
	var result string
	if inj.name == "append" {
		if err != nil || !cmp.Equal(e, got) || verified != "MISSED" {
			t.Errorf("bytes appended after a pack's last record: GetEntry = %v, verify %s; want the entry, and nothing reported", err, verified)
		}
		result = "GetEntry: hit (tail not damage); verify: none"
	} else {
		result = "GetEntry: " + checkMiss(t, c, "GetEntry", err, p) + "; verify: " + verified
	}
	if err := c.PutEntry(e); err != nil {
		t.Fatalf("re-put after %s: %v", inj.name, err)
	}
	got, err = c.GetEntry(e.Key)
	if err != nil {
		t.Fatalf("GetEntry after re-put: %v", err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("GetEntry after re-put (-want +got):\n%s", diff)
	}
	if _, err := c2.GetEntry(other.Key); err != nil && inj.name != "symlink to another object" {
		t.Errorf("the entry in the other pack: %v", err)
	}
	return result
}

// corruptEntryClass damages an entry stored as a file of its own (formats
// 1 and 2, as where packs are impossible); corruptPackedClass one in a pack.
func corruptEntryClass(t *testing.T, c *cache.Dir, inj injection) string {
	e := putSample(t, c)
	plantEntry(t, c, e, time.Time{})
	other := testEntry("other", cache.HashBytes([]byte("weights")))
	plantEntry(t, c, other, time.Time{})
	p := entryPath(c, e.Key)
	inj.apply(t, p, entryPath(c, other.Key))
	verified := verifyClasses(t, c, e.Key.String())
	_, err := c.GetEntry(e.Key)
	result := "GetEntry: " + checkMiss(t, c, "GetEntry", err, p) + "; verify: " + verified
	if err := c.PutEntry(e); err != nil {
		t.Fatalf("re-put after %s: %v", inj.name, err)
	}
	got, err := c.GetEntry(e.Key)
	if err != nil {
		t.Fatalf("GetEntry after re-put: %v", err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("GetEntry after re-put (-want +got):\n%s", diff)
	}
	return result
}

func TestVerifyExitCode(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		classes  []ProblemClass
		repaired bool
		want     int
	}{
		"clean":              {nil, false, 0},
		"corrupt":            {[]ProblemClass{ProblemCorrupt}, false, 1},
		"dangling, bad-perm": {[]ProblemClass{ProblemDangling, ProblemBadPerm}, false, 1},
		"orphan temp":        {[]ProblemClass{ProblemOrphanTemp}, false, 1},
		"untrusted":          {[]ProblemClass{ProblemUntrusted}, false, 2},
		"io error":           {[]ProblemClass{ProblemIOError}, false, 4},
		"all":                {[]ProblemClass{ProblemIOError, ProblemUntrusted, ProblemCorrupt}, false, 7},
		"all repaired":       {[]ProblemClass{ProblemUntrusted, ProblemCorrupt}, true, 0},
	}
	for name, tt := range tests {
		var r VerifyReport
		for _, c := range tt.classes {
			p := Problem{Class: c}
			if tt.repaired {
				p.Repair = "done"
			}
			r.Problems = append(r.Problems, p)
		}
		if got := r.ExitCode(); got != tt.want {
			t.Errorf("%s: ExitCode = %d, want %d", name, got, tt.want)
		}
	}
}

func TestSubset(t *testing.T) {
	t.Parallel()
	const m = 10
	counts := make([]int, m)
	for i := range 2000 {
		d := cache.HashBytes([]byte(fmt.Sprint(i)))
		n := 0
		for k := 1; k <= m; k++ {
			if (Subset{k, m}).has(d) {
				counts[k-1]++
				n++
			}
		}
		if n != 1 {
			t.Fatalf("digest %s is in %d of the %d subsets, want exactly 1", d.Short(), n, m)
		}
		if !(Subset{}).has(d) {
			t.Fatal("the zero Subset must hold every digest")
		}
	}
	for k, n := range counts {
		if n < 120 || n > 280 {
			t.Errorf("subset %d/%d holds %d of 2000 digests", k+1, m, n)
		}
	}
}

// problemSet renders problems as sorted "class kind id" lines.
func problemSet(ps []Problem) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %s %s", p.Class, p.Kind, p.ID))
	}
	sort.Strings(out)
	return out
}

// TestVerifyFindsInjected is T12: Verify on a cache of 2,000 objects
// reports exactly the injected problems; Verify with Repair fixes them all;
// a third Verify is clean.
func TestVerifyFindsInjected(t *testing.T) {
	t.Parallel()
	key := []byte("team key")
	c, err := cache.OpenWith(filepath.Join(t.TempDir(), "cache"), cache.Options{Shared: true, SigningKey: key, RequireSigned: true})
	if err != nil {
		t.Fatal(err)
	}
	const nEntries, nOrphans = 600, 200
	entries := make([]*cache.Entry, nEntries)
	for i := range entries {
		content := fmt.Appendf(nil, "output %d\n", i)
		compressed := i%3 == 0
		if compressed {
			content = append(content, textBytes(300)...)
		}
		out := plantBlob(t, c, content, compressed, time.Time{})
		e := testEntry(fmt.Sprint("t12 ", i), out)
		e.Stdout = plantBlob(t, c, fmt.Appendf(nil, "log %d", i), false, time.Time{})
		plantSignedEntry(t, c, key, e, time.Time{})
		entries[i] = e
	}
	orphans := make([]string, nOrphans) // paths
	orphanIDs := make([]string, nOrphans)
	for i := range orphans {
		compressed := i%2 == 1
		content := fmt.Appendf(nil, "orphan %d\n%s", i, textBytes(200))
		d := plantBlob(t, c, content, compressed, time.Time{})
		orphans[i], orphanIDs[i] = blobPath(c, d, compressed), d.String()
	}
	outPath := func(i int) string {
		d := entries[i].Outputs[0].Digest
		p, ok := statBlob(c, d)
		if !ok {
			t.Fatalf("output of entry %d missing", i)
		}
		return p
	}
	ek := func(i int) string { return entries[i].Key.String() }
	od := func(i int) string { return entries[i].Outputs[0].Digest.String() }

	var want []string
	byName := map[string]injection{}
	for _, inj := range injections {
		byName[inj.name] = inj
	}
	// Blob corruptions: on unreferenced blobs (orphans 0-7) and on two
	// referenced ones. A blob that no longer looks present (zero length)
	// also makes its entry dangling.
	for i, inj := range injections {
		if inj.noRoot {
			continue
		}
		inj.apply(t, orphans[i], orphans[100])
		want = append(want, "corrupt blob "+orphanIDs[i])
	}
	byName["zero length"].apply(t, outPath(0), "")
	want = append(want, "corrupt blob "+od(0), "dangling entry "+ek(0))
	flipped := outPath(1)
	byName["bit flip"].apply(t, flipped, "")
	want = append(want, "corrupt blob "+od(1))
	// Entry corruptions on entries 10-17.
	for i, inj := range injections {
		if inj.noRoot {
			continue
		}
		inj.apply(t, entryPath(c, entries[10+i].Key), entryPath(c, entries[20].Key))
		want = append(want, "corrupt entry "+ek(10+i))
	}
	// Dangling: entries 30-34 lose their stdout blob.
	for i := 30; i < 35; i++ {
		os.Remove(blobPath(c, entries[i].Stdout, false))
		want = append(want, "dangling entry "+ek(i))
	}
	// Untrusted: unsigned, and signed with another key.
	for i := 40; i < 43; i++ {
		b, err := cache.EncodeEntry(entries[i])
		if err != nil {
			t.Fatal(err)
		}
		replaceFile(t, entryPath(c, entries[i].Key), b)
		want = append(want, "untrusted entry "+ek(i))
	}
	b, _ := cache.EncodeEntry(entries[43])
	replaceFile(t, entryPath(c, entries[43].Key), sign([]byte("another key"), b))
	want = append(want, "untrusted entry "+ek(43))
	// Orphaned temp files, and writes in flight.
	now := time.Now()
	for i := range 4 {
		name := fmt.Sprintf("blob-%016x", i)
		plantTemp(t, c, name, now.Add(-2*time.Hour))
		want = append(want, "orphan-tmp temp "+name)
	}
	plantTemp(t, c, "blob-inflight1", now)
	plantTemp(t, c, "entry-inflight2", now.Add(-time.Minute))
	// Bad permissions in a shared cache.
	for _, i := range []int{50, 51} {
		os.Chmod(outPath(i), 0o400)
		want = append(want, "bad-perm blob "+od(i))
	}
	os.Chmod(entryPath(c, entries[52].Key), 0o400)
	want = append(want, "bad-perm entry "+ek(52))
	shard := filepath.Dir(entryPath(c, entries[53].Key))
	os.Chmod(shard, 0o755)
	want = append(want, "bad-perm dir "+filepath.Base(shard))
	// Stray names.
	stray := filepath.Join(filepath.Dir(orphans[150]), "README")
	os.WriteFile(stray, []byte("hi"), 0o444)
	os.Mkdir(filepath.Join(c.Root(), cache.CASDir, "zz"), 0o755)
	want = append(want, "corrupt blob README", "corrupt blob zz")
	if os.Geteuid() != 0 {
		os.Chmod(orphans[120], 0)
		want = append(want, "bad-perm blob "+orphanIDs[120])
	} else {
		t.Log("running as root: no unreadable object injected (root reads mode 000 files)")
	}
	sort.Strings(want)

	var calls, last int
	rep, err := Verify(c, VerifyOptions{Progress: func(done, total int) { calls++; last = total }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, problemSet(rep.Problems)); diff != "" {
		t.Errorf("Verify problems (-injected +reported):\n%s", diff)
	}
	tp, fp := 0, 0
	wantSet := map[string]bool{}
	for _, w := range want {
		wantSet[w] = true
	}
	for _, g := range problemSet(rep.Problems) {
		if wantSet[g] {
			tp++
		} else {
			fp++
		}
	}
	objects := rep.Blobs + rep.Entries
	t.Logf("T12: %d objects (%d blobs, %d entries, %d bytes, %d compressed) verified in %v: %.0f objects/s, %.1f MB/s; %d injected, %d reported; precision %.2f, recall %.2f",
		objects, rep.Blobs, rep.Entries, rep.Bytes, rep.CompressedBytes, rep.Elapsed,
		float64(objects)/rep.Elapsed.Seconds(), float64(rep.ReadBytes)/1e6/rep.Elapsed.Seconds(),
		len(want), len(rep.Problems), float64(tp)/float64(max(1, tp+fp)), float64(tp)/float64(len(want)))
	if got := rep.ExitCode(); got != 3 {
		t.Errorf("ExitCode = %d, want 3 (corrupt and untrusted)", got)
	}
	if objects < 1990 || calls != objects || last != objects {
		t.Errorf("%d objects, Progress called %d times with total %d", objects, calls, last)
	}
	if rep.InFlight != 2 {
		t.Errorf("InFlight = %d, want 2", rep.InFlight)
	}

	repaired, err := Verify(c, VerifyOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	// Quarantining entry 1's blob leaves entry 1 dangling: repair finds
	// and quarantines it too.
	wantRepair := append([]string{"dangling entry " + ek(1)}, want...)
	sort.Strings(wantRepair)
	if diff := cmp.Diff(wantRepair, problemSet(repaired.Problems)); diff != "" {
		t.Errorf("Verify{Repair} problems (-want +got):\n%s", diff)
	}
	for _, p := range repaired.Problems {
		if p.Repair == "" {
			t.Errorf("not repaired: %+v", p)
		}
	}
	if got := repaired.ExitCode(); got != 0 {
		t.Errorf("ExitCode after repair = %d, want 0", got)
	}

	again, err := Verify(c, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Problems) != 0 || again.ExitCode() != 0 {
		t.Errorf("Verify after repair: %d problems, exit %d; want clean:\n%s", len(again.Problems), again.ExitCode(), strings.Join(problemSet(again.Problems), "\n"))
	}
	// What was repaired is a miss now, or usable again.
	if _, err := c.GetEntry(entries[10].Key); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("GetEntry of a quarantined entry = %v, want ErrNotFound", err)
	}
	if _, err := c.GetEntry(entries[52].Key); err != nil {
		t.Errorf("GetEntry of an entry whose mode was fixed = %v", err)
	}

	sub, err := Verify(c, VerifyOptions{Subset: Subset{1, 10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("T12: --subset 1/10 read %d of %d blobs in %v (full: %v)", sub.BlobsRead, sub.Blobs, sub.Elapsed, rep.Elapsed)
	if sub.BlobsRead > sub.Blobs/5 || sub.BlobsRead < sub.Blobs/20 {
		t.Errorf("subset 1/10 read %d of %d blobs", sub.BlobsRead, sub.Blobs)
	}
}
