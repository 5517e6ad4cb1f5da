package spec

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/cairn-run/cairn/spec/funcs"
)

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "experiment", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "phase", LabelNames: []string{"name"}},
		{Type: "pool", LabelNames: []string{"name"}},
	},
}

// decodeFile fills s from the file body (of the text src): variables,
// then locals, then the experiment block, then phases in dependency
// order.
func decodeFile(s *Spec, body hcl.Body, src []byte, opts Options) hcl.Diagnostics {
	if opts.Reads == nil {
		opts.Reads = NewReads() // for checkOutputsRead
	} else {
		opts.LookupEnv = opts.Reads.lookupEnv(opts.LookupEnv)
	}
	var each *eachMemo
	if opts.ForEach != nil {
		each = &eachMemo{memo: opts.ForEach, src: src}
	}
	content, diags := body.Content(rootSchema)

	var expBlocks, varBlocks, localBlocks, phaseBlocks, poolBlocks []*hcl.Block
	for _, b := range content.Blocks {
		switch b.Type {
		case "experiment":
			expBlocks = append(expBlocks, b)
		case "variable":
			varBlocks = append(varBlocks, b)
		case "locals":
			localBlocks = append(localBlocks, b)
		case "phase":
			phaseBlocks = append(phaseBlocks, b)
		case "pool":
			poolBlocks = append(poolBlocks, b)
		}
	}

	vars, sensitive, varDiags := decodeVariables(varBlocks, opts.Vars, opts.LookupEnv)
	diags = append(diags, varDiags...)
	s.Variables = make(map[string]string, len(vars))
	for name, v := range vars {
		if sensitive[name] {
			s.Variables[name] = "(sensitive)"
			s.SensitiveVars = append(s.SensitiveVars, name)
			s.SensitiveValues = append(s.SensitiveValues, leafStrings(v)...)
			continue
		}
		s.Variables[name] = displayValue(v)
	}
	sort.Strings(s.SensitiveVars)

	base := scope{vars: vars, dir: s.Dir, lookupEnv: opts.LookupEnv, reads: opts.Reads, each: each, envSeen: &envNames{}}
	locals, localDiags := evalLocals(localBlocks, base)
	diags = append(diags, localDiags...)

	scope := &base
	scope.locals = locals

	if len(expBlocks) > 1 {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Duplicate experiment block",
			Detail:   fmt.Sprintf("A spec holds at most one experiment block; the first is at %s.", expBlocks[0].DefRange),
			Subject:  expBlocks[1].DefRange.Ptr(),
		})
	}
	if len(expBlocks) > 0 {
		exp, expDiags := decodeExperiment(expBlocks[0], scope, s.Dir)
		diags = append(diags, expDiags...)
		s.Experiment = exp
	}

	pools, poolDiags := decodePools(poolBlocks, scope)
	diags = append(diags, poolDiags...)
	s.Pools = pools

	phaseDiags := decodePhases(s, phaseBlocks, scope)
	diags = append(diags, phaseDiags...)
	diags = append(diags, checkSecretsRead(s, phaseBlocks, base.envSeen)...)
	diags = append(diags, checkOutputsRead(s, opts)...)
	return dropFollowOn(diags)
}

// checkOutputsRead refuses an output that is, or holds, a file the spec
// itself is made of: the spec file, a -var-file or a file read by file().
// A phase's outputs are removed before it runs, so the run would delete
// the spec's own source (an input that is also an output is refused by
// linkPhases).
func checkOutputsRead(s *Spec, opts Options) hcl.Diagnostics {
	read := map[string]string{filepath.Join(s.Dir, filepath.Base(s.File)): "the spec file itself"}
	for _, vf := range opts.VarFiles {
		if abs, err := filepath.Abs(vf); err == nil {
			read[abs] = "a -var-file"
		}
	}
	opts.Reads.mu.Lock()
	for f := range opts.Reads.files {
		if _, ok := read[f]; !ok {
			read[f] = "read by file() in the spec"
		}
	}
	opts.Reads.mu.Unlock()
	files := make([]string, 0, len(read))
	for f := range read {
		files = append(files, f)
	}
	sort.Strings(files)
	var diags hcl.Diagnostics
	for _, p := range s.Phases {
		for i, o := range p.Outputs {
			out := filepath.Join(s.Dir, filepath.FromSlash(o.Path))
			for _, f := range files {
				if f != out && !strings.HasPrefix(f, out+string(filepath.Separator)) {
					continue
				}
				rng := p.DeclRange
				if i < len(p.outputRanges) {
					rng = p.outputRanges[i]
				}
				rel, err := filepath.Rel(s.Dir, f)
				if err != nil {
					rel = f
				}
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Output is a file the spec reads",
					Detail:   fmt.Sprintf("Output %q of phase %q is or holds %s, %s. A phase's outputs are removed before it runs, so running it would delete what the spec is read from. Write the output elsewhere.", o.Path, p.Addr, filepath.ToSlash(rel), read[f]),
					Subject:  rng.Ptr(),
				})
			}
		}
	}
	return diags
}

