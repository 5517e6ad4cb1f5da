package spec

import (
	"sort"

	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/executor"
	"github.com/hashicorp/hcl/v2"
)

// Spec is an evaluated experiment file.
type Spec struct {
	// File is the spec's path as given; Dir is the absolute workspace
	// directory (the spec's directory). Every relative path in the model is
	// relative to Dir and slash-separated.
	File string
	Dir  string
	// Hash is the SHA-256 (hex) of the spec file's bytes.
	Hash string

	Experiment Experiment
	Variables  map[string]string // each variable's value, rendered for display ("(sensitive)" for sensitive ones)
	// SensitiveVars names the variables marked sensitive; SensitiveValues
	// holds their values as they may appear in commands and logs, for
	// masking.
	SensitiveVars   []string
	SensitiveValues []string
	// Pools holds the declared concurrency pools by name.
	Pools map[string]*Pool

	// Phases in declaration order.
	Phases []*Phase
	// Graph holds every phase address as a vertex, with an edge from each
	// upstream phase to its dependents.
	Graph *dag.Graph

	byAddr map[string]*Phase
	blocks map[string][]string // block name -> instance addresses
}

// Resolve turns a name given on the command line into phase addresses:
// an address (prepare, harden["m1"]) is itself; the name of a phase with
// for_each stands for all its instances; any other name that is a path
// a phase instance declares as an output, or a path inside an output
// directory, stands for that instance (see OutputOwner). It returns nil
// for an unknown name.
func (s *Spec) Resolve(name string) []string {
	if s.byAddr[name] != nil {
		return []string{name}
	}
	if addrs, ok := s.blocks[name]; ok && s.byAddr[name] == nil {
		if len(addrs) == 0 {
			return []string{}
		}
		return addrs
	}
	if addr, ok := s.OutputOwner(name); ok {
		return []string{addr}
	}
	return nil
}

// Blocks returns the instance addresses of each phase block, by block
// name, for a memo of the model (see Restore). The caller must not
// change it.
func (s *Spec) Blocks() map[string][]string { return s.blocks }

// Restore completes a model decoded from a memo, which holds everything
// but the indexes (File, Dir, Hash, Experiment, Variables, Pools, Phases):
// it sets the blocks, indexes the phases by address and builds the graph.
// It returns nil when the phases do not make one (an edge to a phase
// that is not there, a cycle): the memo was damaged.
func Restore(s *Spec, blocks map[string][]string) *Spec {
	s.blocks = blocks
	if s.Variables == nil {
		s.Variables = map[string]string{}
	}
	if s.Pools == nil {
		s.Pools = map[string]*Pool{}
	}
	if s.blocks == nil {
		s.blocks = map[string][]string{}
	}
	s.byAddr = make(map[string]*Phase, len(s.Phases))
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

// Phase returns the phase with the given address, or nil.
func (s *Spec) Phase(addr string) *Phase { return s.byAddr[addr] }

// Addrs returns every phase address in declaration order.
func (s *Spec) Addrs() []string {
	out := make([]string, len(s.Phases))
	for i, p := range s.Phases {
		out[i] = p.Addr
	}
	return out
}

// Experiment holds the settings of the experiment block.
type Experiment struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Concurrency is the default number of phases run at once; 0 means
	// "number of CPUs".
	Concurrency int `json:"concurrency,omitempty"`
	// CacheDir is the cache directory from cache { dir }, made absolute
	// against the workspace, or "" when not set.
	CacheDir string `json:"cache_dir,omitempty"`
	// CacheShared is cache { shared = "group" }: the cache directory is
	// shared by a Unix group.
	CacheShared bool `json:"cache_shared,omitempty"`
	// CacheRemote is the remote cache's URL from cache { remote }, or "".
	// It never holds credentials (they come from the environment).
	CacheRemote string `json:"cache_remote,omitempty"`
	// CacheRequireSigned is cache { require_signed = true }: entries not
	// signed with the team key (CAIRN_CACHE_SIGNING_KEY) are ignored.
	CacheRequireSigned bool `json:"cache_require_signed,omitempty"`
	// CacheTrustedKeys is cache { trusted_keys }: the public key files,
	// made absolute against the spec's directory, of the writers whose
	// signed entries are used; entries no listed key signed are ignored.
	CacheTrustedKeys []string `json:"cache_trusted_keys,omitempty"`
	// Budget holds the whole-run limits.
	Budget RunBudget `json:"budget,omitzero"`
	// Executor is the default executor of the phases ("" means local).
	Executor string `json:"executor,omitempty"`
	// ExecutorConfig holds the default settings of the phases for each
	// executor whose block the experiment holds, by executor name.
	ExecutorConfig map[string]executor.Config `json:"executor_config,omitempty"`
}

