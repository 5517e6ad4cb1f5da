// Package memo keeps a spec's evaluated model on disk (the spec memo)
// and the keys of its for_each expressions (the for_each memo), so that a
// command that changes nothing (a no-op run, plan, status) does not parse
// and evaluate the HCL again: for a spec of 1,000 phases that is most of
// a no-op's time and memory. Both are hints (package hint): a stale,
// missing or damaged memo is a miss, and the spec is loaded by package
// spec as if there were none.
//
// A memo is used only when everything evaluation depended on is
// unchanged: the spec's bytes, the -var-file contents, the -var values,
// the cairn executable, and every file read by file() and every
// environment variable looked up (CAIRN_VAR_NAME, env()), as spec.Reads
// records them, each checked again before the memo is trusted. A spec
// with sensitive variables or with warnings is never memoised (sensitive
// values must not reach the disk; warnings must be shown every time).
package memo

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/spec"
)

// memoFormat is the version of the memo's layout (its header also names
// the generated layout of the model, memoLayout).
const memoFormat = 6

// memoRecord is the memo file's content.
type memoRecord struct {
	Format int
	Key    string
	Files  map[string]string
	Env    map[string]spec.EnvRead

	File, Dir, Hash string
	Experiment      spec.Experiment
	Variables       map[string]string
	Pools           map[string]*spec.Pool
	Phases          []*spec.Phase
	Blocks          map[string][]string
}

// memoKey hashes what is known before evaluation: the executable, the
// spec's name, directory and bytes, the -var-file contents and -var values.
func memoKey(filename, dir string, src []byte, opts spec.Options) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "cairn-spec-memo %d %s\n%s\n%s\n%s\n%d\n", memoFormat, memoLayout, hint.ExeID(), filename, dir, len(src))
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

// Path returns the memo file for the spec at specPath inside stateDir.
func Path(stateDir, specPath string) string {
	abs, err := filepath.Abs(specPath)
	if err != nil {
		abs = specPath
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(stateDir, "spec-"+hex.EncodeToString(sum[:8])+".memo")
}

// LoadFile is p.LoadFile through the memo at memoPath: a memo whose
// every dependency is unchanged gives the model without parsing; else the
// spec is loaded and, when that succeeds cleanly, the memo is rewritten if
// its directory exists or initDir, when not nil, makes it (a command that
// makes the workspace's state directory anyway, as run and plan do,
// passes it). hit says which way it went.
func LoadFile(p *spec.Parser, path string, opts spec.Options, memoPath string, initDir func() error) (s *spec.Spec, diags hcl.Diagnostics, hit bool) {
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
	reads := spec.NewReads()
	opts.Reads = reads
	each := &eachMemo{path: eachMemoPath(memoPath)}
	opts.ForEach = each
	s, diags = p.LoadBytes(path, src, dir, opts)
	if s != nil && len(diags) == 0 && len(s.SensitiveVars) == 0 {
		_, err := os.Stat(filepath.Dir(memoPath))
		if err != nil && initDir != nil {
			err = initDir()
		}
		if err == nil {
			_ = writeMemo(memoPath, key, reads, s)
			_ = each.write()
		}
	}
	return s, diags, false
}

// Load returns the spec at path from the memo at memoPath if the memo
// is good for it (as LoadFile would take it), else nil, parsing nothing
// and writing nothing.
func Load(path string, opts spec.Options, memoPath string) *spec.Spec {
	_, _, key, err := memoKeyOf(path, opts)
	if err != nil {
		return nil
	}
	return readMemo(memoPath, key, opts.LookupEnv)
}

// memoKeyOf reads the spec file at path and returns its source, its
// directory (empty if the file cannot be read or its absolute path
// found) and its memo key (with an error if it cannot be computed).
func memoKeyOf(path string, opts spec.Options) (src []byte, dir, key string, err error) {
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
func readMemo(path, key string, look func(string) (string, bool)) *spec.Spec {
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
		b, err := spec.ReadFile(file) // a FIFO put in its place must not block
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
// 100,000 instances) only to find that out is waste. A memo that passes
// is then read and checked whole.
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
func (rec *memoRecord) spec() *spec.Spec {
	return spec.Restore(&spec.Spec{
		File: rec.File, Dir: rec.Dir, Hash: rec.Hash,
		Experiment: rec.Experiment,
		Variables:  rec.Variables,
		Pools:      rec.Pools,
		Phases:     rec.Phases,
	}, rec.Blocks)
}

func writeMemo(path, key string, reads *spec.Reads, s *spec.Spec) error {
	rec := memoRecord{
		Format: memoFormat, Key: key, Files: reads.Files(), Env: reads.Env(),
		File: s.File, Dir: s.Dir, Hash: s.Hash,
		Experiment: s.Experiment, Variables: s.Variables, Pools: s.Pools,
		Phases: s.Phases, Blocks: s.Blocks(),
	}
	return memoFile.Save(path, encodeMemo(&rec), 0o600)
}
