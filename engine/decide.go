package engine

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/inputs"
	"github.com/cairn-run/cairn/keydiff"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/outputs"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

// Action is what a run does with a phase.
type Action string

const (
	ActionRun     Action = "run"
	ActionCached  Action = "cached"
	ActionRestore Action = "restore"
)

// Decision is what a run would do with a phase, and why.
type Decision struct {
	Phase   string   `json:"phase"`
	Action  Action   `json:"action"`
	Reasons []string `json:"reasons,omitempty"`
	// Key is empty when it cannot be known yet (an upstream phase must run
	// first).
	Key string `json:"key,omitempty"`
	// Estimate is a phase to run's expected duration and spending, when
	// the plan was asked for estimates (PlanOptions.Estimate).
	Estimate *estimate.Estimate `json:"estimate,omitempty"`

	key        cache.ActionID
	components []cache.Component
	// keyed, when the components were computed, is them with their key
	// and chunks, which the miss's reasons and the stored result share.
	keyed   *cache.Keyed
	entry   *cache.Entry
	parts   outputs.Parts // entry's outputs by declared output
	restore []string      // outputs to restore
	// tempGone holds the temporary outputs the workspace lacks (or holds
	// changed) and the entry cannot restore: the phase is cached without
	// them unless a phase reading one must run (see settleTemporary).
	tempGone []string
	warnings []string
	// notCached: the phase ran, but its inputs changed meanwhile, so its
	// result was not stored under key (see inputsChanged).
	notCached bool
	// forced is set when the phase runs because it was forced: its
	// result then supersedes the entry stored under its key.
	forced bool
	// own and ownKey, for a phase planned to run because an upstream phase
	// will, are its components but the outputs of those upstream phases,
	// and their hash: what a saved plan can check of it (see ownChanges).
	own    []cache.Component
	ownKey cache.ActionID
	// seen, when known, is the fingerprint the key was computed from and
	// the inputs racy then (see inputsChanged).
	seen *seenInputs
	// watched, for a phase to run on this kernel, is its inputs' walk
	// under a directory watch, which spares the recheck another walk
	// (see inputsChanged); whoever decided closes it.
	watched *inputs.Watched
}

// PlanComponents returns the components the decision was made on: its
// key's, or, when its key cannot be known yet, all but the outputs of the
// upstream phases that will run. It is nil when they were not computed (a
// phase found cached by its remembered key).
func (d *Decision) PlanComponents() []cache.Component {
	if d.components != nil {
		return d.components
	}
	return d.own
}

// ProvisionalKey returns the hash of the components of a phase whose key
// cannot be known yet, or "" (see PlanComponents).
func (d *Decision) ProvisionalKey() string {
	if d.own == nil {
		return ""
	}
	return d.ownKey.String()
}

// DiffComponents says, one line each, how the components cur differ from
// prev, as plan's reasons do, with sensitive values hidden.
func (e *Engine) DiffComponents(prev, cur []cache.Component) []string {
	return e.maskSensitive(diffComponents(prev, cur, e.producer))
}

// decide computes p's key and looks it up. up holds the output trees of
// p's upstream phases; forced makes a hit run anyway.
func (e *Engine) decide(p *spec.Phase, up map[string][]cache.OutputFile, forced bool) (*Decision, error) {
	return e.decideWith(p, up, forced, true, false)
}

// decideWith is decide; remembered allows taking the key from the phase-key
// memory when the phase's fingerprint is unchanged. The components are
// then those of the cached entry found under that key (which hash to it),
// or, when there is none, computed in full. watch walks the inputs under
// a directory watch (Decision.watched), for a phase to run on this kernel.
func (e *Engine) decideWith(p *spec.Phase, up map[string][]cache.OutputFile, forced, remembered, watch bool) (*Decision, error) {
	d, err := e.decideKeyed(p, up, forced, remembered, watch)
	if err == errStaleKey {
		// Never expected: the memory named a key the phase's components
		// do not give. Decide again without it.
		e.phaseKeys.Forget(p.Addr)
		return e.decideWith(p, up, forced, false, watch)
	}
	return d, err
}

// keying is a phase's key being made: taken from the phase-key memory, its
// components computed only when wanted (see full), or computed at once.
type keying struct {
	e          *Engine
	p          *spec.Phase
	g          *gathered
	began      int64 // before any input was stat'ed (the racy rule)
	fp         [32]byte
	fpOK       bool
	remembered bool // key came from the memory, comps not yet computed
	key        cache.ActionID
	comps      []cache.Component
	keyed      *cache.Keyed    // comps, keyed
	seen       *seenInputs     // what key was made from, when known
	watched    *inputs.Watched // g's walk under a watch, if asked for
}

