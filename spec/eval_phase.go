package spec

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// eachItem is one instance of a phase with for_each.
type eachItem struct {
	key   string
	value cty.Value
}

// instanceAddr is the address of instance key of phase block name.
func instanceAddr(name, key string) string { return name + "[" + strconv.Quote(key) + "]" }

// noPhases is the (empty, never written) map of upstream values of a
// phase that refers to none.
var noPhases = map[string]cty.Value{}

// evalForEach evaluates a phase's for_each into its instances, sorted by
// key: a set or list of strings (each.key = each.value = the element), a
// map or object (each.key, each.value), or phase.NAME of another phase
// with for_each (each.value is that phase's instance).
func evalForEach(rp *rawPhase, sc *scope, phases map[string]cty.Value) ([]eachItem, hcl.Diagnostics) {
	if sc.each == nil {
		return evalForEachExpr(rp, sc, phases)
	}
	hash, ok := sc.each.hashFor(rp, sc)
	if !ok {
		return evalForEachExpr(rp, sc, phases)
	}
	if items, ok := sc.each.lookup(rp, hash); ok {
		return items, nil
	}
	items, diags := evalForEachExpr(rp, sc, phases)
	if len(diags) == 0 {
		sc.each.keep(rp, hash, items)
	}
	return items, diags
}

// evalForEachExpr is evalForEach without the for_each memo.
func evalForEachExpr(rp *rawPhase, sc *scope, phases map[string]cty.Value) ([]eachItem, hcl.Diagnostics) {
	refd := map[string]cty.Value{}
	for _, r := range rp.forEachRefs {
		refd[r.phase] = phases[r.phase]
	}
	ctx := sc.evalContext(refd)
	if fast.forEach != nil {
		if items, diags, ok := fast.forEach(rp.forEach, ctx); ok {
			return items, diags
		}
	}
	v, diags := evalValue(rp.forEach, ctx, "for_each")
	if diags.HasErrors() {
		return nil, diags
	}
	bad := func(detail string) ([]eachItem, hcl.Diagnostics) {
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid for_each argument",
			Detail:   detail,
			Subject:  rp.forEach.Range().Ptr(),
		})
	}
	var items []eachItem
	t := v.Type()
	switch {
	case t.IsSetType() || t.IsListType() || t.IsTupleType():
		seen := map[string]bool{}
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			sv, err := convert.Convert(ev, cty.String)
			if err != nil || sv.IsNull() {
				return bad(fmt.Sprintf("for_each over a set or list needs strings, got %s; use a map to sweep over other values.", ev.Type().FriendlyName()))
			}
			k := sv.AsString()
			if seen[k] {
				return bad(fmt.Sprintf("for_each holds %q twice; instances are named by their keys, which must be unique (toset() drops duplicates).", k))
			}
			seen[k] = true
			items = append(items, eachItem{key: k, value: sv})
		}
	case t.IsMapType() || t.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			items = append(items, eachItem{key: k.AsString(), value: ev})
		}
	default:
		return bad(fmt.Sprintf("for_each must be a set or list of strings, a map, or phase.NAME of a phase with for_each; got %s.", t.FriendlyName()))
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	return items, diags
}

// evalPhase evaluates one phase (or one instance of a phase with
// for_each, when it is set) against its upstream phases' values. It
// returns nil when the phase has errors.
func evalPhase(rp *rawPhase, sc *scope, phases map[string]cty.Value, evaluated map[string]*Phase, instances map[string][]*Phase, it *eachItem) (*Phase, hcl.Diagnostics) {
	// Only the phases this one refers to go into its context: building an
	// object of every phase for every phase would make loading quadratic.
	refd := noPhases
	if len(rp.refs) > 0 {
		refd = make(map[string]cty.Value, len(rp.refs))
		for _, r := range rp.refs {
			refd[r.phase] = phases[r.phase]
		}
	}
	ctx := sc.evalContext(refd)
	sc.use = &usage{}
	defer func() { sc.use = nil }()
	p := newPhase(rp, it)
	if it != nil {
		ctx.Variables["each"] = cty.ObjectVal(map[string]cty.Value{
			"key":   cty.StringVal(it.key),
			"value": it.value,
		})
	}
	diags := evalPaths(p, rp, ctx)
	diags = append(diags, evalAttrs(p, rp, ctx)...)
	diags = append(diags, evalEnvs(p, rp, ctx)...)
	diags = append(diags, evalSettings(p, rp, ctx)...)
	// file() makes a file an input; env() puts the variable in the key.
	for _, f := range sc.use.files {
		if !slices.Contains(p.Inputs, f) {
			p.Inputs = append(p.Inputs, f)
			p.inputRanges = append(p.inputRanges, rp.block.DefRange)
		}
	}
	if len(sc.use.env) > 0 {
		p.EnvRead = sc.use.env
	}
	if diags.HasErrors() {
		return nil, diags
	}
	p.Upstream = upstreamReads(rp, evaluated, instances, it)
	return p, diags
}

