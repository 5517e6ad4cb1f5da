package spec

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/internal/cores"
)

var phaseSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "command", Required: true},
		{Name: "description"},
		{Name: "inputs"},
		{Name: "outputs"},
		{Name: "params"},
		{Name: "env"},
		{Name: "secret_env"},
		{Name: "pass_env"},
		{Name: "depends_on"},
		{Name: "workdir"},
		{Name: "cache"},
		{Name: "pipefail"},
		{Name: "for_each"},
		{Name: "resources"},
		{Name: "metrics"},
		{Name: "temporary"},
		{Name: "executor"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "budget"}}, // and the executors' (withExecutorBlocks)
}

// rawPhase is a phase block decoded into expressions, before evaluation.
type rawPhase struct {
	name  string
	block *hcl.Block
	attrs hcl.Attributes
	// budgets holds the phase's budget blocks (at most one is valid);
	// execBlocks its executors' blocks (slurm { ... }).
	budgets    []*hcl.Block
	execBlocks hcl.Blocks
	refs       []phaseRef // from every attribute but depends_on and for_each
	deps       []phaseRef // from depends_on
	// forEach is the for_each expression, or nil; forEachRefs are the
	// phases it refers to, and eachPhase the block it iterates when it is
	// exactly phase.NAME (each.value is then that block's instance).
	forEach     hcl.Expression
	forEachRefs []phaseRef
	eachPhase   string
	eachRefs    []phaseRef // each.value.outputs[.KEY] uses
	// usesSelf is set when an attribute evaluated after inputs and
	// outputs refers to self.
	usesSelf bool
}

// phaseRef is one reference to another phase. output is the output name
// read, or "" when the reference takes all outputs. For a phase with
// for_each, key is the instance referred to (hasKey), else every
// instance.
type phaseRef struct {
	phase  string
	key    string
	hasKey bool
	output string
	rng    hcl.Range
	// attr is the attribute read from phase.NAME itself (outputs in
	// phase.NAME.outputs.KEY), and after the rest of the traversal
	// (.KEY), written out: a phase with for_each has none but its keys.
	attr, after string
}

var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// decodePhases decodes the phase blocks into s.Phases: each block's
// references are collected to order the blocks, then each is evaluated
// in that order (every instance of a block with for_each), and the
// phases are linked by the paths they share.
func decodePhases(s *Spec, blocks []*hcl.Block, sc *scope) hcl.Diagnostics {
	raws, order, diags := declarePhases(blocks)
	names := make([]string, 0, len(order))
	for _, rp := range order {
		names = append(names, rp.name)
	}
	sort.Strings(names)

	// Collect references and order phases by them.
	var refGraph dag.Graph
	for _, rp := range order {
		refGraph.Add(rp.name)
		diags = append(diags, rp.collect(raws, names)...)
		for _, r := range append(append(append([]phaseRef(nil), rp.refs...), rp.deps...), rp.forEachRefs...) {
			if r.phase == rp.name {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Phase refers to itself",
					Detail:   fmt.Sprintf("Phase %q cannot depend on its own outputs; to name its own paths, write self.outputs.NAME or self.inputs[i] (in command, env, params and the other attributes but inputs and outputs).", rp.name),
					Subject:  r.rng.Ptr(),
				})
				continue
			}
			refGraph.Connect(r.phase, rp.name)
		}
	}
	if diags.HasErrors() {
		return diags
	}
	evalOrder, err := refGraph.TopoOrder()
	if err != nil {
		return append(diags, cycleDiagnostic(err, raws))
	}

	ev := newPhaseEval(sc, raws, order)
	for _, name := range evalOrder {
		diags = append(diags, ev.block(raws[name])...)
	}
	if diags.HasErrors() {
		return diags
	}
	ev.fill(s, order)
	diags = append(diags, linkPhases(s, raws)...)
	if !diags.HasErrors() {
		diags = append(diags, unreadTemporary(s)...)
	}
	diags = append(diags, checkResources(s, raws)...)
	return diags
}

