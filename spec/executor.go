package spec

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/executor"
)

// Where a phase runs is the executors' business (package executor): the
// spec knows the names they registered and hands each the body of its
// block (slurm { ... }) to validate and evaluate. What an executor made
// of its blocks is kept, by executor name, in Experiment.ExecutorConfig
// and Phase.ExecutorConfig, the phase's overlaid on the experiment's.

// decodeExecutor evaluates an executor attribute.
func decodeExecutor(a *hcl.Attribute, ctx *hcl.EvalContext) (string, hcl.Diagnostics) {
	v, diags := evalString(a.Expr, ctx, "executor")
	if diags.HasErrors() {
		return "", diags
	}
	if _, ok := executor.Lookup(v); ok {
		return v, diags
	}
	var can []string
	for _, p := range executor.Plugins() {
		can = append(can, fmt.Sprintf("%q (%s)", p.Name, p.Summary))
	}
	list := "no executor"
	if n := len(can); n > 0 {
		list = strings.Join(can[:n-1], ", ")
		if n > 1 {
			list += " or "
		}
		list += can[n-1]
	}
	return "", append(diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unknown executor",
		Detail:   fmt.Sprintf("executor is %q; it can be %s.%s", v, list, didYouMean(v, executor.Names())),
		Subject:  a.Expr.Range().Ptr(),
	})
}

// executorBlocks returns the blocks of the executors among blocks, by
// executor name, each checked to be the only one of its type in where
// ("The experiment", "A phase").
func executorBlocks(blocks hcl.Blocks, where string) (map[string]*hcl.Block, hcl.Diagnostics) {
	var out map[string]*hcl.Block
	var diags hcl.Diagnostics
	for _, p := range executor.Plugins() {
		if p.Decode == nil {
			continue
		}
		b, d := onlyBlock(blocks.OfType(p.Name), where)
		diags = append(diags, d...)
		if b != nil {
			if out == nil {
				out = map[string]*hcl.Block{}
			}
			out[p.Name] = b
		}
	}
	return out, diags
}

// decodeExecutorBlocks has each executor decode its block among blocks.
func decodeExecutorBlocks(blocks hcl.Blocks, where string, ctx *hcl.EvalContext) (map[string]executor.Config, hcl.Diagnostics) {
	bs, diags := executorBlocks(blocks, where)
	var out map[string]executor.Config
	for _, p := range executor.Plugins() {
		b, ok := bs[p.Name]
		if !ok {
			continue
		}
		c, d := p.Decode(b.Body, ctx)
		diags = append(diags, d...)
		if out == nil {
			out = map[string]executor.Config{}
		}
		out[p.Name] = c
	}
	return out, diags
}

// overConfigs returns the experiment's executor settings with the
// phase's laid over them, executor by executor, attribute by attribute.
func overConfigs(exp, phase map[string]executor.Config) map[string]executor.Config {
	if len(phase) == 0 {
		return exp
	}
	if len(exp) == 0 {
		return phase
	}
	out := make(map[string]executor.Config, len(exp)+len(phase))
	for name, c := range exp {
		out[name] = c
	}
	for name, c := range phase {
		out[name] = out[name].Over(c)
	}
	return out
}

// withExecutorBlocks returns schema with a block type for each registered
// executor that has one.
func withExecutorBlocks(schema *hcl.BodySchema) *hcl.BodySchema {
	plugins := executor.Plugins()
	blockSchemas.Lock()
	defer blockSchemas.Unlock()
	if s, ok := blockSchemas.m[schema]; ok && s.n == len(plugins) {
		return s.schema
	}
	s := *schema
	s.Blocks = append([]hcl.BlockHeaderSchema(nil), schema.Blocks...)
	for _, p := range plugins {
		if p.Decode != nil {
			s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: p.Name})
		}
	}
	if blockSchemas.m == nil {
		blockSchemas.m = map[*hcl.BodySchema]extendedSchema{}
	}
	blockSchemas.m[schema] = extendedSchema{n: len(plugins), schema: &s}
	return &s
}

// blockSchemas holds the schemas withExecutorBlocks made, by the schema
// they extend and the number of executors they know (executors register
// from init functions, so the number tells a stale one).
var blockSchemas struct {
	sync.Mutex
	m map[*hcl.BodySchema]extendedSchema
}

type extendedSchema struct {
	n      int
	schema *hcl.BodySchema
}

// Helpers for an executor's Decode: they evaluate an attribute of its
// block as spec evaluates its own, with the same diagnostics.

// Content is body.Content(schema), with spec's suggestion for a
// misspelt attribute.
func Content(body hcl.Body, schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	return content, betterSuggestions(diags, schema)
}

// EvalValue evaluates expr to a known value that is not null.
func EvalValue(expr hcl.Expression, ctx *hcl.EvalContext, what string) (cty.Value, hcl.Diagnostics) {
	return evalValue(expr, ctx, what)
}

// EvalString evaluates expr to a string.
func EvalString(expr hcl.Expression, ctx *hcl.EvalContext, what string) (string, hcl.Diagnostics) {
	return evalString(expr, ctx, what)
}

// EvalInt evaluates expr to a whole number.
func EvalInt(expr hcl.Expression, ctx *hcl.EvalContext, what string) (int, hcl.Diagnostics) {
	return evalInt(expr, ctx, what)
}

// EvalStringList evaluates expr to a list of strings.
func EvalStringList(expr hcl.Expression, ctx *hcl.EvalContext, what string) ([]string, hcl.Diagnostics) {
	return evalStringList(expr, ctx, what)
}

// EvalDuration evaluates expr to a positive duration: a string such as
// "30m" or "2d", or a number of seconds.
func EvalDuration(expr hcl.Expression, ctx *hcl.EvalContext, what string) (time.Duration, hcl.Diagnostics) {
	return evalDuration(expr, ctx, what)
}

// otherBlocks returns the blocks not of type typ.
func otherBlocks(blocks hcl.Blocks, typ string) hcl.Blocks {
	var out hcl.Blocks
	for _, b := range blocks {
		if b.Type != typ {
			out = append(out, b)
		}
	}
	return out
}