// newPhase is the phase of rp (its instance it, when set) before its
// attributes are evaluated: every default in place.
func newPhase(rp *rawPhase, it *eachItem) *Phase {
	p := &Phase{
		Addr:       rp.name,
		Block:      rp.name,
		HasForEach: it != nil,
		Workdir:    ".",
		Cache:      true,
		DeclRange:  rp.block.DefRange,
		Params:     map[string]string{},
		Env:        map[string]string{},
	}
	if it != nil {
		p.Addr, p.Key = instanceAddr(rp.name, it.key), it.key
	}
	return p
}

// attrExpr is rp's attribute name's expression, if it is set.
func (rp *rawPhase) attrExpr(name string) (hcl.Expression, bool) {
	a, ok := rp.attrs[name]
	if !ok {
		return nil, false
	}
	return a.Expr, true
}

// evalPaths evaluates inputs and outputs, first: self, which the other
// attributes may use, is made from them and set in ctx.
func evalPaths(p *Phase, rp *rawPhase, ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if e, ok := rp.attrExpr("inputs"); ok {
		diags = append(diags, evalInputs(p, e, ctx)...)
	}
	if e, ok := rp.attrExpr("outputs"); ok {
		diags = append(diags, evalOutputs(p, rp, e, ctx)...)
	}
	if rp.usesSelf {
		if diags.HasErrors() {
			ctx.Variables["self"] = cty.DynamicVal // its uses are follow-ons
		} else {
			ctx.Variables["self"] = selfValue(p, rp)
		}
	}
	return diags
}

// evalAttrs evaluates description, command, params, metrics and
// temporary.
func evalAttrs(p *Phase, rp *rawPhase, ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if e, ok := rp.attrExpr("description"); ok {
		var d hcl.Diagnostics
		p.Description, d = evalString(e, ctx, "description")
		diags = append(diags, d...)
	}
	if e, ok := rp.attrExpr("command"); ok {
		diags = append(diags, evalCommand(p, e, ctx)...)
	}
	if e, ok := rp.attrExpr("params"); ok {
		diags = append(diags, evalParams(p, e, ctx)...)
		diags = append(diags, paramsNul(p.Params, e.Range())...)
	}
	if e, ok := rp.attrExpr("metrics"); ok {
		diags = append(diags, evalMetrics(p, e, ctx)...)
	}
	if e, ok := rp.attrExpr("temporary"); ok {
		diags = append(diags, evalTemporary(p, e, ctx)...)
	}
	return diags
}

// evalEnvs evaluates env, then secret_env and pass_env, which may not
// name a variable env sets.
func evalEnvs(p *Phase, rp *rawPhase, ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if e, ok := rp.attrExpr("env"); ok {
		diags = append(diags, evalEnv(p, e, ctx)...)
	}
	for _, which := range []string{"secret_env", "pass_env"} {
		e, ok := rp.attrExpr(which)
		if !ok {
			continue
		}
		list, d := evalStringList(e, ctx, which)
		diags = append(diags, d...)
		for _, n := range list {
			switch {
			case !envNameRe().MatchString(n) || strings.HasPrefix(n, "CAIRN_"):
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid environment variable name",
					Detail:   fmt.Sprintf("%q in %s is not a usable environment variable name.", n, which),
					Subject:  e.Range().Ptr(),
				})
			case p.Env[n] != "":
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Variable both declared and passed through",
					Detail:   fmt.Sprintf("%s is set in env and also listed in %s; keep one.", n, which),
					Subject:  e.Range().Ptr(),
				})
			}
		}
		sort.Strings(list)
		if which == "secret_env" {
			p.SecretEnv = list
		} else {
			p.PassEnv = list
		}
	}
	return diags
}