// seenInputs is what a phase's inputs were when its key was made: their
// fingerprint (stats), and the racy ones' digests.
type seenInputs struct {
	fp   [32]byte
	racy []memories.RacyInput
}

// start gathers p's inputs and takes its key from the memory when
// remembered allows it, else computes it in full; with watch, the inputs
// are walked under a watch (k.watched), which the caller closes.
func (k *keying) start(e *Engine, p *spec.Phase, up map[string][]cache.OutputFile, forced, remembered, watch bool) error {
	k.e, k.p = e, p
	k.began = time.Now().UnixNano()
	if watch {
		k.watched = inputs.NewWatched(&e.ws)
	}
	g, err := e.gatherUnder(p, up, k.watched)
	if err != nil {
		return err
	}
	k.g = g
	// The memory saves looking input files up; a phase without any (a
	// sweep's instance, often) gets nothing from it: its fingerprint costs
	// what its key does, and a plan of 100,000 new ones spent a fifth of
	// its deciding on fingerprints and lookups it then computed past.
	if e.phaseKeys != nil && len(g.Files) > 0 {
		k.fp, k.fpOK = e.fingerprint(g), true
	}
	if remembered && k.fpOK && !forced && p.Cache {
		var racy []memories.RacyInput
		if k.key, racy, k.remembered = e.phaseKeys.Lookup(p.Addr, k.fp, e.sameContent); k.remembered {
			k.seen = &seenInputs{fp: k.fp, racy: racy}
		}
	}
	if !k.remembered {
		return k.full()
	}
	return nil
}

// full computes the components (g is used up) and, if the key came from
// the memory, checks it against them: errStaleKey if they differ.
func (k *keying) full() error {
	if k.comps != nil {
		return nil
	}
	c, err := k.e.finishComponents(k.p, k.g)
	if err != nil {
		return err
	}
	k.keyed = cache.NewKeyed(c)
	k.comps = k.keyed.Components()
	key := k.keyed.Key()
	if k.remembered && key != k.key {
		return errStaleKey
	}
	k.key = key
	if k.seen = k.racyInputs(); k.seen != nil {
		k.e.phaseKeys.Record(k.p.Addr, k.fp, key, k.seen.racy)
	}
	return nil
}

// maxRacy bounds the racy inputs a key is remembered with: more (a tree
// just unpacked) are cheaper computed in full than hashed at each lookup.
const maxRacy = 256

// racyInputs returns k's fingerprint and the inputs racy at k.began (the
// racy rule), each with the digest its component holds; nil if there is no
// fingerprint, too many are racy, or redaction changed a component.
func (k *keying) racyInputs() *seenInputs {
	if !k.fpOK {
		return nil
	}
	var racy []memories.RacyInput
	for _, f := range k.g.Files {
		if len(racy) == maxRacy {
			return nil
		}
		if !workspace.RacyAt(f.St, k.began) {
			continue
		}
		i, ok := slices.BinarySearchFunc(k.comps, f.Rel, func(c cache.Component, rel string) int {
			return cmp.Or(strings.Compare(c.Kind, kindInput), strings.Compare(c.Name, rel))
		})
		var d cache.Digest
		if ok { // the value fileValue gave, unless redaction changed it
			v := k.comps[i].Value
			_, err := hex.Decode(d[:], []byte(v[min(2, len(v)):min(len(v), 2+2*len(d))]))
			ok = err == nil && v == fileValue(d, f.St.Mode)
		}
		if !ok {
			return nil
		}
		racy = append(racy, memories.RacyInput{Path: f.Rel, Stat: f.St, Digest: d})
	}
	return &seenInputs{fp: k.fp, racy: racy}
}

// sameContent reports whether each of the inputs racy when a key was made
// still has the content the key holds (hashed again where the digest
// memory cannot vouch for it).
func (e *Engine) sameContent(racy []memories.RacyInput) bool {
	for _, r := range racy {
		d, err := e.mem.DigestOf(e.workCtx(), r.Path, e.ws.Abs(r.Path), r.Stat)
		if err != nil || d != r.Digest {
			return false
		}
	}
	return true
}

