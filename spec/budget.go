package spec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Budget holds a phase's limits from its budget block.
type Budget struct {
	// Timeout ends the phase after this long; 0 means no limit.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Retries is how many more times a failed or timed-out phase runs.
	Retries int `json:"retries,omitempty"`
	// MaxCost and MaxIterations stop the phase once its reported spending
	// exceeds them; nil means no limit. Both enter the phase's key, since
	// the phase sees them and may stop early.
	MaxCost       *float64 `json:"max_cost,omitempty"`
	MaxIterations *int64   `json:"max_iterations,omitempty"`
}

// RunBudget holds the experiment's whole-run limits.
type RunBudget struct {
	// MaxCost stops scheduling new phases once the run's total reported
	// cost reaches it; nil means no limit.
	MaxCost *float64 `json:"max_cost,omitempty"`
}

var phaseBudgetSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "timeout"},
		{Name: "retries"},
		{Name: "max_cost"},
		{Name: "max_iterations"},
	},
}

var runBudgetSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "max_cost"}},
}

// onlyBlock reports every block after the first of its type.
func onlyBlock(blocks []*hcl.Block, where string) (*hcl.Block, hcl.Diagnostics) {
	if len(blocks) == 0 {
		return nil, nil
	}
	var diags hcl.Diagnostics
	for _, b := range blocks[1:] {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Duplicate %s block", b.Type),
			Detail:   fmt.Sprintf("%s holds at most one %s block; the first is at %s.", where, b.Type, blocks[0].DefRange),
			Subject:  b.DefRange.Ptr(),
		})
	}
	return blocks[0], diags
}

func decodePhaseBudget(b *hcl.Block, ctx *hcl.EvalContext) (Budget, hcl.Diagnostics) {
	var bud Budget
	content, diags := b.Body.Content(phaseBudgetSchema)
	diags = betterSuggestions(diags, phaseBudgetSchema)
	if a, ok := content.Attributes["timeout"]; ok {
		d, dd := evalDuration(a.Expr, ctx, "budget.timeout")
		diags = append(diags, dd...)
		bud.Timeout = d
	}
	if a, ok := content.Attributes["retries"]; ok {
		n, d := evalInt(a.Expr, ctx, "budget.retries")
		diags = append(diags, d...)
		if !d.HasErrors() && (n < 0 || n > 100) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid retries",
				Detail:   "retries is how many more times a failed phase runs: a whole number from 0 to 100.",
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		bud.Retries = n
	}
	if a, ok := content.Attributes["max_cost"]; ok {
		f, d := evalLimit(a.Expr, ctx, "budget.max_cost")
		diags = append(diags, d...)
		if !d.HasErrors() {
			bud.MaxCost = &f
		}
	}
	if a, ok := content.Attributes["max_iterations"]; ok {
		n, d := evalInt(a.Expr, ctx, "budget.max_iterations")
		diags = append(diags, d...)
		if !d.HasErrors() && n < 0 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid max_iterations",
				Detail:   "max_iterations must be zero or more.",
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		if !d.HasErrors() {
			n64 := int64(n)
			bud.MaxIterations = &n64
		}
	}
	return bud, diags
}

func decodeRunBudget(b *hcl.Block, ctx *hcl.EvalContext) (RunBudget, hcl.Diagnostics) {
	var bud RunBudget
	content, diags := b.Body.Content(runBudgetSchema)
	diags = betterSuggestions(diags, runBudgetSchema)
	if a, ok := content.Attributes["max_cost"]; ok {
		f, d := evalLimit(a.Expr, ctx, "budget.max_cost")
		diags = append(diags, d...)
		if !d.HasErrors() {
			bud.MaxCost = &f
		}
	}
	return bud, diags
}

// evalLimit evaluates a non-negative, finite number.
func evalLimit(expr hcl.Expression, ctx *hcl.EvalContext, what string) (float64, hcl.Diagnostics) {
	v, diags := evalValue(expr, ctx, what)
	if diags.HasErrors() {
		return 0, diags
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		return 0, append(diags, typeError(expr, what, "a number", err))
	}
	f, _ := n.AsBigFloat().Float64()
	if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid %s", what),
			Detail:   fmt.Sprintf("%s must be a finite number, zero or more.", what),
			Subject:  expr.Range().Ptr(),
		})
	}
	return f, diags
}

// evalDuration evaluates a duration: a string such as "30m", "1h30m",
// "90s" or "2d", or a number of seconds.
func evalDuration(expr hcl.Expression, ctx *hcl.EvalContext, what string) (time.Duration, hcl.Diagnostics) {
	v, diags := evalValue(expr, ctx, what)
	if diags.HasErrors() {
		return 0, diags
	}
	bad := func(detail string) (time.Duration, hcl.Diagnostics) {
		return 0, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid %s", what),
			Detail:   detail,
			Subject:  expr.Range().Ptr(),
		})
	}
	if v.Type() == cty.Number {
		f, _ := v.AsBigFloat().Float64()
		if f <= 0 || f > 1e9 {
			return bad(fmt.Sprintf("%s must be a positive number of seconds or a duration such as \"30m\".", what))
		}
		return time.Duration(f * float64(time.Second)), diags
	}
	s, d := evalString(expr, ctx, what)
	if d.HasErrors() {
		return 0, d
	}
	dur, err := ParseDuration(s)
	if err != nil || dur <= 0 {
		return bad(fmt.Sprintf("%q is not a positive duration; write it like \"90s\", \"30m\", \"1h30m\" or \"2d\".", s))
	}
	return dur, diags
}

// ParseDuration parses a Go duration ("1h30m", "90s") that may also use
// "d" for days ("2d", "1d12h").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, 'd'); i > 0 {
		var days int64
		if _, err := fmt.Sscanf(s[:i], "%d", &days); err != nil || fmt.Sprint(days) != s[:i] || days < 0 || days > 100000 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		rest := time.Duration(0)
		if i+1 < len(s) {
			r, err := time.ParseDuration(s[i+1:])
			if err != nil {
				return 0, fmt.Errorf("invalid duration %q", s)
			}
			rest = r
		}
		return time.Duration(days)*24*time.Hour + rest, nil
	}
	return time.ParseDuration(s)
}