func evalEnv(p *Phase, e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	env, diags := evalStringMap(e, ctx, "env")
	for k, v := range env {
		if !envNameRe().MatchString(k) || strings.HasPrefix(k, "CAIRN_") {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid environment variable name",
				Detail:   fmt.Sprintf("%q is not a usable environment variable name: names hold letters, digits and underscores, do not start with a digit, and CAIRN_ is reserved for cairn.", k),
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		if d := nulDiag("env "+k, v, e.Range()); d != nil {
			diags = append(diags, d)
			continue
		}
		p.Env[k] = v
	}
	return diags
}

// evalSettings evaluates how the phase runs: workdir, cache, pipefail,
// its budget, executor, Slurm settings and resources.
func evalSettings(p *Phase, rp *rawPhase, ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if e, ok := rp.attrExpr("workdir"); ok {
		diags = append(diags, evalWorkdir(p, e, ctx)...)
	}
	if e, ok := rp.attrExpr("cache"); ok {
		var d hcl.Diagnostics
		p.Cache, d = evalBool(e, ctx, "cache")
		diags = append(diags, d...)
	}
	if e, ok := rp.attrExpr("pipefail"); ok {
		pf, d := evalBool(e, ctx, "pipefail")
		diags = append(diags, d...)
		p.NoPipefail = !pf
	}
	if b, d := onlyBlock(rp.budgets, "A phase"); b != nil {
		diags = append(diags, d...)
		bud, d := decodePhaseBudget(b, ctx)
		diags = append(diags, d...)
		p.Budget = bud
	}
	if a, ok := rp.attrs["executor"]; ok {
		x, d := decodeExecutor(a, ctx)
		diags = append(diags, d...)
		p.Executor = x
	}
	if len(rp.execBlocks) > 0 {
		xc, d := decodeExecutorBlocks(rp.execBlocks, "A phase", ctx)
		diags = append(diags, d...)
		p.ExecutorConfig = xc
	}
	if e, ok := rp.attrExpr("resources"); ok {
		res, d := evalResources(e, ctx)
		diags = append(diags, d...)
		p.Resources = res
	}
	return diags
}

func evalWorkdir(p *Phase, e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	wd, diags := evalString(e, ctx, "workdir")
	if nd := nulDiag("workdir", wd, e.Range()); nd != nil {
		return append(diags, nd)
	}
	if diags.HasErrors() {
		return diags
	}
	clean := cleanRelPath(wd)
	if filepath.IsAbs(wd) || !filepath.IsLocal(filepath.FromSlash(clean)) && clean != "." {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Workdir outside the workspace",
			Detail:   fmt.Sprintf("workdir %q must be a relative path inside the workspace.", wd),
			Subject:  e.Range().Ptr(),
		})
	}
	p.Workdir = clean
	return diags
}

func evalCommand(p *Phase, e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	v, diags := evalValue(e, ctx, "command")
	if diags.HasErrors() {
		return diags
	}
	if v.Type() == cty.String {
		s := v.AsString()
		if strings.TrimSpace(s) == "" {
			return append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Empty command",
				Detail:   "command must be a shell command string or a non-empty list of arguments.",
				Subject:  e.Range().Ptr(),
			})
		}
		if d := nulDiag("command", s, e.Range()); d != nil {
			return append(diags, d)
		}
		p.Command, p.Shell = []string{"sh", "-c", s}, true
		return diags
	}
	argv, d := evalStringList(e, ctx, "command")
	diags = append(diags, d...)
	for _, a := range argv {
		if d := nulDiag("command", a, e.Range()); d != nil {
			return append(diags, d)
		}
	}
	if !d.HasErrors() && (len(argv) == 0 || argv[0] == "") {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Empty command",
			Detail:   "command must be a shell command string or a non-empty list of arguments.",
			Subject:  e.Range().Ptr(),
		})
	}
	p.Command = argv
	return diags
}