// Phase is one evaluated phase.
type Phase struct {
	// Addr is the phase's address: its name, or NAME["KEY"] for an
	// instance of a phase with for_each.
	Addr string
	// Block is the phase block's name; Key the instance key ("" without
	// for_each).
	Block       string
	Key         string
	HasForEach  bool
	Description string

	// Command is the argv to execute. A string command becomes
	// ["sh", "-c", string] and Shell is true.
	Command []string
	Shell   bool

	// Inputs are cleaned slash paths or glob patterns (with **), relative
	// to the workspace unless absolute.
	Inputs []string
	// Outputs are the declared outputs in declaration order (map outputs
	// sorted by name).
	Outputs []Output

	// Params are canonical JSON values by name.
	Params map[string]string
	// Metrics are the paths of the outputs that hold the phase's metrics
	// (JSON objects), in declaration order: each is one of Outputs' paths.
	Metrics []string
	// Temporary are the paths of the outputs that are hashed but not
	// stored in the cache, and removed from the workspace once the phases
	// reading them in a run have succeeded, in declaration order: each is
	// one of Outputs' paths.
	Temporary []string
	// Env holds declared environment variables (hashed into the key).
	Env map[string]string
	// SecretEnv and PassEnv are names passed through from the caller; they
	// never enter a key, a log or state.
	SecretEnv []string
	PassEnv   []string

	// Workdir is the directory the command runs in, relative to the
	// workspace ("." by default).
	Workdir string
	// Cache is false for phases that must always run.
	Cache bool
	// NoPipefail is pipefail = false: a shell pipeline's status is its
	// last stage's, as sh has it, rather than a failure when any stage
	// fails. It does not enter the phase's key: strictness only turns
	// silent failures into failures.
	NoPipefail bool
	// Budget holds the phase's time, retry and spending limits.
	Budget Budget
	// EnvRead holds the environment variables the phase's expressions read
	// with env(NAME), by name: "=VALUE", or "unset". They enter the key.
	EnvRead map[string]string
	// Resources holds the units of each pool the phase holds while it
	// runs.
	Resources map[string]int
	// Executor is where the phase's command runs, a registered executor's
	// name (its own executor attribute, else the experiment's, else
	// local). ExecutorConfig holds its settings for each executor whose
	// block it or the experiment holds, by executor name: the
	// experiment's block overlaid with its own. Neither enters the
	// phase's key.
	Executor       string
	ExecutorConfig map[string]executor.Config

	// Upstream lists, per upstream phase address, the output paths this
	// phase reads from it; a nil slice means all of that phase's outputs
	// (depends_on, or a reference to the whole outputs object).
	Upstream map[string][]string

	// DeclRange is the range of the phase block's header, for diagnostics.
	DeclRange hcl.Range
	// inputRanges holds the source range of each entry of Inputs, or of
	// the whole inputs attribute when entries have no range of their own:
	// for the diagnostics of linking, while the spec is parsed. A spec
	// loaded from its memo was linked already and has none (they were a
	// third of the memo's bytes to decode).
	inputRanges []hcl.Range
	// outputRanges is inputRanges for Outputs.
	outputRanges []hcl.Range
	// listOutputs says the outputs attribute evaluated to a list (so
	// phase.NAME.outputs is a tuple), while the spec is parsed.
	listOutputs bool
}

// Output is one declared output.
type Output struct {
	// Name is the map key, or the decimal index for list outputs.
	Name string `json:"name"`
	// Path is a cleaned, slash-separated path inside the workspace.
	Path string `json:"path"`
}

// OutputPaths returns the phase's output paths in declaration order.
func (p *Phase) OutputPaths() []string {
	out := make([]string, len(p.Outputs))
	for i, o := range p.Outputs {
		out[i] = o.Path
	}
	return out
}
