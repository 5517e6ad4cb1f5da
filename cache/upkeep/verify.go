package upkeep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cairn-run/cairn/cache"
)

// ProblemClass says what kind of problem Verify found.
type ProblemClass string

const (
	// ProblemCorrupt: a blob whose content does not hash to its name or
	// does not decode, an entry that fails DecodeEntry or is stored under
	// another key, a name in cas/ or ac/ that is not an object name, or
	// something other than a regular file where an object belongs.
	ProblemCorrupt ProblemClass = "corrupt"
	// ProblemDangling: an entry referencing a blob that is not in the
	// cache (a reader treats it as corrupt).
	ProblemDangling ProblemClass = "dangling"
	// ProblemUntrusted: an unsigned entry, or one signed with another
	// key, while Options.RequireSigned is set.
	ProblemUntrusted ProblemClass = "untrusted"
	// ProblemOrphanTemp: a temp file older than TempGrace, left by a
	// crashed write.
	ProblemOrphanTemp ProblemClass = "orphan-tmp"
	// ProblemBadPerm: in a shared cache, a directory that is not setgid
	// and group-writable, an object that is not group-readable, or a
	// session or lock file that is not group-writable; in any cache, an
	// object this user cannot read.
	ProblemBadPerm ProblemClass = "bad-perm"
	// ProblemIOError: reading failed for a reason that says nothing about
	// the object (EIO, a vanished mount).
	ProblemIOError ProblemClass = "io-error"
)

// Problem is one thing Verify found wrong.
type Problem struct {
	Class ProblemClass
	Kind  string // "blob", "entry", "temp", "dir", "session" or "lock"
	ID    string // the digest or key in hex; the file name if it is not an object name
	Path  string
	Cause string // what is wrong, for people
	// Repair says what Verify did about it with VerifyOptions.Repair
	// ("quarantined to …", "removed", "mode set to 0440"); empty if
	// nothing was done.
	Repair string
}

// Subset selects the blobs whose content Verify reads: blob N of every M
// (1 ≤ N ≤ M), by digest, so that running 1/M … M/M covers every blob
// once. The zero Subset reads all blobs.
type Subset struct{ N, M int }

func (s Subset) has(d cache.Digest) bool {
	if s.M <= 1 {
		return true
	}
	return binary.BigEndian.Uint64(d[:8])%uint64(s.M) == uint64(s.N-1)
}

// VerifyOptions controls Verify.
type VerifyOptions struct {
	// Repair moves corrupt, dangling and untrusted objects (and unreadable
	// ones) to quarantine/, refetching quarantined blobs through Refetch
	// if set; removes orphaned temp files; and fixes the modes of files
	// and directories this user owns.
	Repair bool
	// Refetch, if set, puts a good copy of a quarantined blob back (from
	// the remote cache level).
	Refetch func(cache.Digest) error
	// Subset limits which blobs' content is read and hashed; every blob
	// is still checked for its name, type and mode, and every entry is
	// checked in full.
	Subset Subset
	// Progress, if set, is called after each object with the number
	// checked so far and the total.
	Progress func(done, total int)
	// Now returns the current time, to age temp files; nil means
	// time.Now. For tests.
	Now func() time.Time
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Problems []Problem // sorted by path

	Blobs           int   // blob files found
	BlobsRead       int   // blob files whose content was read and hashed (see Subset)
	Entries         int   // entry files found
	Bytes           int64 // on-disk size of the blobs and entries found
	CompressedBytes int64 // on-disk size of the compressed blobs
	ReadBytes       int64 // bytes read and hashed or decoded
	InFlight        int   // temp files younger than TempGrace (writes in progress) and temp names of packs with published names: not a problem
	Quarantined     int   // objects in quarantine/
	NewerEntries    int   // entries in a newer format, left alone
	// Signers counts the entries that decoded by the writer's key that
	// signed them (its comment and fingerprint when the cache trusts it,
	// else its fingerprint alone); entries no writer signed are not
	// counted here.
	Signers []SignerCount `json:",omitempty"`
	Elapsed time.Duration
}

// SignerCount is how many entries one writer's key signed.
type SignerCount struct {
	Signer      string // sigkey.PublicKey.String()
	Fingerprint string
	Trusted     bool // the key is one of the cache's TrustedKeys
	Entries     int
}