// decideKeyed is decideWith but for a stale remembered key, which it
// returns as errStaleKey.
func (e *Engine) decideKeyed(p *spec.Phase, up map[string][]cache.OutputFile, forced, remembered, watch bool) (_ *Decision, err error) {
	d := &Decision{Phase: p.Addr}
	var k keying
	defer func() {
		d.seen, d.watched = k.seen, k.watched
		if err != nil {
			k.watched.Close()
		}
	}()
	if err := k.start(e, p, up, forced, remembered, watch); err != nil {
		return nil, err
	}
	d.key = k.key
	d.Key = d.key.String()
	d.components, d.keyed = k.comps, k.keyed

	switch {
	case forced:
		d.Action, d.Reasons, d.forced = ActionRun, []string{"forced"}, true
		return d, nil
	case !p.Cache:
		d.Action, d.Reasons = ActionRun, []string{"cache = false: always runs"}
		return d, nil
	}
	// Lean: a phase found cached needs the entry's outputs, not its
	// components (they are the phase's, computed or remembered).
	entry, err := e.cache.GetEntryLean(d.key)
	if err == nil {
		e.session.Hit(d.key)
	} else {
		e.session.Miss(d.key)
	}
	var parts outputs.Parts
	problem := ""
	if err == nil {
		parts, problem = outputs.Split(entry)
	}
	// A miss needs the components: to explain it, and to record them with
	// the result the phase's run will store.
	if errors.Is(err, cache.ErrNotFound) || errors.Is(err, cache.ErrCorrupt) || problem != "" {
		if ferr := k.full(); ferr != nil {
			return nil, ferr
		}
		d.components, d.keyed = k.comps, k.keyed
	}
	switch {
	case errors.Is(err, cache.ErrNotFound):
		d.Action, d.Reasons = ActionRun, e.explainMiss(p, k.keyed)
		return d, nil
	case errors.Is(err, cache.ErrCorrupt):
		d.warnings = append(d.warnings, fmt.Sprintf("phase %s: cached result is corrupt and was moved aside: %v", p.Addr, err))
		d.Action, d.Reasons = ActionRun, []string{"cached result was corrupt"}
		return d, nil
	case err != nil:
		return nil, fmt.Errorf("phase %s: %w", p.Addr, err)
	}
	if problem != "" {
		d.warnings = append(d.warnings, fmt.Sprintf("phase %s: cached result %s %s; ignoring it", p.Addr, d.key.Short(), problem))
		d.Action, d.Reasons = ActionRun, []string{"cached result was corrupt"}
		return d, nil
	}
	return e.decideHit(d, p, &k, entry, parts)
}

// decideHit decides a phase found in the cache: cached, to restore the
// outputs the workspace lacks, or to run when one of them was temporary
// when the entry was stored and is no longer.
func (e *Engine) decideHit(d *Decision, p *spec.Phase, k *keying, entry *cache.Entry, parts outputs.Parts) (*Decision, error) {
	if d.components == nil && !entry.Lean {
		// The entry's components hash to its key (checked when it was
		// read), so they are the phase's. A lean entry's are not all
		// there: d.components stays nil, and fullComponents reads them
		// when wanted.
		d.components = entry.Components
	}
	d.entry, d.parts = entry, parts
	if unstored := e.outputsToRestore(d, p); len(unstored) > 0 {
		// The output was temporary when the entry was stored and is no
		// longer: only running the phase gives it back.
		if ferr := k.full(); ferr != nil {
			return nil, ferr
		}
		d.components, d.keyed = k.comps, k.keyed
		d.Action = ActionRun
		for _, o := range unstored {
			d.Reasons = append(d.Reasons, fmt.Sprintf("output %s is gone and was temporary when cached", o))
		}
		d.restore, d.tempGone = nil, nil
		return d, nil
	}
	if len(d.restore) == 0 {
		d.Action = ActionCached
		return d, nil
	}
	d.Action = ActionRestore
	for _, o := range d.restore {
		d.Reasons = append(d.Reasons, fmt.Sprintf("output %s missing or changed", o))
	}
	// The hit goes to the session file now, not when the restore starts:
	// a GC that runs in between must see that the entry is in use, or it
	// may evict it and its blobs, and the phase would run again.
	e.session.Flush()
	if testHookRestoreDecided != nil {
		testHookRestoreDecided(e, p.Addr)
	}
	return d, nil
}

// outputsToRestore compares p's outputs in the workspace with the
// entry's: it sets d.restore (stored, missing or changed) and d.tempGone
// (temporary, gone), and returns the outputs the entry does not hold that
// the spec no longer calls temporary.
func (e *Engine) outputsToRestore(d *Decision, p *spec.Phase) (unstored []string) {
	outs := make([]string, len(p.Outputs))
	for i, o := range p.Outputs {
		outs[i] = o.Path
	}
	unmatched := e.out.Unmatched(outs, d.parts)
	for i, o := range p.Outputs {
		part := d.parts[o.Path]
		if !unmatched[i] {
			continue
		}
		switch {
		case !outputs.Temporary(part):
			d.restore = append(d.restore, o.Path)
		case p.IsTemporary(o.Path):
			d.tempGone = append(d.tempGone, o.Path)
		default:
			unstored = append(unstored, o.Path)
		}
	}
	return unstored
}