func evalInputs(p *Phase, e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	add := func(s string, rng hcl.Range) {
		if s == "" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Empty input path",
				Detail:   "Each input is a file, a directory or a glob pattern.",
				Subject:  rng.Ptr(),
			})
			return
		}
		if d := nulDiag("input", s, rng); d != nil {
			diags = append(diags, d)
			return
		}
		p.Inputs = append(p.Inputs, cleanRelPath(s))
		p.inputRanges = append(p.inputRanges, rng)
	}
	if tup, ok := e.(*hclsyntax.TupleConsExpr); ok {
		for _, item := range tup.Exprs {
			s, d := evalString(item, ctx, "input")
			diags = append(diags, d...)
			if !d.HasErrors() {
				add(s, item.Range())
			}
		}
		return diags
	}
	list, d := evalStringList(e, ctx, "inputs")
	diags = append(diags, d...)
	for _, s := range list {
		add(s, e.Range())
	}
	return diags
}

func evalOutputs(p *Phase, rp *rawPhase, e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	add := func(name, raw string, rng hcl.Range) {
		clean, d := checkOutputPath(raw, rng)
		diags = append(diags, d...)
		if !d.HasErrors() {
			p.Outputs = append(p.Outputs, Output{Name: name, Path: clean})
			p.outputRanges = append(p.outputRanges, rng)
		}
	}
	switch x := e.(type) {
	case *hclsyntax.TupleConsExpr:
		for i, item := range x.Exprs {
			s, d := evalString(item, ctx, "output")
			diags = append(diags, d...)
			if !d.HasErrors() {
				add(strconv.Itoa(i), s, item.Range())
			}
		}
		return diags
	case *hclsyntax.ObjectConsExpr:
		type kv struct {
			name, path string
			rng        hcl.Range
		}
		var items []kv
		for _, item := range x.Items {
			k, d := evalString(item.KeyExpr, ctx, "output name")
			diags = append(diags, d...)
			s, d2 := evalString(item.ValueExpr, ctx, "output "+k)
			diags = append(diags, d2...)
			if !d.HasErrors() && !d2.HasErrors() {
				items = append(items, kv{k, s, item.ValueExpr.Range()})
			}
		}
		sort.Slice(items, func(i, j int) bool { return items[i].name < items[j].name })
		for _, it := range items {
			add(it.name, it.path, it.rng)
		}
		return diags
	}
	v, d := evalValue(e, ctx, "outputs")
	diags = append(diags, d...)
	if d.HasErrors() {
		return diags
	}
	t := v.Type()
	switch {
	case t.IsObjectType() || t.IsMapType():
		m, err := convert.Convert(v, cty.Map(cty.String))
		if err != nil {
			return append(diags, typeError(e, "outputs", "a map or list of paths", err))
		}
		keys := []string{}
		vals := map[string]string{}
		for it := m.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			keys = append(keys, k.AsString())
			vals[k.AsString()] = ev.AsString()
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k, vals[k], e.Range())
		}
	default:
		list, d := evalStringList(e, ctx, "outputs")
		diags = append(diags, d...)
		p.listOutputs = true
		for i, s := range list {
			add(strconv.Itoa(i), s, e.Range())
		}
	}
	return diags
}

// checkOutputPath cleans an output path and checks it lies inside the
// workspace and outside cairn's own state directory.
func checkOutputPath(raw string, rng hcl.Range) (string, hcl.Diagnostics) {
	clean := cleanRelPath(raw)
	switch {
	case raw == "":
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Empty output path",
			Detail:   "Each output is a file or directory path inside the workspace.",
			Subject:  rng.Ptr(),
		}}
	case strings.IndexByte(raw, 0) >= 0:
		return "", hcl.Diagnostics{nulDiag("output", raw, rng)}
	case filepath.IsAbs(raw) || !filepath.IsLocal(filepath.FromSlash(clean)) || clean == ".":
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Output path outside the workspace",
			Detail:   fmt.Sprintf("Output %q must be a relative path inside the workspace (the spec's directory), so that cairn can restore it from the cache. Write it to a path below the spec's directory.", raw),
			Subject:  rng.Ptr(),
		}}
	case clean == ".cairn" || strings.HasPrefix(clean, ".cairn/"):
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Output path in cairn's state directory",
			Detail:   fmt.Sprintf("Output %q lies in .cairn/, which holds cairn's own state. Choose another path.", raw),
			Subject:  rng.Ptr(),
		}}
	}
	return clean, nil
}