// declarePhases decodes each phase block's attributes and blocks, by
// name, and in the order written.
func declarePhases(blocks []*hcl.Block) (map[string]*rawPhase, []*rawPhase, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	raws := map[string]*rawPhase{}
	var order []*rawPhase
	for _, b := range blocks {
		name := b.Labels[0]
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid phase name",
				Detail:   "A phase name must start with a letter or underscore and hold only letters, digits, underscores and dashes, so that phase.NAME can refer to it.",
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		if prev, ok := raws[name]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate phase name",
				Detail:   fmt.Sprintf("A phase named %q was already declared at %s. Phase names must be unique; rename one of them.", name, prev.block.DefRange),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		schema := withExecutorBlocks(phaseSchema)
		content, d := b.Body.Content(schema)
		diags = append(diags, betterSuggestions(d, schema)...)
		rp := &rawPhase{name: name, block: b, attrs: content.Attributes, budgets: content.Blocks.OfType("budget"), execBlocks: otherBlocks(content.Blocks, "budget")}
		raws[name] = rp
		order = append(order, rp)
	}
	return raws, order, diags
}

// collect finds rp's references to other phases (refs, deps,
// forEachRefs), to each and to self.
func (rp *rawPhase) collect(raws map[string]*rawPhase, names []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for attrName, a := range rp.attrs {
		switch attrName {
		case "depends_on":
			deps, d := decodeDependsOn(a.Expr, raws, names)
			diags = append(diags, d...)
			rp.deps = deps
			continue
		case "for_each":
			refs, d := collectRefs(a.Expr, raws, names)
			diags = append(diags, d...)
			diags = append(diags, selfInPaths(a)...)
			rp.forEach, rp.forEachRefs = fastOnce(a.Expr), refs
			if tr, dd := hcl.AbsTraversalForExpr(a.Expr); !dd.HasErrors() && tr.RootName() == "phase" && len(tr) == 2 && len(refs) == 1 {
				rp.eachPhase = refs[0].phase
			}
			continue
		}
		refs, d := collectRefs(a.Expr, raws, names)
		diags = append(diags, d...)
		rp.refs = append(rp.refs, refs...)
		rp.eachRefs = append(rp.eachRefs, collectEachRefs(a.Expr)...)
		if attrName == "inputs" || attrName == "outputs" {
			diags = append(diags, selfInPaths(a)...)
		} else if usesSelf(a.Expr) {
			rp.usesSelf = true
		}
	}
	for _, b := range append(append([]*hcl.Block(nil), rp.budgets...), rp.execBlocks...) {
		attrs, _ := b.Body.JustAttributes()
		for _, a := range attrs {
			refs, d := collectRefs(a.Expr, raws, names)
			diags = append(diags, d...)
			rp.refs = append(rp.refs, refs...)
			rp.usesSelf = rp.usesSelf || usesSelf(a.Expr)
		}
	}
	if len(rp.eachRefs) > 0 && rp.forEach == nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  `Reference to "each" in a phase without for_each`,
			Detail:   "each.key and each.value exist only in a phase with a for_each argument.",
			Subject:  rp.eachRefs[0].rng.Ptr(),
		})
	}
	return diags
}

// phaseEval evaluates phase blocks in dependency order.
type phaseEval struct {
	sc *scope
	// raws are the blocks by name; referenced those another refers to.
	raws       map[string]*rawPhase
	referenced map[string]bool
	// values are phase.NAME's values, of the blocks referenced.
	values    map[string]cty.Value
	evaluated map[string]*Phase   // by address
	instances map[string][]*Phase // block name -> its phases in key order
	total     int                 // phases so far, for maxPhases
}

func newPhaseEval(sc *scope, raws map[string]*rawPhase, order []*rawPhase) *phaseEval {
	// phase.NAME's value is made only for a phase another one refers
	// to: a sweep's value is an object of all its instances, costly to
	// make and wasted when nothing reads it.
	referenced := map[string]bool{}
	for _, rp := range order {
		for _, r := range rp.refs {
			referenced[r.phase] = true
		}
		for _, r := range rp.forEachRefs {
			referenced[r.phase] = true
		}
	}
	return &phaseEval{
		sc:         sc,
		raws:       raws,
		referenced: referenced,
		values:     map[string]cty.Value{},
		evaluated:  map[string]*Phase{},
		instances:  map[string][]*Phase{},
	}
}

