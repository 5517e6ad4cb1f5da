package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/spec"
)

// Engine runs or plans one evaluated spec against one cache. Create it with
// New; it is used for one Plan or Run.
type Engine struct {
	spec  *spec.Spec
	ws    Workspace
	cache *remote.Tiered
	mem   *Memory
	exec  Executor
	rep   Reporter
	now   func() time.Time

	hashWorkers int
	lastKeys    *keyIndex
	phaseKeys   *phaseKeys
	entries     *cache.EntryMemo // nil without a cache
	session     *upkeep.Session  // records the run's hits and puts for gc and stats; nil when planning
	// work, set while Run runs, is done once the run is interrupted: the
	// engine's own long steps (hashing, restoring, downloading) stop then.
	work     context.Context
	producer map[string]string // output path -> phase address
	// executors holds the other executors by name (spec.ExecutorSlurm).
	executors map[string]Executor
}

// Config holds what New needs beyond the spec and the cache.
type Config struct {
	// Executor runs commands; nil means a LocalExecutor.
	Executor Executor
	// Executors holds the executors of phases that do not run locally,
	// by name (spec.ExecutorSlurm).
	Executors map[string]Executor
	// Reporter receives progress; nil discards it.
	Reporter Reporter
	// Memories, if loaded ahead (LoadMemories of the spec's directory,
	// while the spec was being read), saves New reading them.
	Memories *Memories
}

// Memories are a workspace's hint files: the input-digest memory, the
// last key of each phase, the phase-key memory and the entry memo. Each is
// read whole at start; a missing or damaged one is empty, which costs
// time, never correctness.
type Memories struct {
	dir       string
	digests   *Memory
	keys      *keyIndex
	phaseKeys *phaseKeys
	entries   *cache.EntryMemo
}

// LoadMemories reads the memories of the workspace at dir (absolute), the
// files side by side.
func LoadMemories(dir string) *Memories {
	state := filepath.Join(dir, StateDirName)
	m := &Memories{dir: dir}
	var wg sync.WaitGroup
	wg.Go(func() { m.digests = LoadMemory(filepath.Join(state, "digests")) })
	wg.Go(func() {
		m.keys = loadKeyIndex(filepath.Join(state, "keys.json"))
		m.phaseKeys = loadPhaseKeys(filepath.Join(state, "phasekeys"))
	})
	wg.Go(func() { m.entries = cache.LoadEntryMemo(filepath.Join(state, "entries")) })
	wg.Wait()
	return m
}

// New returns an engine for s (whose workspace is s.Dir) on cache c.
func New(s *spec.Spec, c *remote.Tiered, cfg Config) *Engine {
	e := &Engine{
		spec:        s,
		ws:          Workspace{Root: s.Dir, dir: &rootDir{}},
		cache:       c,
		exec:        cfg.Executor,
		executors:   cfg.Executors,
		rep:         cfg.Reporter,
		now:         time.Now,
		hashWorkers: cores.N, // the CPUs cairn may use (a cgroup quota included), not the machine's
		producer:    map[string]string{},
	}
	if e.exec == nil {
		e.exec = &LocalExecutor{}
	}
	if e.rep == nil {
		e.rep = NopReporter{}
	}
	m := cfg.Memories
	if m == nil || m.dir != s.Dir {
		m = LoadMemories(s.Dir)
	}
	e.mem, e.lastKeys, e.phaseKeys, e.entries = m.digests, m.keys, m.phaseKeys, m.entries
	if os.Getenv("CAIRN_DEBUG_KEY") == "1" {
		// Every key is computed, so that each is written out
		// (cache.ComputeKey).
		e.phaseKeys = nil
	}
	if c != nil {
		c.UseEntryMemo(e.entries)
	}
	for _, p := range s.Phases {
		for _, o := range p.Outputs {
			e.producer[o.Path] = p.Addr
		}
	}
	return e
}

// saveEntryMemo writes the entry memo back. It is a hint file (a lost or
// stale one costs a full read of each entry), so failing to save it is
// not an error of the run.
func (e *Engine) saveEntryMemo() {
	if e.entries != nil {
		_ = e.entries.Save()
	}
}

