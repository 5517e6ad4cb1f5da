package spec

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/hint"
)

// The spec memo keeps the evaluated model of a spec on disk so that a
// command that changes nothing (a no-op run, plan, status) does not parse
// and evaluate the HCL again: for a spec of 1,000 phases that is most of a
// no-op's time and memory. A memo is used only when everything evaluation
// depended on is unchanged: the spec's bytes, the -var-file contents, the
// -var values, the cairn executable, and every file read by file() and
// every environment variable looked up (CAIRN_VAR_NAME, env()), each
// checked again before the memo is trusted. A spec with sensitive
// variables or with warnings is never memoised (sensitive values must not
// reach the disk; warnings must be shown every time).

// memoFormat is the version of the memo's layout (its header also names
// the generated layout of the model, memoLayout).
const memoFormat = 6

// readLog records what evaluation read from outside the spec.
type readLog struct {
	mu    sync.Mutex
	files map[string]string // absolute path -> hex SHA-256 of its content
	env   map[string]envRead
}

// envRead is one environment lookup: its value, or unset.
type envRead struct {
	Set   bool
	Value string
}

func newReadLog() *readLog {
	return &readLog{files: map[string]string{}, env: map[string]envRead{}}
}

func (r *readLog) file(path string, content []byte) {
	if r == nil {
		return
	}
	sum := sha256.Sum256(content)
	r.mu.Lock()
	r.files[path] = hex.EncodeToString(sum[:])
	r.mu.Unlock()
}

// lookupEnv wraps look so that every lookup is recorded.
func (r *readLog) lookupEnv(look func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		var v string
		var ok bool
		if look != nil {
			v, ok = look(name)
		}
		r.mu.Lock()
		r.env[name] = envRead{Set: ok, Value: v}
		r.mu.Unlock()
		return v, ok
	}
}

// memoRecord is the memo file's content.
type memoRecord struct {
	Format int
	Key    string
	Files  map[string]string
	Env    map[string]envRead

	File, Dir, Hash string
	Experiment      Experiment
	Variables       map[string]string
	Pools           map[string]*Pool
	Phases          []*Phase
	Blocks          map[string][]string
}

// memoKey hashes what is known before evaluation: the executable, the
// spec's name, directory and bytes, the -var-file contents and -var values.
func memoKey(filename, dir string, src []byte, opts Options) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "cairn-spec-memo %d %s\n%s\n%s\n%s\n%d\n", memoFormat, memoLayout, exeID(), filename, dir, len(src))
	h.Write(src)
	for _, vf := range opts.VarFiles {
		b, err := os.ReadFile(vf)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\nvar-file %q %d\n", vf, len(b))
		h.Write(b)
	}
	for _, v := range opts.Vars {
		fmt.Fprintf(h, "\nvar %q=%q", v.Name, v.Value)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ExeID names this build of cairn (its path, size and mtime): a rebuilt
// binary never trusts a memo, here or in the engine's phase-key memory,
// written by another.
func ExeID() string { return exeID() }

var exeID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown executable"
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "unknown executable"
	}
	return fmt.Sprintf("%s %d %d", exe, st.Size(), st.ModTime().UnixNano())
})