// ExitCode sums, over the problems not repaired, 1 for corrupt, dangling,
// bad-perm and orphan-tmp, 2 for untrusted, 4 for I/O errors (as `nix
// store verify` does). 0 means clean.
func (r *VerifyReport) ExitCode() int {
	code := 0
	for _, p := range r.Problems {
		if p.Repair != "" {
			continue
		}
		switch p.Class {
		case ProblemUntrusted:
			code |= 2
		case ProblemIOError:
			code |= 4
		default:
			code |= 1
		}
	}
	return code
}

// Verify checks every object in the cache: it re-hashes every blob (see
// Subset), decodes every entry and checks its key, its references and,
// when signatures are required, its signature; it looks for orphaned temp
// files, stray names and, in a shared cache, wrong modes. It takes no lock:
// runs may use the cache meanwhile, and an object removed while Verify
// runs (by GC, a quarantine) is not a problem. Blobs are checked before
// entries, so with Repair an entry whose blob was just quarantined is
// reported dangling and quarantined too, and a second Verify is clean.
//
// The error is non-nil only if the cache could not be walked at all.
func Verify(c *cache.Dir, opts VerifyOptions) (*VerifyReport, error) {
	began := time.Now()
	v := &verifier{c: c, opts: opts, rep: new(VerifyReport), now: time.Now}
	if opts.Now != nil {
		v.now = opts.Now
	}
	if _, err := os.Stat(c.Root()); err != nil {
		return nil, fmt.Errorf("cache verify: %w", err)
	}
	v.checkDir("dir", c.Root())
	for _, d := range []string{cache.CASDir, cache.ACDir, cache.TempDir, cache.QuarantineDir, sessionsDir, locksDir} {
		v.checkDir("dir", filepath.Join(c.Root(), d))
	}
	blobs := v.list(cache.CASDir, "blob")
	entries := v.list(cache.ACDir, "entry")
	total := len(blobs) + len(entries)
	done := 0
	progress := func() {
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	for _, f := range blobs {
		v.checkBlob(f)
		progress()
	}
	for _, f := range entries {
		v.checkEntry(f)
		progress()
	}
	v.checkTemp()
	v.checkRWFiles(sessionsDir, "session")
	v.checkRWFiles(locksDir, "lock")
	v.rep.Quarantined, _ = countDir(filepath.Join(c.Root(), cache.QuarantineDir), func(path string, err error) {
		v.ioProblem("dir", path, err)
	})
	v.checkFormat()
	sort.SliceStable(v.rep.Problems, func(i, j int) bool { return v.rep.Problems[i].Path < v.rep.Problems[j].Path })
	v.rep.Elapsed = time.Since(began)
	return v.rep, nil
}

type verifier struct {
	c    *cache.Dir
	opts VerifyOptions
	rep  *VerifyReport
	now  func() time.Time
}

// checkFormat reports a damaged format marker (a cache opened with
// AllowDamagedFormat) and, with Repair, rewrites it when every other
// problem was repaired: the objects are then known to be this format's.
func (v *verifier) checkFormat() {
	if !v.c.DamagedFormat() {
		return
	}
	p := Problem{Class: ProblemCorrupt, Kind: "cache", ID: cache.FormatFile, Path: filepath.Join(v.c.Root(), cache.FormatFile),
		Cause: "its marker is damaged"}
	if v.opts.Repair {
		open := 0
		for _, q := range v.rep.Problems {
			if q.Repair == "" {
				open++
			}
		}
		switch {
		case v.opts.Subset.M > 1:
			p.Cause += "; left as it is: --subset read only some blobs"
		case open > 0:
			p.Cause += fmt.Sprintf("; left as it is while %d other problems remain", open)
		default:
			if err := v.c.RewriteFormat(); err != nil {
				p.Cause += "; rewriting it failed: " + err.Error()
			} else {
				p.Repair = "rewritten: every object verified"
			}
		}
	}
	v.add(p)
}

func (v *verifier) add(p Problem) { v.rep.Problems = append(v.rep.Problems, p) }

// ioProblem records a failure to read path: a permission error is bad-perm,
// anything else an I/O error. A path gone meanwhile is nothing.
func (v *verifier) ioProblem(kind, path string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	class := ProblemIOError
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, cache.ErrUnreadable) {
		class = ProblemBadPerm
	}
	v.add(Problem{Class: class, Kind: kind, ID: filepath.Base(path), Path: path, Cause: err.Error()})
}

