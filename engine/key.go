package engine

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/inputs"
	"github.com/cairn-run/cairn/keydiff"
	"github.com/cairn-run/cairn/spec"
)

// Component kinds hashed into a phase key. The same components, recorded in
// the cache entry, explain later why a phase reruns.
const (
	kindCommand  = keydiff.KindCommand
	kindWorkdir  = keydiff.KindWorkdir
	kindEnv      = keydiff.KindEnv
	kindParam    = keydiff.KindParam
	kindOutput   = keydiff.KindOutput
	kindInput    = keydiff.KindInput
	kindUpstream = keydiff.KindUpstream
	kindBudget   = keydiff.KindBudget
	kindEnvFn    = keydiff.KindEnvFn
)

// MissingInputError says that an input names nothing on disk and no phase
// produces it.
type MissingInputError = inputs.MissingInputError

// fileValue is how a file's content and executable bit enter a key. Only
// the executable bit of the mode counts, so teammates with different
// umasks share keys.
func fileValue(d cache.Digest, mode fs.FileMode) string {
	var b [fileValueLen]byte
	putFileValue(b[:], d, mode)
	return string(b[:])
}

const fileValueLen = 2 + 2*len(cache.Digest{})

// putFileValue writes fileValue(d, mode) into b[:fileValueLen].
func putFileValue(b []byte, d cache.Digest, mode fs.FileMode) {
	b[0], b[1] = '-', ':'
	if mode&0o111 != 0 {
		b[0] = 'x'
	}
	hex.Encode(b[2:fileValueLen], d[:])
}

