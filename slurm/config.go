package slurm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/spec"
)

// Settings are a phase's settings for the Slurm executor, from the slurm
// block of the experiment (defaults) and of the phase (overrides,
// attribute by attribute). Zero values mean "not set": Slurm's own
// default applies. None of it enters a phase's key: where a phase runs
// does not change what it computes.
type Settings struct {
	Partition string `json:"partition,omitempty"`
	// CPUs is --cpus-per-task.
	CPUs int `json:"cpus,omitempty"`
	// Mem is --mem: a number of megabytes, or a number with a K, M, G or
	// T suffix.
	Mem  string `json:"mem,omitempty"`
	Gres string `json:"gres,omitempty"`
	// Time is the job's time limit (--time, whole minutes, rounded up);
	// 0 means the phase's budget.timeout, else the partition's default.
	Time    time.Duration `json:"time,omitempty"`
	Account string        `json:"account,omitempty"`
	QoS     string        `json:"qos,omitempty"`
	// ExtraArgs are passed to sbatch as they are, after cairn's own.
	ExtraArgs []string `json:"extra_args,omitempty"`
}

// settingsOf decodes the settings a phase's executor.Config holds.
func settingsOf(c executor.Config) (Settings, error) {
	var s Settings
	if err := c.Decode(&s); err != nil {
		return s, fmt.Errorf("the phase's slurm settings: %w", err)
	}
	return s, nil
}

var slurmSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "partition"},
		{Name: "cpus"},
		{Name: "mem"},
		{Name: "gres"},
		{Name: "time"},
		{Name: "account"},
		{Name: "qos"},
		{Name: "extra_args"},
	},
}

var (
	memRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+[KMGTkmgt]?$`) })
	// Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
	slurmTimeRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:([0-9]+)-)?([0-9]+)(?::([0-9]+))?(?::([0-9]+))?$`)
	})
)

// decodeBlock validates and evaluates a slurm block: each attribute it
// sets, as the Settings field of the same JSON name holds it.
func decodeBlock(body hcl.Body, ctx *hcl.EvalContext) (executor.Config, hcl.Diagnostics) {
	content, diags := spec.Content(body, slurmSchema)
	cfg := executor.Config{}
	set := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // strings, numbers and lists of strings always marshal
		}
		cfg[name] = b
	}
	for _, name := range []string{"partition", "gres", "account", "qos"} {
		if a, ok := content.Attributes[name]; ok {
			v, d := evalWord(a, ctx)
			diags = append(diags, d...)
			if !d.HasErrors() {
				set(name, v)
			}
		}
	}
	if a, ok := content.Attributes["cpus"]; ok {
		n, d := spec.EvalInt(a.Expr, ctx, "slurm.cpus")
		diags = append(diags, d...)
		if !d.HasErrors() && (n < 1 || n > 100000) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid slurm.cpus",
				Detail:   "cpus is the number of CPUs per task (--cpus-per-task): a whole number of at least 1.",
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		set("cpus", n)
	}
	if a, ok := content.Attributes["mem"]; ok {
		v, d := spec.EvalString(a.Expr, ctx, "slurm.mem")
		diags = append(diags, d...)
		if !d.HasErrors() && !memRe().MatchString(v) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid slurm.mem",
				Detail:   fmt.Sprintf("mem is %q; write the memory per node as Slurm's --mem takes it: megabytes (4000) or a number with K, M, G or T (\"4G\").", v),
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		set("mem", strings.ToUpper(v))
	}
	if a, ok := content.Attributes["time"]; ok {
		d, dd := evalSlurmTime(a.Expr, ctx)
		diags = append(diags, dd...)
		set("time", d)
	}
	if a, ok := content.Attributes["extra_args"]; ok {
		l, d := evalExtraArgs(a, ctx)
		diags = append(diags, d...)
		set("extra_args", l)
	}
	return cfg, diags
}

// evalWord evaluates a setting that is one word: partition, gres,
// account, qos.
func evalWord(a *hcl.Attribute, ctx *hcl.EvalContext) (string, hcl.Diagnostics) {
	v, diags := spec.EvalString(a.Expr, ctx, "slurm."+a.Name)
	if diags.HasErrors() {
		return "", diags
	}
	if strings.TrimSpace(v) == "" || strings.ContainsAny(v, " \t\n") {
		return "", append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid slurm." + a.Name,
			Detail:   fmt.Sprintf("slurm.%s is %q; it must be one word (leave it out to use Slurm's default).", a.Name, v),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	return v, diags
}

// evalExtraArgs evaluates slurm.extra_args: sbatch options.
func evalExtraArgs(a *hcl.Attribute, ctx *hcl.EvalContext) ([]string, hcl.Diagnostics) {
	l, diags := spec.EvalStringList(a.Expr, ctx, "slurm.extra_args")
	for _, arg := range l {
		if !strings.HasPrefix(arg, "-") {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid slurm.extra_args",
				Detail:   fmt.Sprintf("%q is not an sbatch option: write each option with its value as one string, such as \"--constraint=gpu\".", arg),
				Subject:  a.Expr.Range().Ptr(),
			})
		}
	}
	if l == nil {
		l = []string{}
	}
	return l, diags
}

// evalSlurmTime evaluates slurm.time: a cairn duration ("90m", "2h", a
// number of seconds) or a Slurm time ("30", "1:30:00", "2-00:00:00").
func evalSlurmTime(expr hcl.Expression, ctx *hcl.EvalContext) (time.Duration, hcl.Diagnostics) {
	v, diags := spec.EvalValue(expr, ctx, "slurm.time")
	if diags.HasErrors() {
		return 0, diags
	}
	if v.Type() == cty.String {
		if d, ok := ParseTime(v.AsString()); ok {
			return d, diags
		}
	}
	d, dd := spec.EvalDuration(expr, ctx, "slurm.time")
	if dd.HasErrors() {
		for _, x := range dd {
			x.Detail = strings.TrimSuffix(x.Detail, ".") + `, or a Slurm time such as "30" (minutes), "1:30:00" or "2-00:00:00".`
		}
	}
	return d, dd
}

// ParseTime parses a time in one of Slurm's formats (minutes,
// minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]]).
func ParseTime(s string) (time.Duration, bool) {
	m := slurmTimeRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	num := func(x string) int64 {
		if x == "" {
			return 0
		}
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	var d time.Duration
	days, a, b, c := num(m[1]), num(m[2]), num(m[3]), num(m[4])
	switch {
	case m[1] != "": // D-H[:M[:S]]
		d = time.Duration(days)*24*time.Hour + time.Duration(a)*time.Hour + time.Duration(b)*time.Minute + time.Duration(c)*time.Second
	case m[4] != "": // H:M:S
		d = time.Duration(a)*time.Hour + time.Duration(b)*time.Minute + time.Duration(c)*time.Second
	case m[3] != "": // M:S
		d = time.Duration(a)*time.Minute + time.Duration(b)*time.Second
	default: // M
		d = time.Duration(a) * time.Minute
	}
	if d <= 0 || d > 1000*24*time.Hour {
		return 0, false
	}
	return d, true
}

// Minutes renders a time limit as sbatch's --time value: whole minutes,
// rounded up (Slurm's granularity).
func Minutes(d time.Duration) string {
	m := (d + time.Minute - 1) / time.Minute
	if m < 1 {
		m = 1
	}
	return strconv.FormatInt(int64(m), 10)
}