// list walks cas/ or ac/, reporting stray names and bad shard directories,
// and returns the files in the shards.
func (v *verifier) list(top, kind string) []storeFile {
	var files []storeFile
	walkStore(filepath.Join(v.c.Root(), top), func(f storeFile, shard bool) bool {
		if !shard {
			files = append(files, f)
			return false
		}
		if !f.info.IsDir() || !validShard(f.name) {
			v.stray(kind, f, fmt.Sprintf("%s is not a shard directory (two lowercase hex digits)", f.name))
			return false
		}
		v.checkMode("dir", f)
		return true
	}, func(path string, err error) { v.ioProblem("dir", path, err) })
	return files
}

// stray reports something in cas/ or ac/ that is not an object, and
// moves it to quarantine/ when repairing.
func (v *verifier) stray(kind string, f storeFile, cause string) {
	p := Problem{Class: ProblemCorrupt, Kind: kind, ID: f.name, Path: f.path, Cause: cause}
	if v.opts.Repair {
		if ce := v.c.Quarantine(kind, f.name, f.path, f.info, errors.New(cause)); ce.Moved != "" {
			p.Repair = "quarantined to " + ce.Moved
		}
	}
	v.add(p)
}

// checkDir checks a top-level directory's mode in a shared cache.
func (v *verifier) checkDir(kind, path string) {
	st, err := os.Lstat(path)
	if err != nil {
		v.ioProblem(kind, path, err)
		return
	}
	v.checkMode(kind, storeFile{path: path, name: filepath.Base(path), info: st})
}

// checkMode checks, in a shared cache, that a directory is setgid and
// group-writable, an object group-readable, a session or lock file
// group-writable; when repairing it sets the mode the cache would have
// created, if this user owns the file.
func (v *verifier) checkMode(kind string, f storeFile) {
	if !v.c.Shared() {
		return
	}
	mode := f.info.Mode()
	var want fs.FileMode
	var cause string
	switch {
	case mode.IsDir():
		if mode&fs.ModeSetgid != 0 && mode.Perm()&0o070 == 0o070 {
			return
		}
		want, cause = cache.SharedDirPerm|fs.ModeSetgid, fmt.Sprintf("mode %v: a shared cache's directories are setgid and group-writable", mode)
	case kind == "session" || kind == "lock":
		if mode.Perm()&0o060 == 0o060 {
			return
		}
		want, cause = cache.SharedRWPerm, fmt.Sprintf("mode %v: not group-writable", mode.Perm())
	default:
		if mode.Perm()&0o040 != 0 {
			return
		}
		want, cause = cache.SharedObjectPerm, fmt.Sprintf("mode %v: not group-readable", mode.Perm())
	}
	p := Problem{Class: ProblemBadPerm, Kind: kind, ID: f.name, Path: f.path, Cause: cause + "; its owner (or root) can run: cairn cache verify --repair"}
	if kind == "blob" || kind == "entry" {
		p.ID = objectID(f.name)
	}
	if v.opts.Repair {
		if err := cache.ChmodOwned(f.path, f.info, want); err == nil {
			p.Repair = fmt.Sprintf("mode set to %v", want)
		}
	}
	v.add(p)
}

// objectID is the hex ID in an object's file name.
func objectID(name string) string {
	if len(name) > 64 {
		return name[:64]
	}
	return name
}

// checkObjectFile reports a file in a shard that is not a well-named
// regular file, and checks its mode. It returns false if there is nothing
// more to check.
func (v *verifier) checkObjectFile(kind string, f storeFile, nameOK bool) bool {
	switch {
	case !nameOK:
		v.stray(kind, f, fmt.Sprintf("%q is not a %s name", f.name, kind))
		return false
	case !f.info.Mode().IsRegular():
		v.corrupt(kind, objectID(f.name), f, nil, fmt.Errorf("%v: %w", f.info.Mode().Type(), errNotRegular))
		return false
	}
	v.checkMode(kind, f)
	return true
}