// MemoPath returns the memo file for the spec at path inside stateDir.
func MemoPath(stateDir, specPath string) string {
	abs, err := filepath.Abs(specPath)
	if err != nil {
		abs = specPath
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(stateDir, "spec-"+hex.EncodeToString(sum[:8])+".memo")
}

// LoadFileMemo is LoadFile through the memo at memoPath: a memo whose
// every dependency is unchanged gives the model without parsing; else the
// spec is loaded and, when that succeeds cleanly, the memo is rewritten if
// its directory exists (or p.InitMemoDir makes it). hit says which way it
// went.
func (p *Parser) LoadFileMemo(path string, opts Options, memoPath string) (s *Spec, diags hcl.Diagnostics, hit bool) {
	src, dir, key, err := memoKeyOf(path, opts)
	switch {
	case dir == "": // unreadable, or no absolute path
		s, diags = p.LoadFile(path, opts)
		return s, diags, false
	case err != nil:
		s, diags = p.LoadBytes(path, src, dir, opts)
		return s, diags, false
	}
	if s := readMemo(memoPath, key, opts.LookupEnv); s != nil {
		return s, nil, true
	}
	log := newReadLog()
	opts.reads = log
	opts.LookupEnv = log.lookupEnv(opts.LookupEnv)
	each := &eachMemo{path: eachMemoPath(memoPath), src: src}
	opts.each = each
	s, diags = p.LoadBytes(path, src, dir, opts)
	if s != nil && len(diags) == 0 && len(s.SensitiveVars) == 0 {
		_, err := os.Stat(filepath.Dir(memoPath))
		if err != nil && p.InitMemoDir != nil {
			err = p.InitMemoDir()
		}
		if err == nil {
			_ = writeMemo(memoPath, key, log, s)
			_ = each.write()
		}
	}
	return s, diags, false
}

// LoadMemo returns the spec at path from the memo at memoPath if the memo
// is good for it (as LoadFileMemo would take it), else nil, parsing
// nothing and writing nothing.
func LoadMemo(path string, opts Options, memoPath string) *Spec {
	_, _, key, err := memoKeyOf(path, opts)
	if err != nil {
		return nil
	}
	return readMemo(memoPath, key, opts.LookupEnv)
}

// memoKeyOf reads the spec file at path and returns its source, its
// directory (empty if the file cannot be read or its absolute path
// found) and its memo key (with an error if it cannot be computed).
func memoKeyOf(path string, opts Options) (src []byte, dir, key string, err error) {
	if src, err = os.ReadFile(path); err != nil {
		return nil, "", "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return src, "", "", err
	}
	dir = filepath.Dir(abs)
	key, err = memoKey(path, dir, src, opts)
	return src, dir, key, err
}

// readMemo returns the memoised spec if the memo is for key and nothing it
// read has changed, else nil.
func readMemo(path, key string, look func(string) (string, bool)) *Spec {
	if !memoKeyIs(path, key) {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	rec, err := decodeMemo(b)
	if err != nil || rec.Key != key {
		return nil
	}
	for name, want := range rec.Env {
		var v string
		var ok bool
		if look != nil {
			v, ok = look(name)
		}
		if ok != want.Set || v != want.Value {
			return nil
		}
	}
	for file, want := range rec.Files {
		b, err := readRegular(file) // a FIFO put in its place must not block
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != want {
			return nil
		}
	}
	return rec.spec()
}

// memoKeyIs reports whether the memo at path may be for key, reading only
// its first bytes: after an edit of the spec the memo is for the old
// text, and reading and decoding the whole of it (40 MB for a sweep of
// 100,000 instances, a quarter of a second) only to find that out is
// waste. A memo that passes is then read and checked whole.
func memoKeyIs(path, key string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, len(memoHeader)+binary.MaxVarintLen64+len(key))
	n, _ := io.ReadFull(f, buf)
	head, ok := strings.CutPrefix(string(buf[:n]), memoHeader)
	if !ok {
		return false
	}
	r := hint.NewReader(head)
	return r.Str() == key && r.OK()
}

// decodeMemo decodes a memo file's bytes (any bytes: a damaged memo is an
// error, never a panic, and is then ignored). It keeps b: the caller
// must not change it again.
func decodeMemo(b []byte) (*memoRecord, error) {
	rec, err := decodeMemoBytes(b)
	if err != nil {
		return nil, fmt.Errorf("spec memo: %w", err)
	}
	for _, p := range rec.Phases {
		if p == nil {
			return nil, errors.New("damaged spec memo: empty phase")
		}
	}
	return rec, nil
}

// spec rebuilds the model: the phase index, the blocks and the graph.
func (rec *memoRecord) spec() *Spec {
	s := &Spec{
		File: rec.File, Dir: rec.Dir, Hash: rec.Hash,
		Experiment: rec.Experiment,
		Variables:  rec.Variables,
		Pools:      rec.Pools,
		Phases:     rec.Phases,
		byAddr:     make(map[string]*Phase, len(rec.Phases)),
		blocks:     rec.Blocks,
	}
	if s.Variables == nil {
		s.Variables = map[string]string{}
	}
	if s.Pools == nil {
		s.Pools = map[string]*Pool{}
	}
	if s.blocks == nil {
		s.blocks = map[string][]string{}
	}
	g := &dag.Graph{}
	edges := 0
	for _, p := range s.Phases {
		edges += len(p.Upstream)
	}
	g.Grow(len(s.Phases), edges)
	for _, p := range s.Phases {
		s.byAddr[p.Addr] = p
		g.Add(p.Addr)
	}
	for _, p := range s.Phases {
		ups := make([]string, 0, len(p.Upstream))
		for up := range p.Upstream {
			ups = append(ups, up)
		}
		sort.Strings(ups)
		for _, up := range ups {
			if s.byAddr[up] == nil {
				return nil // damaged: an edge to nowhere
			}
			g.Connect(up, p.Addr)
		}
	}
	if g.Validate() != nil {
		return nil
	}
	s.Graph = g
	return s
}

func writeMemo(path, key string, log *readLog, s *Spec) error {
	rec := memoRecord{
		Format: memoFormat, Key: key, Files: log.files, Env: log.env,
		File: s.File, Dir: s.Dir, Hash: s.Hash,
		Experiment: s.Experiment, Variables: s.Variables, Pools: s.Pools,
		Phases: s.Phases, Blocks: s.blocks,
	}
	return memoFile.Save(path, encodeMemo(&rec), 0o600)
}
