package executor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
)

// Local is the name of the executor of phases that name none: this
// machine.
const Local = "local"

// Plugin is what an executor tells the registry about itself.
type Plugin struct {
	// Name is what a spec's executor attribute and --executor give, and
	// the type of the executor's configuration block.
	Name string
	// Summary says where phases run, in the messages that list the
	// executors: "this machine", "submit with sbatch".
	Summary string
	// Decode, when not nil, validates and evaluates a configuration block
	// of the executor (slurm { ... }) in the experiment or a phase, as
	// the spec is loaded: its diagnostics point into the spec. What it
	// returns is stored with the evaluated spec (the spec memo) and
	// handed back, the phase's block overlaid on the experiment's, in
	// RemoteJob.Config.
	Decode func(body hcl.Body, ctx *hcl.EvalContext) (Config, hcl.Diagnostics)
	// JobEnv, when not "", is an environment variable that every process
	// of the executor's jobs carries (SLURM_JOB_ID): the local executor
	// never kills such a process, which its executor follows and cancels,
	// even when the job runs on this machine.
	JobEnv string
	// New makes the executor for one cairn process. Nothing should be
	// asked of the backend before a phase runs on it.
	New func(Env) (Executor, error)
}

// Env is what a cairn process gives the executors it makes.
type Env struct {
	// Warn receives one-line warnings; never nil.
	Warn func(msg string)
	// Kill, when closed, asks for every running job to end at once (a
	// third Ctrl-C).
	Kill <-chan struct{}
}

var registry struct {
	mu      sync.RWMutex
	plugins map[string]Plugin
	sorted  []Plugin // plugins by name
}

// Register makes an executor known. It is meant for init functions (a
// spec is loaded against the executors registered by then) and panics on
// a plugin without a name or factory, or a name registered twice.
func Register(p Plugin) {
	if p.Name == "" || p.New == nil {
		panic("executor: Register needs a name and a factory")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.plugins[p.Name]; dup {
		panic(fmt.Sprintf("executor: %q registered twice", p.Name))
	}
	if registry.plugins == nil {
		registry.plugins = map[string]Plugin{}
	}
	registry.plugins[p.Name] = p
	registry.sorted = slices.Collect(maps.Values(registry.plugins))
	sort.Slice(registry.sorted, func(i, j int) bool { return registry.sorted[i].Name < registry.sorted[j].Name })
}

// Lookup returns the executor registered under name.
func Lookup(name string) (Plugin, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	p, ok := registry.plugins[name]
	return p, ok
}

// Plugins returns the registered executors, by name. The slice is
// shared: callers must not modify it.
func Plugins() []Plugin {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	return registry.sorted
}

// Names returns the names of the registered executors, sorted.
func Names() []string {
	var names []string
	for _, p := range Plugins() {
		names = append(names, p.Name)
	}
	return names
}

// Config is an executor's settings for one phase, by attribute of its
// block, each value JSON: what the executor's Decode made of the
// experiment's block and of the phase's, the phase's attributes replacing
// the experiment's one by one.
type Config map[string]json.RawMessage

// Over returns c with every attribute o sets replaced by o's.
func (c Config) Over(o Config) Config {
	if len(o) == 0 {
		return c
	}
	if len(c) == 0 {
		return o
	}
	out := maps.Clone(c)
	maps.Copy(out, o)
	return out
}

// Decode unmarshals c into v (a pointer to a struct whose JSON field
// names are the block's attribute names), as one JSON object.
func (c Config) Decode(v any) error {
	if len(c) == 0 {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