// checkSecretsRead refuses a spec whose expressions read with env() a
// variable that a phase declares in secret_env: the value would be in the
// evaluated spec, so in phase keys (stored in clear in cache entries), in
// the cache and in the spec memo. One error per phase block.
func checkSecretsRead(s *Spec, blocks []*hcl.Block, seen *envNames) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		name := b.Labels[0]
		body, ok := b.Body.(*hclsyntax.Body)
		if !ok || body.Attributes["secret_env"] == nil {
			continue
		}
		attr := body.Attributes["secret_env"]
		secret := map[string]bool{}
		addrs, evaluated := s.blocks[name]
		for _, addr := range addrs {
			if p := s.byAddr[addr]; p != nil {
				for _, n := range p.SecretEnv {
					secret[n] = true
				}
			}
		}
		if evaluated && len(addrs) == 0 && len(attr.Expr.Variables()) == 0 {
			// A sweep over nothing has no instance to say what its
			// secret_env holds; a list written out still says it.
			if v, d := attr.Expr.Value(nil); !d.HasErrors() && v.IsWhollyKnown() && !v.IsNull() && v.CanIterateElements() {
				for it := v.ElementIterator(); it.Next(); {
					if _, ev := it.Element(); ev.Type() == cty.String && !ev.IsNull() {
						secret[ev.AsString()] = true
					}
				}
			}
		}
		var read []string
		for n := range secret {
			if seen.has(n) {
				read = append(read, n)
			}
		}
		if len(read) == 0 {
			continue
		}
		sort.Strings(read)
		subject := attr.Expr.Range()
		what, use := read[0], "$"+read[0]
		if len(read) > 1 {
			what, use = strings.Join(read, ", "), "$"+strings.Join(read, ", $")
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Secret read into the spec",
			Detail: fmt.Sprintf("Phase %q declares %s in secret_env, and the spec reads %s with env(): the value would enter phase keys, the cache and .cairn. "+
				"Use %s in the command instead (secret_env passes it to the command's environment), or, if it is no secret, drop it from secret_env.",
				name, what, pronoun(len(read)), use),
			Subject: subject.Ptr(),
		})
	}
	return diags
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// scope holds the values phases and settings are evaluated against.
type scope struct {
	vars   map[string]cty.Value
	locals map[string]cty.Value

	dir       string
	lookupEnv func(string) (string, bool)
	// use, while a phase is evaluated, records the files and environment
	// variables its expressions read through file() and env().
	use *usage
	// reads records every file read by file() (whatever scope it is
	// read in).
	reads *Reads
	// each, when not nil, is the for_each memo of this load.
	each *eachMemo
	// envSeen records the names env() looked up, in any scope.
	envSeen *envNames

	// fns is the function table of fnsOwner's contexts (file() and env()
	// are bound to it), and varObj and localObj their var and local
	// objects: made once, not once per phase instance (a sweep would make
	// the table once per instance). A scope copied by value makes
	// its own; vars and locals must not change once a scope has made
	// them.
	fns              map[string]function.Function
	varObj, localObj cty.Value
	fnsOwner         *scope
}

// usage is what a phase's expressions read through file() and env().
type usage struct {
	files []string
	env   map[string]string
}

// evalContext builds an evaluation context; phases may be nil.
func (sc *scope) evalContext(phases map[string]cty.Value) *hcl.EvalContext {
	if sc.fnsOwner != sc {
		sc.fns = funcs.Std()
		sc.addSpecFuncs(sc.fns)
		sc.varObj, sc.localObj = objectOrEmpty(sc.vars), objectOrEmpty(sc.locals)
		sc.fnsOwner = sc
	}
	v := make(map[string]cty.Value, 5) // room for each and self
	v["var"], v["local"] = sc.varObj, sc.localObj
	if phases != nil {
		v["phase"] = objectOrEmpty(phases)
	}
	return &hcl.EvalContext{Variables: v, Functions: sc.fns}
}

// addSpecFuncs adds file() and env(), which depend on the workspace and
// the environment, to fns.
func (sc *scope) addSpecFuncs(fns map[string]function.Function) {
	fns["file"] = sc.fileFunc()
	fns["env"] = sc.envFunc()
}

func objectOrEmpty(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}

var experimentSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "description"},
		{Name: "concurrency"},
		{Name: "executor"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "cache"}, {Type: "budget"}}, // and the executors' (withExecutorBlocks)
}

var cacheSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "dir"}, {Name: "shared"}, {Name: "remote"}, {Name: "require_signed"}, {Name: "trusted_keys"}},
}