// block evaluates the phase block rp, every instance of it when it has
// for_each, after the blocks it refers to.
func (ev *phaseEval) block(rp *rawPhase) hcl.Diagnostics {
	name := rp.name
	if d := instanceMapRefs(rp, ev.raws, ev.values, ev.instances); len(d) > 0 {
		// Once here, not once for every instance of rp.
		ev.values[name] = cty.DynamicVal
		return d
	}
	if rp.forEach == nil {
		ev.total++
		p, diags := evalPhase(rp, ev.sc, ev.values, ev.evaluated, ev.instances, nil)
		if p == nil {
			ev.values[name] = cty.DynamicVal
			return diags
		}
		ev.evaluated[p.Addr] = p
		ev.instances[name] = []*Phase{p}
		if ev.referenced[name] {
			ev.values[name] = phaseValue(p, rp)
		}
		return diags
	}
	each, diags := evalForEach(rp, ev.sc, ev.values)
	if !diags.HasErrors() && ev.total+len(each) > maxPhases {
		diags = append(diags, tooManyPhases(rp, len(each), ev.total+len(each)))
	}
	if diags.HasErrors() {
		ev.values[name] = cty.DynamicVal
		return diags
	}
	ev.total += len(each)
	ps, ds := evalInstances(rp, ev.sc, ev.values, ev.evaluated, ev.instances, each)
	failed := false
	for i, p := range ps {
		diags = append(diags, ds[i]...)
		if p == nil {
			failed = true
			continue
		}
		ev.evaluated[p.Addr] = p
		ev.instances[name] = append(ev.instances[name], p)
	}
	switch {
	case failed:
		ev.values[name] = cty.DynamicVal
	case ev.referenced[name]:
		objs := make(map[string]cty.Value, len(ps))
		for i, p := range ps {
			objs[each[i].key] = phaseValue(p, rp)
		}
		ev.values[name] = cty.ObjectVal(objs)
	}
	return diags
}

// fill gives s the phases evaluated, block by block in the order written.
func (ev *phaseEval) fill(s *Spec, order []*rawPhase) {
	s.byAddr = make(map[string]*Phase, len(ev.evaluated))
	if len(ev.evaluated) > 0 {
		s.Phases = make([]*Phase, 0, len(ev.evaluated))
	}
	s.blocks = map[string][]string{}
	for _, rp := range order {
		for _, p := range ev.instances[rp.name] {
			applyExecutorDefaults(p, s.Experiment)
			s.Phases = append(s.Phases, p)
			s.byAddr[p.Addr] = p
			s.blocks[rp.name] = append(s.blocks[rp.name], p.Addr)
		}
		if _, ok := s.blocks[rp.name]; !ok {
			s.blocks[rp.name] = []string{} // a sweep over nothing
		}
	}
}

// evalInstances evaluates the instances each of a phase with for_each,
// side by side on all cores when there are many (a sweep's instances
// are independent of each other: each reads only upstream phases, which
// are all evaluated already). It returns each instance's phase (nil on
// errors) and diagnostics, in the order of each, so that the outcome and
// the order of the messages do not depend on the scheduling.
func evalInstances(rp *rawPhase, sc *scope, values map[string]cty.Value, evaluated map[string]*Phase, instances map[string][]*Phase, each []eachItem) ([]*Phase, []hcl.Diagnostics) {
	ps := make([]*Phase, len(each))
	ds := make([]hcl.Diagnostics, len(each))
	const chunk = 64
	workers := min(cores.N, (len(each)+chunk-1)/chunk)
	if workers <= 1 {
		for i := range each {
			ps[i], ds[i] = evalPhase(rp, sc, values, evaluated, instances, &each[i])
		}
		return ps, ds
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		// Each worker evaluates in its own copy of the scope: the copy
		// records its phase's file() and env() reads, and makes its own
		// function table bound to itself.
		wsc := *sc
		wg.Go(func() {
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(each) {
					return
				}
				for i := lo; i < min(lo+chunk, len(each)); i++ {
					ps[i], ds[i] = evalPhase(rp, &wsc, values, evaluated, instances, &each[i])
				}
			}
		})
	}
	wg.Wait()
	return ps, ds
}