// corrupt reports a bad object and, when repairing, quarantines it: the
// open file if there is one (so the file moved is the file read).
func (v *verifier) corrupt(kind, id string, f storeFile, open *os.File, cause error) *Problem {
	return v.quarantined(ProblemCorrupt, kind, id, f, open, cause)
}

func (v *verifier) quarantined(class ProblemClass, kind, id string, f storeFile, open *os.File, cause error) *Problem {
	v.add(Problem{Class: class, Kind: kind, ID: id, Path: f.path, Cause: cause.Error()})
	p := &v.rep.Problems[len(v.rep.Problems)-1]
	if !v.opts.Repair {
		return p
	}
	var ce *cache.CorruptError
	if open != nil {
		ce = v.c.QuarantineFile(kind, id, open, cause)
	} else {
		ce = v.c.Quarantine(kind, id, f.path, f.info, cause)
	}
	if ce.Moved != "" {
		p.Repair = "quarantined to " + ce.Moved
	}
	return p
}

// openChecked opens an object for checking. An unreadable object is
// reported (and quarantined when repairing: it blocks every later put);
// an I/O error is reported; a vanished one is not.
func (v *verifier) openChecked(kind, id string, f storeFile) *os.File {
	fh, err := cache.OpenObject(f.path)
	switch {
	case err == nil:
		return fh
	case cache.Unusable(err):
		v.quarantined(ProblemBadPerm, kind, id, f, nil, err)
	default:
		v.ioProblem(kind, f.path, err)
	}
	return nil
}

func (v *verifier) checkBlob(f storeFile) {
	d, compressed, ok := parseBlobFileName(filepath.Base(filepath.Dir(f.path)), f.name)
	v.rep.Blobs++
	v.rep.Bytes += f.info.Size()
	if compressed {
		v.rep.CompressedBytes += f.info.Size()
	}
	if !v.checkObjectFile("blob", f, ok) || !v.opts.Subset.has(d) {
		return
	}
	fh := v.openChecked("blob", d.String(), f)
	if fh == nil {
		return
	}
	defer fh.Close()
	v.rep.BlobsRead++
	for try := 0; ; try++ {
		bad, err := v.c.ReadVerified(io.Discard, fh, compressed, d)
		v.rep.ReadBytes += f.info.Size()
		if err != nil {
			v.ioProblem("blob", f.path, err)
			return
		}
		if bad == nil {
			return
		}
		if try == 0 { // a transient NFS error? read once more
			if _, err := fh.Seek(0, io.SeekStart); err == nil {
				continue
			}
		}
		p := v.corrupt("blob", d.String(), f, fh, bad)
		if p.Repair != "" && v.opts.Refetch != nil {
			if err := v.opts.Refetch(d); err == nil {
				p.Repair += "; fetched a good copy from the remote"
			}
		}
		return
	}
}

func (v *verifier) checkEntry(f storeFile) {
	key, ok := parseEntryFileName(filepath.Base(filepath.Dir(f.path)), f.name)
	v.rep.Entries++
	if !v.checkObjectFile("entry", f, ok) {
		v.rep.Bytes += f.info.Size()
		return
	}
	id := key.String()
	fh := v.openChecked("entry", id, f)
	if fh == nil {
		return
	}
	defer fh.Close()
	var (
		b   []byte
		e   *cache.Entry
		bad error
	)
	for try := 0; try < 2; try++ {
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			v.ioProblem("entry", f.path, err)
			return
		}
		var (
			err  error
			size int64
		)
		b, size, bad, err = cache.ReadEntryFile(fh, key)
		v.rep.ReadBytes += int64(len(b))
		if err != nil {
			v.ioProblem("entry", f.path, err)
			return
		}
		if try == 0 {
			v.rep.Bytes += size // a packed entry counts its record
		}
		if bad != nil {
			continue
		}
		if cache.IsNewerEntry(b) {
			v.rep.NewerEntries++
			return
		}
		e, bad = cache.ParseEntry(b)
		if bad == nil && e.Key != key {
			bad = fmt.Errorf("stored under %s but holds key %s", key.Short(), e.Key.Short())
		}
		if bad == nil {
			break
		}
	}
	if bad != nil {
		v.corrupt("entry", id, f, fh, bad)
		return
	}
	for _, r := range e.Blobs() {
		if v.c.HasBlob(r.Digest) {
			continue
		}
		if !cache.StillAt(fh, f.path) {
			return // removed meanwhile (GC removes entries before blobs)
		}
		v.quarantined(ProblemDangling, "entry", id, f, fh, fmt.Errorf("%s: blob %s is missing", r.What, r.Digest.Short()))
		return
	}
	// Its chunks' content was checked as blobs; here, that they decode and
	// hash, with the rest, to its key.
	if err := v.c.FillChunks(e, v.opts.Repair); errors.Is(err, cache.ErrCorrupt) {
		v.corrupt("entry", id, f, fh, err)
		return
	} else if err != nil && !errors.Is(err, cache.ErrNotFound) {
		v.ioProblem("entry", f.path, err)
		return
	}
	v.countSigner(b)
	if err := v.c.CheckTrust(b); err != nil {
		v.quarantined(ProblemUntrusted, "entry", id, f, fh, err)
	}
}

