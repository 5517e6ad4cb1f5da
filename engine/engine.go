package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/executor/local"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/outputs"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

// Engine runs or plans one evaluated spec against one cache. Create it with
// New; it is used for one Plan or Run.
type Engine struct {
	spec  *spec.Spec
	ws    workspace.Workspace
	cache *remote.Tiered
	mem   *memories.Memory
	out   outputs.Keeper // the phases' outputs, in the workspace and the cache
	exec  executor.Executor
	rep   Reporter
	now   func() time.Time

	hashWorkers int
	lastKeys    *memories.LastKeys
	phaseKeys   *memories.PhaseKeys
	entries     *cache.EntryMemo // nil without a cache
	session     *upkeep.Session  // records the run's hits and puts for gc and stats; nil when planning
	// work, set while Run runs, is done once the run is interrupted: the
	// engine's own long steps (hashing, restoring, downloading) stop then.
	work     context.Context
	producer map[string]string // output path -> phase address
	// executors holds the other executors by name.
	executors map[string]executor.Executor
}

// Config holds what New needs beyond the spec and the cache.
type Config struct {
	// Executor runs the commands of the phases whose executor is local;
	// nil means a local.Executor.
	Executor executor.Executor
	// Executors holds the executors of phases that do not run locally,
	// by name.
	Executors map[string]executor.Executor
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
	digests   *memories.Memory
	keys      *memories.LastKeys
	phaseKeys *memories.PhaseKeys
	entries   *cache.EntryMemo
}

// LoadMemories reads the memories of the workspace at dir (absolute), the
// files side by side.
func LoadMemories(dir string) *Memories {
	state := filepath.Join(dir, workspace.StateDirName)
	m := &Memories{dir: dir}
	var wg sync.WaitGroup
	wg.Go(func() { m.digests = memories.LoadMemory(filepath.Join(state, "digests")) })
	wg.Go(func() {
		m.keys = memories.LoadLastKeys(filepath.Join(state, "keys"))
		m.phaseKeys = memories.LoadPhaseKeys(filepath.Join(state, "phasekeys"))
	})
	wg.Go(func() { m.entries = cache.LoadEntryMemo(filepath.Join(state, "entries")) })
	wg.Wait()
	return m
}

// New returns an engine for s (whose workspace is s.Dir) on cache c.
func New(s *spec.Spec, c *remote.Tiered, cfg Config) *Engine {
	e := &Engine{
		spec:        s,
		ws:          workspace.New(s.Dir),
		cache:       c,
		exec:        cfg.Executor,
		executors:   cfg.Executors,
		rep:         cfg.Reporter,
		now:         time.Now,
		hashWorkers: cores.N, // the CPUs cairn may use (a cgroup quota included), not the machine's
		producer:    map[string]string{},
	}
	if e.exec == nil {
		e.exec = &local.Executor{}
	}
	if e.rep == nil {
		e.rep = NopReporter{}
	}
	m := cfg.Memories
	if m == nil || m.dir != s.Dir {
		m = LoadMemories(s.Dir)
	}
	e.mem, e.lastKeys, e.phaseKeys, e.entries = m.digests, m.keys, m.phaseKeys, m.entries
	e.out = outputs.Keeper{WS: &e.ws, Cache: c, Mem: e.mem, Now: e.now, Ctx: e.workCtx,
		Session: func() *upkeep.Session { return e.session }}
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
		_ = e.phaseKeys.Save()
	}
}

// Cache returns the engine's cache.
func (e *Engine) Cache() *remote.Tiered { return e.cache }

// Workspace returns the engine's workspace.
func (e *Engine) Workspace() *workspace.Workspace { return &e.ws }

// workCtx is the context the engine's own steps stop on (see work).
func (e *Engine) workCtx() context.Context {
	if e.work != nil {
		return e.work
	}
	return context.Background()
}