// applyExecutorDefaults gives p the experiment's executor when it names
// none, and the experiment's executor settings where it sets none.
func applyExecutorDefaults(p *Phase, exp Experiment) {
	if p.Executor == "" {
		p.Executor = exp.Executor
	}
	if p.Executor == "" {
		p.Executor = executor.Local
	}
	p.ExecutorConfig = overConfigs(exp.ExecutorConfig, p.ExecutorConfig)
}

// collectRefs finds every phase.NAME[.outputs[.KEY]] traversal in expr.
func collectRefs(expr hcl.Expression, raws map[string]*rawPhase, names []string) ([]phaseRef, hcl.Diagnostics) {
	var refs []phaseRef
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		if tr.RootName() != "phase" {
			continue
		}
		if len(tr) < 2 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid phase reference",
				Detail:   "A reference to a phase is written phase.NAME, for example phase.prepare.outputs.data.",
				Subject:  tr.SourceRange().Ptr(),
			})
			continue
		}
		step, ok := tr[1].(hcl.TraverseAttr)
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid phase reference",
				Detail:   "A reference to a phase is written phase.NAME, for example phase.prepare.outputs.data.",
				Subject:  tr.SourceRange().Ptr(),
			})
			continue
		}
		if _, ok := raws[step.Name]; !ok {
			diags = append(diags, undeclaredPhase(step.Name, names, tr.SourceRange()))
			continue
		}
		ref := phaseRef{phase: step.Name, rng: tr.SourceRange()}
		rest := tr[2:]
		if len(rest) > 0 {
			if k, ok := rest[0].(hcl.TraverseIndex); ok && k.Key.IsKnown() && !k.Key.IsNull() {
				ref.key, ref.hasKey = displayKey(k.Key), true
				rest = rest[1:]
			}
		}
		ref.output = outputName(rest)
		if len(tr) > 2 && !ref.hasKey {
			if a, ok := tr[2].(hcl.TraverseAttr); ok {
				ref.attr, ref.after = a.Name, traversalText(tr[3:])
			}
		}
		refs = append(refs, ref)
	}
	return refs, diags
}

// outputName reads .outputs.KEY or .outputs[i] at the start of a
// traversal's remainder, or returns "" (all outputs).
func outputName(rest hcl.Traversal) string {
	if len(rest) < 2 {
		return ""
	}
	if a, ok := rest[0].(hcl.TraverseAttr); !ok || a.Name != "outputs" {
		return ""
	}
	switch k := rest[1].(type) {
	case hcl.TraverseAttr:
		return k.Name
	case hcl.TraverseIndex:
		return displayKey(k.Key)
	}
	return ""
}

// collectEachRefs finds each.key and each.value[.outputs[.KEY]] uses in
// expr; hasKey marks each.key, which reads no upstream output.
func collectEachRefs(expr hcl.Expression) []phaseRef {
	var refs []phaseRef
	for _, tr := range expr.Variables() {
		if tr.RootName() != "each" || len(tr) < 2 {
			continue
		}
		ref := phaseRef{rng: tr.SourceRange(), hasKey: true}
		if a, ok := tr[1].(hcl.TraverseAttr); ok && a.Name == "value" {
			ref.output = outputName(tr[2:])
			ref.hasKey = false // reads the value
		}
		refs = append(refs, ref)
	}
	return refs
}

func displayKey(v cty.Value) string {
	if v.Type() == cty.String {
		return v.AsString()
	}
	if v.Type() == cty.Number {
		return v.AsBigFloat().Text('f', -1)
	}
	return displayValue(v)
}

func undeclaredPhase(name string, names []string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Reference to undeclared phase",
		Detail:   fmt.Sprintf("There is no phase named %q.%s", name, didYouMean(name, names)),
		Subject:  rng.Ptr(),
	}
}