func decodeExperiment(b *hcl.Block, sc *scope, dir string) (Experiment, hcl.Diagnostics) {
	exp := Experiment{Name: b.Labels[0]}
	content, diags := b.Body.Content(withExecutorBlocks(experimentSchema))
	ctx := sc.evalContext(nil)
	if a, ok := content.Attributes["description"]; ok {
		var d hcl.Diagnostics
		exp.Description, d = evalString(a.Expr, ctx, "description")
		diags = append(diags, d...)
	}
	if a, ok := content.Attributes["concurrency"]; ok {
		n, d := evalInt(a.Expr, ctx, "concurrency")
		diags = append(diags, d...)
		if !d.HasErrors() && n < 1 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid concurrency",
				Detail:   "concurrency must be at least 1; leave it out to use the number of CPUs.",
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		exp.Concurrency = n
	}
	if b, d := onlyBlock(content.Blocks.OfType("budget"), "The experiment"); b != nil {
		diags = append(diags, d...)
		bud, d := decodeRunBudget(b, ctx)
		diags = append(diags, d...)
		exp.Budget = bud
	}
	if a, ok := content.Attributes["executor"]; ok {
		x, d := decodeExecutor(a, ctx)
		diags = append(diags, d...)
		exp.Executor = x
	}
	xc, d := decodeExecutorBlocks(content.Blocks, "The experiment", ctx)
	diags = append(diags, d...)
	exp.ExecutorConfig = xc
	var seenCache *hcl.Block
	for _, cb := range content.Blocks.OfType("cache") {
		if seenCache != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate cache block",
				Detail:   fmt.Sprintf("The experiment holds at most one cache block; the first is at %s.", seenCache.DefRange),
				Subject:  cb.DefRange.Ptr(),
			})
			continue
		}
		seenCache = cb
		diags = append(diags, decodeCacheBlock(cb, ctx, sc, dir, &exp)...)
	}
	return exp, diags
}

// decodeCacheBlock decodes the experiment's cache block into exp.
func decodeCacheBlock(cb *hcl.Block, ctx *hcl.EvalContext, sc *scope, dir string, exp *Experiment) hcl.Diagnostics {
	cc, diags := cb.Body.Content(cacheSchema)
	if a, ok := cc.Attributes["dir"]; ok {
		p, d := evalString(a.Expr, ctx, "cache.dir")
		diags = append(diags, d...)
		if p != "" {
			exp.CacheDir = absUnder(dir, expandHome(p, sc.lookupEnv))
		}
	}
	if a, ok := cc.Attributes["shared"]; ok {
		v, d := evalString(a.Expr, ctx, "cache.shared")
		diags = append(diags, d...)
		switch v {
		case "group":
			exp.CacheShared = true
		case "", "none":
		default:
			if !d.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid cache.shared",
					Detail:   fmt.Sprintf("shared is %q; it can be \"group\" (teammates in the cache directory's Unix group share it) or \"none\".", v),
					Subject:  a.Expr.Range().Ptr(),
				})
			}
		}
	}
	if a, ok := cc.Attributes["remote"]; ok {
		v, d := evalString(a.Expr, ctx, "cache.remote")
		diags = append(diags, d...)
		if msg := checkRemoteURL(v); msg != "" && !d.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid cache.remote",
				Detail:   msg,
				Subject:  a.Expr.Range().Ptr(),
			})
		} else {
			exp.CacheRemote = v
		}
	}
	if a, ok := cc.Attributes["require_signed"]; ok {
		v, d := evalBool(a.Expr, ctx, "cache.require_signed")
		diags = append(diags, d...)
		exp.CacheRequireSigned = v
	}
	if a, ok := cc.Attributes["trusted_keys"]; ok {
		list, d := evalStringList(a.Expr, ctx, "cache.trusted_keys")
		diags = append(diags, d...)
		for _, p := range list {
			if p == "" {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid cache.trusted_keys",
					Detail:   "trusted_keys lists public key files (cairn cache keygen writes them); an empty path names none.",
					Subject:  a.Expr.Range().Ptr(),
				})
				continue
			}
			exp.CacheTrustedKeys = append(exp.CacheTrustedKeys, absUnder(dir, expandHome(p, sc.lookupEnv)))
		}
	}
	return diags
}

// checkRemoteURL returns why u cannot be a remote cache URL, or "".
// Credentials are refused here: the spec is committed and shared, so they
// come from the environment or netrc instead.
func checkRemoteURL(u string) string {
	if u == "" {
		return ""
	}
	pu, err := url.Parse(u)
	switch {
	case err != nil:
		return fmt.Sprintf("remote is not a URL: %v.", err)
	case pu.Scheme != "http" && pu.Scheme != "https":
		return fmt.Sprintf("remote must be an http:// or https:// URL of a Bazel HTTP cache, not %q.", u)
	case pu.Host == "":
		return fmt.Sprintf("remote %q has no host.", u)
	case pu.User != nil:
		return "remote must not hold credentials: the spec is shared. Set CAIRN_REMOTE_TOKEN (a bearer token) or CAIRN_REMOTE_HEADER, or use ~/.netrc."
	}
	return ""
}

// leafStrings returns the string forms of v's primitive leaves that are
// long enough to mask without masking unrelated text.
func leafStrings(v cty.Value) []string {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	t := v.Type()
	if t.IsPrimitiveType() {
		s := displayKey(v)
		if t == cty.Bool || len(s) < 3 {
			return nil
		}
		return []string{s}
	}
	if t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType() {
		var out []string
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			out = append(out, leafStrings(ev)...)
		}
		return out
	}
	return nil
}