// testHookRestoreDecided, set by tests only, is called when a phase has
// been decided restored, before anything of it is restored.
var testHookRestoreDecided func(e *Engine, addr string)

// settleTemporary decides which phases cached without some of their
// temporary outputs (Decision.tempGone) must run after all, because a
// phase that reads one of those outputs runs. decisions are in
// topological order; they are visited in reverse so that a phase made to
// run is itself seen as a reader of its own upstream phases' temporary
// outputs. It changes those decisions to run, with the reasons, and
// returns them by address; a phase left cached without a temporary
// output says so in its reasons.
func (e *Engine) settleTemporary(decisions []*Decision) map[string][]string {
	byAddr := make(map[string]*Decision, len(decisions))
	anyGone := false
	for _, d := range decisions {
		if d != nil {
			byAddr[d.Phase] = d
			anyGone = anyGone || len(d.tempGone) > 0
		}
	}
	if !anyGone {
		return nil
	}
	need := map[string][]string{}
	for i := len(decisions) - 1; i >= 0; i-- {
		d := decisions[i]
		if d == nil || d.Action != ActionRun {
			continue
		}
		p := e.spec.Phase(d.Phase)
		for _, u := range e.spec.Graph.Upstream(d.Phase) {
			ud := byAddr[u]
			if ud == nil || len(ud.tempGone) == 0 {
				continue
			}
			for _, t := range ud.tempGone {
				if p.Reads(u, t) {
					need[u] = append(need[u], fmt.Sprintf("temporary output %s is gone; %s needs it", t, d.Phase))
				}
			}
			if need[u] != nil {
				ud.Action, ud.Reasons = ActionRun, need[u]
			}
		}
	}
	for _, d := range decisions {
		if d != nil && len(d.tempGone) > 0 && need[d.Phase] == nil {
			for _, t := range d.tempGone {
				d.Reasons = append(d.Reasons, fmt.Sprintf("temporary output %s is gone; no phase that runs needs it", t))
			}
		}
	}
	return need
}

// fullComponents returns the components of d, a decision found cached: d's
// own, else those of its entry read whole (a lean one has only its
// outputs'), else p's computed afresh, which must give d's key.
func (e *Engine) fullComponents(p *spec.Phase, d *Decision, up map[string][]cache.OutputFile) ([]cache.Component, error) {
	if d.components != nil {
		return d.components, nil
	}
	if whole, err := e.cache.GetEntry(d.key); err == nil {
		return whole.Components, nil
	}
	comps, err := e.components(p, up)
	if err != nil {
		return nil, err
	}
	if cache.ComputeKey(comps) != d.key {
		return nil, fmt.Errorf("phase %s: its inputs changed while it was decided; run again", p.Addr)
	}
	return comps, nil
}

// errStaleKey says a remembered key differs from the computed one.
var errStaleKey = errors.New("remembered phase key is stale")

// explainMiss says why p's key has no entry, by comparing its components
// with those recorded for the phase's last result in this workspace.
func (e *Engine) explainMiss(p *spec.Phase, cur *cache.Keyed) []string {
	prevKey, ok := e.lastKeys.Get(p.Addr)
	if !ok {
		return []string{"new phase"}
	}
	// Its head only: of the inputs in chunks, only those that differ are read.
	prev, err := e.cache.GetEntryHead(prevKey)
	var old, comps []cache.Component
	if err == nil {
		old, comps, err = keydiff.Changed(prev, cur, e.cache.ReadChunk)
	}
	if err != nil {
		return e.notInCache(p, "its last result is no longer in the cache")
	}
	reasons := e.maskSensitive(diffComponents(old, comps, e.producer))
	if len(reasons) == 0 {
		return e.notInCache(p, "no cached result")
	}
	return reasons
}

// notInCache explains a miss with nothing to diff against: the outputs
// the workspace lacks, which the cache cannot give back, else why.
func (e *Engine) notInCache(p *spec.Phase, why string) []string {
	var reasons []string
	for _, o := range p.Outputs {
		if _, err := os.Lstat(e.ws.Abs(o.Path)); err != nil {
			reasons = append(reasons, fmt.Sprintf("output %s missing and not in cache", o.Path))
		}
	}
	if len(reasons) == 0 {
		return []string{why}
	}
	return reasons
}

// diffComponents is keydiff.Reasons.
func diffComponents(prev, cur []cache.Component, producer map[string]string) []string {
	return keydiff.Reasons(prev, cur, producer)
}

// maskSensitive is keydiff.Mask with the spec's sensitive values.
func (e *Engine) maskSensitive(lines []string) []string {
	return keydiff.Mask(lines, e.spec.SensitiveValues)
}