// commandValue is how a command's argv enters a key: its JSON array, as
// encoding/json writes it (with its HTML escapes: a shell command often
// holds ">"). Arguments of printable ASCII are written here; any other
// byte goes through encoding/json, whose reflection was a tenth of a no-op
// run's decisions.
func commandValue(argv []string) string {
	if argv == nil {
		return "null"
	}
	n := 2
	for _, a := range argv {
		for i := 0; i < len(a); i++ {
			switch c := a[i]; {
			case c < 0x20 || c >= 0x7f:
				b, _ := json.Marshal(argv)
				return string(b)
			case c == '"' || c == '\\':
				n++
			case c == '<' || c == '>' || c == '&':
				n += 5
			}
		}
		n += len(a) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, a := range argv {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(a); j++ {
			switch c := a[j]; c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '<', '>', '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
		}
		b = append(b, '"')
	}
	b = append(b, ']')
	return string(b)
}

const hexDigits = "0123456789abcdef"

func outputValue(f cache.OutputFile) string {
	if f.Type == "symlink" {
		return "l:" + f.Target
	}
	return fileValue(f.Digest, fs.FileMode(f.Mode))
}

// components computes the key components of p, whose upstream phases'
// output trees are given by phase address. Input files are hashed through
// the memory.
func (e *Engine) components(p *spec.Phase, up map[string][]cache.OutputFile) ([]cache.Component, error) {
	g, err := e.gatherUnder(p, up, nil)
	if err != nil {
		return nil, err
	}
	return e.finishComponents(p, g)
}

// gathered is what a phase's key is computed from, before any input file
// is hashed (package inputs).
type gathered = inputs.Gathered

// finder finds and digests the engine's phases' input files.
func (e *Engine) finder() *inputs.Finder {
	return &inputs.Finder{WS: &e.ws, Mem: e.mem, Workers: e.hashWorkers, Ctx: e.workCtx, Report: e.rep}
}

// gather expands p's inputs and builds every component but the input
// files', hashing none (its fingerprint is all it is for).
func (e *Engine) gather(p *spec.Phase, up map[string][]cache.OutputFile) (*gathered, error) {
	files, reads, err := e.finder().Files(p, up)
	if err != nil {
		return nil, err
	}
	return &gathered{Comps: baseComponents(p, reads), Argv: p.Command, Files: files}, nil
}

// gatherUnder is gather, p's input directories walked under v's watch
// when v is not nil, and the small files of those the digest memory knows
// no file of hashed as they are found (see inputs.Finder.FilesDigested).
func (e *Engine) gatherUnder(p *spec.Phase, up map[string][]cache.OutputFile, v *inputs.Watched) (*gathered, error) {
	f := e.finder()
	f.Watched = v
	files, digests, reads, err := f.FilesDigested(p, up)
	if err != nil {
		return nil, err
	}
	return &gathered{Comps: baseComponents(p, reads), Argv: p.Command, Files: files, Digests: digests}, nil
}

// baseComponents returns p's components but the command's and the input
// files', with room for the command's.
func baseComponents(p *spec.Phase, reads map[string]cache.OutputFile) []cache.Component {
	// The command's component is added by finishComponents: a phase
	// whose key is remembered never needs its JSON (the fingerprint
	// takes the words themselves).
	comps := make([]cache.Component, 0, 2+len(p.Env)+len(p.Params)+2+len(p.EnvRead)+len(p.Outputs)+len(reads)+1)
	comps = append(comps, cache.Component{Kind: kindWorkdir, Value: p.Workdir})
	for k, v := range p.Env {
		comps = append(comps, cache.Component{Kind: kindEnv, Name: k, Value: v})
	}
	for k, v := range p.Params {
		comps = append(comps, cache.Component{Kind: kindParam, Name: k, Value: v})
	}
	// The phase sees its spending limits and may stop early by them.
	if b := p.Budget.MaxCost; b != nil {
		comps = append(comps, cache.Component{Kind: kindBudget, Name: "max_cost", Value: strconv.FormatFloat(*b, 'g', -1, 64)})
	}
	if b := p.Budget.MaxIterations; b != nil {
		comps = append(comps, cache.Component{Kind: kindBudget, Name: "max_iterations", Value: strconv.FormatInt(*b, 10)})
	}
	for k, v := range p.EnvRead {
		comps = append(comps, cache.Component{Kind: kindEnvFn, Name: k, Value: v})
	}
	for _, o := range p.Outputs {
		comps = append(comps, cache.Component{Kind: kindOutput, Name: o.Name, Value: o.Path})
	}
	readPaths := make([]string, 0, len(reads))
	for path := range reads {
		readPaths = append(readPaths, path)
	}
	sort.Strings(readPaths)
	for _, path := range readPaths {
		comps = append(comps, cache.Component{Kind: kindUpstream, Name: path, Value: outputValue(reads[path])})
	}
	return comps
}

// finishComponents hashes the input files of g (through the memory) and
// returns all of p's components, redacted and sorted. g.Comps is reused.
func (e *Engine) finishComponents(p *spec.Phase, g *gathered) ([]cache.Component, error) {
	byKind := func(a, b cache.Component) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	}
	others := append(g.Comps, cache.Component{Kind: kindCommand, Value: commandValue(p.Command)})
	slices.SortFunc(others, byKind)
	// The input files go where their kind sorts among the others, in the
	// walk's order (by path): the million files of a directory input are
	// then sorted already, which one pass checks.
	at, _ := slices.BinarySearchFunc(others, kindInput, func(c cache.Component, kind string) int { return strings.Compare(c.Kind, kind) })
	comps := make([]cache.Component, len(others)+len(g.Files))
	copy(comps, others[:at])
	copy(comps[at+len(g.Files):], others[at:])
	// Each file's component is made as its digest comes, its value cut
	// from one string: a directory input may hold a million files.
	b := make([]byte, len(g.Files)*fileValueLen)
	values := unsafe.String(unsafe.SliceData(b), len(b)) // each part read once written
	put := func(i int, d cache.Digest) {
		f := &g.Files[i]
		putFileValue(b[i*fileValueLen:], d, f.St.Mode)
		comps[at+i] = cache.Component{Kind: kindInput, Name: f.Rel, Value: values[i*fileValueLen : (i+1)*fileValueLen]}
	}
	err := e.finder().Digests(p.Addr, g.Files, g.Digests, put)
	g.Digests = nil
	if err != nil {
		return nil, fmt.Errorf("phase %s: %w", p.Addr, err)
	}
	e.redactSensitive(comps)
	if !slices.IsSortedFunc(comps, byKind) { // a redacted path, or other input components
		slices.SortFunc(comps, byKind)
	}
	return comps, nil
}

// redactSensitive replaces, in every component, each value of a sensitive
// variable with sensitiveToken(value). Components are stored in clear in
// cache entries (for "why"), so the value itself must not be there; its
// token still changes the key when the value changes.
func (e *Engine) redactSensitive(comps []cache.Component) {
	if len(e.spec.SensitiveValues) == 0 {
		return
	}
	vals := make([]string, 0, len(e.spec.SensitiveValues))
	for _, v := range e.spec.SensitiveValues {
		if v != "" {
			vals = append(vals, v)
		}
	}
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(vals, func(i, j int) bool {
		if len(vals[i]) != len(vals[j]) {
			return len(vals[i]) > len(vals[j])
		}
		return vals[i] < vals[j]
	})
	for i := range comps {
		for _, v := range vals {
			comps[i].Name = strings.ReplaceAll(comps[i].Name, v, sensitiveToken(v))
			comps[i].Value = strings.ReplaceAll(comps[i].Value, v, sensitiveToken(v))
		}
	}
}

// sensitiveToken stands for a sensitive value in a key component: a
// domain-separated SHA-256 prefix, which tells values apart without
// revealing one (the key itself, a hash over the value, gives a guesser no
// less).
func sensitiveToken(v string) string {
	sum := sha256.Sum256([]byte("cairn sensitive value\x00" + v))
	return "(sensitive " + hex.EncodeToString(sum[:8]) + ")"
}
