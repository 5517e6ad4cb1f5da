package fsxtest

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/cairn-run/cairn/internal/fsx"
)

// Event is one operation in a Recorder's log, in terms of what reaches the
// disk: directory entries naming inodes, and writes to inodes.
type Event struct {
	Kind  string // create, write, sync, mkdir, link, rename, remove, syncdir, syncfs, mark
	Path  string // relative to the root; the new name for link and rename
	Old   string // rename: the old name
	Inode int    // create, write, sync, link, rename (the inode moved), remove
	Off   int64  // write
	Data  []byte // write
	Label string // mark
}

// dirOp reports whether e changes a directory, and which ones.
func (e Event) dirs() []string {
	switch e.Kind {
	case "create", "mkdir", "link", "remove":
		return []string{filepath.Dir(e.Path)}
	case "rename":
		return []string{filepath.Dir(e.Old), filepath.Dir(e.Path)}
	}
	return nil
}

// Recorder is an fsx.FS that passes every call to Base (the real disk) and
// logs, for the paths under Root, what a crash could keep or lose. Start
// snapshots Root; Mark inserts a label (an acknowledgement) into the log.
type Recorder struct {
	Base fsx.FS
	Root string

	mu     sync.Mutex
	log    []Event
	names  map[string]int // current name -> inode, during recording
	next   int
	init   map[string]int // the snapshot: name -> inode (0: a directory)
	inodes map[int][]byte // the snapshot's file contents
}

var _ fsx.FS = (*Recorder)(nil)

// Start snapshots every file and directory under Root as the state before
// the log begins. Files are read whole; keep Root small.
func (r *Recorder) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = nil
	r.names, r.init, r.inodes = map[string]int{}, map[string]int{}, map[int][]byte{}
	return filepath.WalkDir(r.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.Root, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			r.init[rel] = 0
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r.next++
		r.init[rel], r.names[rel], r.inodes[r.next] = r.next, r.next, b
		return nil
	})
}

// Mark records label, such as "ack blob": what happened before it was
// acknowledged.
func (r *Recorder) Mark(label string) {
	r.mu.Lock()
	r.log = append(r.log, Event{Kind: "mark", Label: label})
	r.mu.Unlock()
}

// Log returns a copy of the log.
func (r *Recorder) Log() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.log...)
}