// countSigner counts the entry b under the key that signed it, if any.
func (v *verifier) countSigner(b []byte) {
	k := v.c.Signer(b)
	if k == nil {
		return
	}
	fp := k.Fingerprint()
	for i := range v.rep.Signers {
		if v.rep.Signers[i].Fingerprint == fp {
			v.rep.Signers[i].Entries++
			return
		}
	}
	v.rep.Signers = append(v.rep.Signers, SignerCount{Signer: k.String(), Fingerprint: fp, Trusted: v.c.Trusts(k), Entries: 1})
	sort.Slice(v.rep.Signers, func(i, j int) bool { return v.rep.Signers[i].Signer < v.rep.Signers[j].Signer })
}

// checkTemp reports temp files older than TempGrace, and removes them
// when repairing; younger ones are writes in flight.
func (v *verifier) checkTemp() {
	dir := filepath.Join(v.c.Root(), cache.TempDir)
	des, err := os.ReadDir(dir)
	if err != nil {
		v.ioProblem("dir", dir, err)
		return
	}
	now := v.now()
	for _, de := range des {
		if isNFSTemp(de.Name()) {
			continue
		}
		st, err := de.Info()
		if err != nil {
			v.ioProblem("temp", filepath.Join(dir, de.Name()), err)
			continue
		}
		age := now.Sub(st.ModTime())
		if age < cache.TempGrace || publishedPack(de.Name(), st) {
			v.rep.InFlight++
			continue
		}
		path := filepath.Join(dir, de.Name())
		p := Problem{Class: ProblemOrphanTemp, Kind: "temp", ID: de.Name(), Path: path,
			Cause: fmt.Sprintf("temp file last written %v ago, left by a crashed write", age.Round(time.Second))}
		if v.opts.Repair {
			rm := removeFile
			if st.IsDir() {
				rm = removeTree
			}
			if err := rm(path); err == nil {
				p.Repair = "removed"
			}
		}
		v.add(p)
	}
}

// errNotRegular reports an object path that holds a symlink, FIFO,
// directory or device instead of a regular file.
var errNotRegular = errors.New("not a regular file")

// publishedPack reports whether the temp file name, stat st, is a pack
// with published names: the temp name of a process's pack, which is
// appended to for as long as the process stores entries (a long phase
// can leave it unchanged for hours) and holds no bytes of its own. It is
// not a crashed write's leftover; GC removes the name once it is old.
func publishedPack(name string, st fs.FileInfo) bool {
	_, _, nlink, ok := cache.FileID(st)
	return ok && nlink > 1 && strings.HasPrefix(name, "pack-") && st.Mode().IsRegular()
}

// checkRWFiles checks the modes of session or lock files.
func (v *verifier) checkRWFiles(dir, kind string) {
	path := filepath.Join(v.c.Root(), dir)
	des, err := os.ReadDir(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			v.ioProblem("dir", path, err)
		}
		return
	}
	for _, de := range des {
		st, err := de.Info()
		if err != nil || isNFSTemp(de.Name()) || !st.Mode().IsRegular() {
			continue
		}
		v.checkMode(kind, storeFile{path: filepath.Join(path, de.Name()), name: de.Name(), info: st})
	}
}