func evalParams(p *Phase, e hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	if cons, ok := e.(*hclsyntax.ObjectConsExpr); ok && fast.params != nil && fast.params(p, cons, ctx) {
		return nil
	}
	v, diags := evalValue(e, ctx, "params")
	if diags.HasErrors() {
		return diags
	}
	if !v.Type().IsObjectType() && !v.Type().IsMapType() {
		return append(diags, typeError(e, "params", "a map", fmt.Errorf("got %s", v.Type().FriendlyName())))
	}
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		js, err := canonicalJSON(ev)
		if err != nil {
			diags = append(diags, typeError(e, "params."+k.AsString(), "a JSON-representable value", err))
			continue
		}
		p.Params[k.AsString()] = js
	}
	return diags
}

// upstreamReads turns a phase's references into the output paths it reads
// from each upstream phase instance (nil = all of them).
func upstreamReads(rp *rawPhase, evaluated map[string]*Phase, instances map[string][]*Phase, it *eachItem) map[string][]string {
	if len(rp.refs) == 0 && len(rp.deps) == 0 && (it == nil || rp.eachPhase == "") {
		return map[string][]string{}
	}
	all := map[string]bool{}
	paths := map[string]map[string]bool{}
	note := func(up *Phase, output string) {
		if output == "" {
			all[up.Addr] = true
			return
		}
		for _, o := range up.Outputs {
			if o.Name == output {
				if paths[up.Addr] == nil {
					paths[up.Addr] = map[string]bool{}
				}
				paths[up.Addr][o.Path] = true
			}
		}
	}
	// targets resolves a reference to the instances it reads.
	targets := func(block string, key string, hasKey bool) []*Phase {
		insts := instances[block]
		if !hasKey || len(insts) == 0 || !insts[0].HasForEach {
			return insts
		}
		if p := evaluated[instanceAddr(block, key)]; p != nil {
			return []*Phase{p}
		}
		return nil
	}
	for _, r := range rp.refs {
		for _, up := range targets(r.phase, r.key, r.hasKey) {
			note(up, r.output)
		}
	}
	if it != nil && rp.eachPhase != "" {
		for _, r := range rp.eachRefs {
			if r.hasKey {
				continue // each.key
			}
			for _, up := range targets(rp.eachPhase, it.key, true) {
				note(up, r.output)
			}
		}
	}
	for _, r := range rp.deps {
		for _, up := range instances[r.phase] {
			all[up.Addr] = true
		}
	}
	out := map[string][]string{}
	for ph := range all {
		out[ph] = nil
	}
	for ph, set := range paths {
		if all[ph] {
			continue
		}
		list := make([]string, 0, len(set))
		for p := range set {
			list = append(list, p)
		}
		sort.Strings(list)
		out[ph] = list
	}
	return out
}

// nulDiag is the error for a NUL byte in value (a command, an environment
// value or a path), or nil if it holds none. The operating system ends
// arguments, environment entries and paths at a NUL: such a value cannot
// reach a process or a file as written ("fork/exec: invalid argument").
func nulDiag(what, value string, rng hcl.Range) *hcl.Diagnostic {
	if strings.IndexByte(value, 0) < 0 {
		return nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "NUL byte in " + what,
		Detail:   fmt.Sprintf("The %s holds a NUL byte (\\u0000), which no command line, environment variable or file path can carry. Remove it.", what),
		Subject:  rng.Ptr(),
	}
}

// paramsNul reports string params holding a NUL byte: each reaches the
// command as CAIRN_PARAM_NAME in its environment.
func paramsNul(params map[string]string, rng hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for k, js := range params {
		if len(js) == 0 || js[0] != '"' || !strings.Contains(js, `\u0000`) {
			continue
		}
		var v string
		if json.Unmarshal([]byte(js), &v) == nil {
			if d := nulDiag("param "+k, v, rng); d != nil {
				diags = append(diags, d)
			}
		}
	}
	return diags
}