func (r *Recorder) rel(p string) (string, bool) {
	rel, err := filepath.Rel(r.Root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

func (r *Recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case "create":
		r.next++
		e.Inode = r.next
		r.names[e.Path] = e.Inode
	case "link":
		e.Inode = r.names[e.Old]
		r.names[e.Path] = e.Inode
		e.Old = ""
	case "rename":
		e.Inode = r.names[e.Old]
		delete(r.names, e.Old)
		r.names[e.Path] = e.Inode
	case "remove":
		e.Inode = r.names[e.Path]
		delete(r.names, e.Path)
	}
	r.log = append(r.log, e)
}

func (r *Recorder) OpenFile(name string, flag int, perm fs.FileMode) (fsx.File, error) {
	f, err := r.Base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	rel, ok := r.rel(name)
	if !ok {
		return f, nil
	}
	if flag&os.O_CREATE == 0 || flag&os.O_EXCL == 0 {
		f.Close()
		return nil, fmt.Errorf("recorder: open %s: only new files (O_CREATE|O_EXCL) are modelled", name)
	}
	r.add(Event{Kind: "create", Path: rel})
	r.mu.Lock()
	ino := r.names[rel]
	r.mu.Unlock()
	return &recFile{File: f, r: r, inode: ino}, nil
}

func (r *Recorder) Mkdir(name string, perm fs.FileMode) error {
	if err := r.Base.Mkdir(name, perm); err != nil {
		return err
	}
	if rel, ok := r.rel(name); ok {
		r.add(Event{Kind: "mkdir", Path: rel})
	}
	return nil
}

func (r *Recorder) Chmod(name string, mode fs.FileMode) error { return r.Base.Chmod(name, mode) }

func (r *Recorder) Link(oldname, newname string) error {
	if err := r.Base.Link(oldname, newname); err != nil {
		return err
	}
	o, ok1 := r.rel(oldname)
	n, ok2 := r.rel(newname)
	if ok1 && ok2 {
		r.add(Event{Kind: "link", Path: n, Old: o})
	}
	return nil
}

func (r *Recorder) Rename(oldname, newname string) error {
	if err := r.Base.Rename(oldname, newname); err != nil {
		return err
	}
	o, ok1 := r.rel(oldname)
	n, ok2 := r.rel(newname)
	if ok1 && ok2 {
		r.add(Event{Kind: "rename", Path: n, Old: o})
	}
	return nil
}

func (r *Recorder) Remove(name string) error {
	if err := r.Base.Remove(name); err != nil {
		return err
	}
	if rel, ok := r.rel(name); ok {
		r.add(Event{Kind: "remove", Path: rel})
	}
	return nil
}

func (r *Recorder) SyncDir(dir string) error {
	if err := r.Base.SyncDir(dir); err != nil {
		return err
	}
	if rel, ok := r.rel(dir); ok {
		r.add(Event{Kind: "syncdir", Path: rel})
	}
	return nil
}

// OpenFS returns a syncer whose Sync, for a directory under Root, makes
// everything logged before it durable: the Recorder models one
// filesystem.
func (r *Recorder) OpenFS(dir string) (fsx.FSSyncer, error) {
	s, err := r.Base.OpenFS(dir)
	if err != nil {
		return nil, err
	}
	_, under := r.rel(dir)
	return &recSyncer{FSSyncer: s, r: r, under: under}, nil
}

type recSyncer struct {
	fsx.FSSyncer
	r     *Recorder
	under bool
}

func (s *recSyncer) Sync() error {
	if err := s.FSSyncer.Sync(); err != nil {
		return err
	}
	if s.under {
		s.r.add(Event{Kind: "syncfs"})
	}
	return nil
}

type recFile struct {
	fsx.File
	r     *Recorder
	inode int
	off   int64
}

func (f *recFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if n > 0 {
		f.r.add(Event{Kind: "write", Inode: f.inode, Off: f.off, Data: append([]byte(nil), p[:n]...)})
		f.off += int64(n)
	}
	return n, err
}

func (f *recFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.r.add(Event{Kind: "sync", Inode: f.inode})
	return nil
}

// CrashState is one state a crash could leave.
type CrashState struct {
	Prefix int      // events of the log that had been issued
	Acked  []string // marks within the prefix
	Choice string   // for each undetermined event: k(ept), d(ropped), g(arbage), r(everted)
	Files  map[string][]byte
	Dirs   []string
}

// CrashStates calls fn with the states a crash could leave after each
// prefix of the log, in this model (SQLite's test6.c, ALICE):
//   - a directory change (create, mkdir, link, rename, remove) survives if
//     a later SyncDir of its directory is in the prefix; otherwise it may
//     survive or be reverted, each independently;
//   - a write survives if a later Sync of its file is in the prefix;
//     otherwise it is kept, dropped, or replaced with garbage of the same
//     length, each independently;
//   - every event before a SyncFS (syncfs) in the prefix survives.
//
// When a prefix has more than limit combinations, limit random ones (seeded)
// plus the two extremes are visited. fn's error stops the walk.
func (r *Recorder) CrashStates(limit int, seed uint64, fn func(CrashState) error) (visited int, err error) {
	log := r.Log()
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i <= len(log); i++ {
		prefix := log[:i]
		var open []int // undetermined events
		for j := range prefix {
			if !durable(prefix, j) {
				open = append(open, j)
			}
		}
		total := 1
		for _, j := range open {
			total *= choices(prefix[j])
			if total > limit {
				break
			}
		}
		visit := func(pick []int) error {
			visited++
			return fn(r.materialise(prefix, i, open, pick))
		}
		if total <= limit {
			pick := make([]int, len(open))
			for {
				if err := visit(pick); err != nil {
					return visited, err
				}
				k := 0
				for ; k < len(open); k++ {
					pick[k]++
					if pick[k] < choices(prefix[open[k]]) {
						break
					}
					pick[k] = 0
				}
				if k == len(open) {
					break
				}
			}
			continue
		}
		for n := 0; n < limit+2; n++ {
			pick := make([]int, len(open))
			for k, j := range open {
				switch n {
				case 0: // everything kept
				case 1:
					pick[k] = 1 // everything dropped or reverted
				default:
					pick[k] = rng.IntN(choices(prefix[j]))
				}
			}
			if err := visit(pick); err != nil {
				return visited, err
			}
		}
	}
	return visited, nil
}

// choices is how many outcomes an undetermined event has.
func choices(e Event) int {
	switch e.Kind {
	case "write":
		return 3 // kept, dropped, garbage
	case "mark", "sync", "syncdir", "syncfs":
		return 1
	}
	return 2 // kept, reverted
}

// durable reports whether event j of prefix is certain to survive a crash
// at the end of prefix.
func durable(prefix []Event, j int) bool {
	e := prefix[j]
	for _, l := range prefix[j+1:] {
		if l.Kind == "syncfs" {
			return true
		}
	}
	switch e.Kind {
	case "write":
		for _, l := range prefix[j+1:] {
			if l.Kind == "sync" && l.Inode == e.Inode {
				return true
			}
		}
		return false
	case "mark", "sync", "syncdir", "syncfs":
		return true
	}
outer:
	for _, d := range e.dirs() {
		for _, l := range prefix[j+1:] {
			if l.Kind == "syncdir" && l.Path == d {
				continue outer
			}
		}
		return false
	}
	return true
}

func (r *Recorder) materialise(prefix []Event, n int, open []int, pick []int) CrashState {
	choice := map[int]int{}
	var desc strings.Builder
	for k, j := range open {
		choice[j] = pick[k]
		desc.WriteString(fmt.Sprintf("%d:%s%c ", j, prefix[j].Kind, "kdg"[pick[k]]))
	}
	names := map[string]int{}
	for p, ino := range r.init {
		names[p] = ino
	}
	data := map[int][]byte{}
	for ino, b := range r.inodes {
		data[ino] = append([]byte(nil), b...)
	}
	cs := CrashState{Prefix: n, Choice: desc.String(), Files: map[string][]byte{}}
	for j, e := range prefix {
		c, undetermined := choice[j]
		switch e.Kind {
		case "mark":
			cs.Acked = append(cs.Acked, e.Label)
			continue
		case "write":
			b := e.Data
			if undetermined && c == 1 {
				continue
			}
			if undetermined && c == 2 {
				g := rand.New(rand.NewPCG(uint64(j), uint64(n)))
				b = make([]byte, len(e.Data))
				for x := range b {
					b[x] = byte(g.Uint32())
				}
			}
			cur := data[e.Inode]
			if end := e.Off + int64(len(b)); int64(len(cur)) < end {
				cur = append(cur, make([]byte, end-int64(len(cur)))...)
			}
			copy(cur[e.Off:], b)
			data[e.Inode] = cur
			continue
		}
		if undetermined && c == 1 {
			continue // reverted
		}
		switch e.Kind {
		case "create":
			names[e.Path] = e.Inode
		case "mkdir":
			names[e.Path] = 0
		case "link":
			names[e.Path] = e.Inode
		case "rename":
			delete(names, e.Old)
			names[e.Path] = e.Inode
		case "remove":
			delete(names, e.Path)
		}
	}
	for p, ino := range names {
		if !reachable(names, p) {
			continue // its directory's creation did not survive
		}
		if ino == 0 {
			cs.Dirs = append(cs.Dirs, p)
		} else {
			cs.Files[p] = data[ino]
		}
	}
	sort.Strings(cs.Dirs)
	return cs
}

func reachable(names map[string]int, p string) bool {
	for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
		if ino, ok := names[d]; !ok || ino != 0 {
			return false
		}
	}
	return true
}

// WriteTo writes the state's directories and files under dst (which must
// exist); files are read-only, as published objects are.
func (cs CrashState) WriteTo(dst string) error {
	for _, d := range cs.Dirs {
		if err := os.MkdirAll(filepath.Join(dst, d), 0o755); err != nil {
			return err
		}
	}
	for p, b := range cs.Files {
		if err := os.WriteFile(filepath.Join(dst, p), b, 0o444); err != nil {
			return err
		}
	}
	return nil
}