func decodeDependsOn(expr hcl.Expression, raws map[string]*rawPhase, names []string) ([]phaseRef, hcl.Diagnostics) {
	exprs, diags := hcl.ExprList(expr)
	if diags.HasErrors() {
		return nil, diags
	}
	var out []phaseRef
	for _, e := range exprs {
		tr, d := hcl.AbsTraversalForExpr(e)
		if d.HasErrors() || tr.RootName() != "phase" || len(tr) != 2 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid depends_on entry",
				Detail:   "Each entry of depends_on is a phase reference such as phase.prepare.",
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		step, ok := tr[1].(hcl.TraverseAttr)
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid depends_on entry",
				Detail:   "Each entry of depends_on is a phase reference such as phase.prepare.",
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		if _, ok := raws[step.Name]; !ok {
			diags = append(diags, undeclaredPhase(step.Name, names, tr.SourceRange()))
			continue
		}
		out = append(out, phaseRef{phase: step.Name, rng: e.Range()})
	}
	return out, diags
}

func cycleDiagnostic(err error, raws map[string]*rawPhase) *hcl.Diagnostic {
	d := &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Dependency cycle between phases",
		Detail:   fmt.Sprintf("%v. Phases cannot depend on each other in a loop; remove one of the references.", err),
	}
	if ce, ok := err.(*dag.CycleError); ok && len(ce.Cycles) > 0 && len(ce.Cycles[0]) > 0 {
		block, _, _ := strings.Cut(ce.Cycles[0][0], "[")
		if rp, ok := raws[block]; ok {
			d.Subject = rp.block.DefRange.Ptr()
		}
	}
	return d
}

// phaseValue is what phase.NAME evaluates to in expressions.
func phaseValue(p *Phase, rp *rawPhase) cty.Value {
	var outputs cty.Value
	if len(p.Outputs) == 0 {
		outputs = cty.EmptyObjectVal
	} else if isListOutputs(rp, p) {
		vals := make([]cty.Value, len(p.Outputs))
		for i, o := range p.Outputs {
			vals[i] = cty.StringVal(o.Path)
		}
		outputs = cty.TupleVal(vals)
	} else {
		m := map[string]cty.Value{}
		for _, o := range p.Outputs {
			m[o.Name] = cty.StringVal(o.Path)
		}
		outputs = cty.ObjectVal(m)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"name":    cty.StringVal(p.Addr),
		"key":     cty.StringVal(p.Key),
		"outputs": outputs,
	})
}

func isListOutputs(rp *rawPhase, p *Phase) bool {
	a, ok := rp.attrs["outputs"]
	if !ok {
		return false
	}
	_, ok = a.Expr.(*hclsyntax.TupleConsExpr)
	return ok || p.listOutputs
}

// cleanRelPath cleans a workspace path given in a spec.
func cleanRelPath(p string) string {
	if filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	return path.Clean(filepath.ToSlash(p))
}

// hasMeta reports whether p holds glob metacharacters.
func hasMeta(p string) bool { return strings.ContainsAny(p, "*?[{") }

// maxPhases bounds the number of phases (sweep instances included) of one
// spec. Every command holds all of them in memory, with their keys, and
// plans them, so time and memory grow with the count; the bound keeps a
// sweep within what a workstation loads and plans (BENCHMARKS.md).
const maxPhases = 200_000

// tooManyPhases is the error for the for_each of rp, whose n instances
// bring the spec to total phases, beyond maxPhases.
func tooManyPhases(rp *rawPhase, n, total int) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Too many phases",
		Detail: fmt.Sprintf("This for_each makes %d instances of phase %q, %d phases in all: cairn holds at most %d phases in one spec, because every command loads, keys and plans all of them (memory and time grow with the count). "+
			"Split the sweep: give a part of it to each run (a variable selecting a slice of the values, set with -var), or sweep fewer points.", n, rp.name, total, maxPhases),
		Subject: rp.forEach.Range().Ptr(),
	}
}