// savePhaseKeys writes the phase-key memory back; a hint file too.
func (e *Engine) savePhaseKeys() {
	if e.phaseKeys != nil {
		_ = e.phaseKeys.save()
	}
}

// Cache returns the engine's cache.
func (e *Engine) Cache() *remote.Tiered { return e.cache }

// Workspace returns the engine's workspace.
func (e *Engine) Workspace() *Workspace { return &e.ws }

// keyIndex remembers the last key each phase succeeded or hit with in this
// workspace, so a miss can be explained by diffing against that entry's
// recorded components.
type keyIndex struct {
	path  string
	mu    sync.Mutex
	keys  map[string]string
	dirty bool
}

func loadKeyIndex(path string) *keyIndex {
	ki := &keyIndex{path: path, keys: map[string]string{}}
	if b, err := os.ReadFile(path); err == nil {
		if m, ok := parseKeyIndex(b); ok {
			ki.keys = m
		} else {
			_ = json.Unmarshal(b, &ki.keys)
		}
	}
	return ki
}

// parseKeyIndex reads keys.json in the layout save writes (one
// `  "addr": "key"` line per phase, sorted, no escapes) without
// encoding/json's reflection, which took a no-op run of 1,000 phases a
// millisecond and a half. Anything else is not ok, and is left to
// encoding/json; what it accepts, encoding/json reads the same.
func parseKeyIndex(b []byte) (map[string]string, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("{\n"))
	if !ok || bytes.IndexByte(b, '\\') >= 0 {
		return nil, false
	}
	m := make(map[string]string, bytes.Count(rest, []byte{'\n'}))
	prev := ""
	for comma := true; ; {
		line, more, ok := bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return nil, false
		}
		if string(line) == "}" {
			if comma || len(more) != 0 || len(m) == 0 {
				return nil, false
			}
			return m, true
		}
		if !comma {
			return nil, false
		}
		line, comma = bytes.CutSuffix(line, []byte(","))
		body, ok := bytes.CutPrefix(line, []byte(`  "`))
		if !ok {
			return nil, false
		}
		k, v, ok := bytes.Cut(body, []byte(`": "`))
		if !ok || len(v) == 0 || v[len(v)-1] != '"' {
			return nil, false
		}
		v = v[:len(v)-1]
		if !plainJSONString(k) || !plainJSONString(v) || string(k) <= prev && len(m) > 0 {
			return nil, false
		}
		prev = string(k)
		m[prev] = string(v)
		rest = more
	}
}

// plainJSONString reports whether b, between quotes, is a JSON string
// that means its own bytes: valid UTF-8 without quotes, backslashes,
// control characters or the characters encoding/json escapes for HTML.
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return utf8.Valid(b) && !bytes.Contains(b, []byte("\u2028")) && !bytes.Contains(b, []byte("\u2029"))
}

func (ki *keyIndex) get(addr string) (cache.ActionID, bool) {
	ki.mu.Lock()
	s, ok := ki.keys[addr]
	ki.mu.Unlock()
	if !ok {
		return cache.ActionID{}, false
	}
	id, err := cache.ParseActionID(s)
	return id, err == nil
}

func (ki *keyIndex) set(addr string, key cache.ActionID) {
	s := key.String()
	ki.mu.Lock()
	if ki.keys[addr] != s {
		ki.keys[addr] = s
		ki.dirty = true
	}
	ki.mu.Unlock()
}

func (ki *keyIndex) save() error {
	ki.mu.Lock()
	defer ki.mu.Unlock()
	if !ki.dirty {
		return nil
	}
	b, err := json.MarshalIndent(ki.keys, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(ki.path, append(b, '\n'), 0o644, false); err != nil {
		return err
	}
	ki.dirty = false
	return nil
}

// workCtx is the context the engine's own steps stop on (see work).
func (e *Engine) workCtx() context.Context {
	if e.work != nil {
		return e.work
	}
	return context.Background()
}
