package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Executors a phase can run on.
const (
	ExecutorLocal = "local"
	ExecutorSlurm = "slurm"
)

// Executors lists the executor names the executor attribute accepts.
var Executors = []string{ExecutorLocal, ExecutorSlurm}

// Slurm holds a phase's settings for the Slurm executor, from the slurm
// block of the experiment (defaults) and of the phase (overrides, field by
// field). Zero values mean "not set": Slurm's own default applies. None of
// it enters a phase's key: where a phase runs does not change what it
// computes.
type Slurm struct {
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

// IsZero reports whether no setting is given.
func (s Slurm) IsZero() bool {
	return s.Partition == "" && s.CPUs == 0 && s.Mem == "" && s.Gres == "" && s.Time == 0 &&
		s.Account == "" && s.QoS == "" && s.ExtraArgs == nil
}

// Over returns s with every setting that o gives replaced by o's.
func (s Slurm) Over(o Slurm) Slurm {
	if o.Partition != "" {
		s.Partition = o.Partition
	}
	if o.CPUs != 0 {
		s.CPUs = o.CPUs
	}
	if o.Mem != "" {
		s.Mem = o.Mem
	}
	if o.Gres != "" {
		s.Gres = o.Gres
	}
	if o.Time != 0 {
		s.Time = o.Time
	}
	if o.Account != "" {
		s.Account = o.Account
	}
	if o.QoS != "" {
		s.QoS = o.QoS
	}
	if o.ExtraArgs != nil {
		s.ExtraArgs = o.ExtraArgs
	}
	return s
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

// decodeSlurm decodes a slurm block.
func decodeSlurm(b *hcl.Block, ctx *hcl.EvalContext) (Slurm, hcl.Diagnostics) {
	var s Slurm
	content, diags := b.Body.Content(slurmSchema)
	diags = betterSuggestions(diags, slurmSchema)
	str := func(name string, dst *string) {
		a, ok := content.Attributes[name]
		if !ok {
			return
		}
		v, d := evalString(a.Expr, ctx, "slurm."+name)
		diags = append(diags, d...)
		if d.HasErrors() {
			return
		}
		if strings.TrimSpace(v) == "" || strings.ContainsAny(v, " \t\n") {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid slurm." + name,
				Detail:   fmt.Sprintf("slurm.%s is %q; it must be one word (leave it out to use Slurm's default).", name, v),
				Subject:  a.Expr.Range().Ptr(),
			})
			return
		}
		*dst = v
	}
	str("partition", &s.Partition)
	str("gres", &s.Gres)
	str("account", &s.Account)
	str("qos", &s.QoS)
	if a, ok := content.Attributes["cpus"]; ok {
		n, d := evalInt(a.Expr, ctx, "slurm.cpus")
		diags = append(diags, d...)
		if !d.HasErrors() && (n < 1 || n > 100000) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid slurm.cpus",
				Detail:   "cpus is the number of CPUs per task (--cpus-per-task): a whole number of at least 1.",
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		s.CPUs = n
	}
	if a, ok := content.Attributes["mem"]; ok {
		v, d := evalString(a.Expr, ctx, "slurm.mem")
		diags = append(diags, d...)
		if !d.HasErrors() && !memRe().MatchString(v) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid slurm.mem",
				Detail:   fmt.Sprintf("mem is %q; write the memory per node as Slurm's --mem takes it: megabytes (4000) or a number with K, M, G or T (\"4G\").", v),
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		s.Mem = strings.ToUpper(v)
	}
	if a, ok := content.Attributes["time"]; ok {
		d, dd := evalSlurmTime(a.Expr, ctx)
		diags = append(diags, dd...)
		s.Time = d
	}
	if a, ok := content.Attributes["extra_args"]; ok {
		l, d := evalStringList(a.Expr, ctx, "slurm.extra_args")
		diags = append(diags, d...)
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
		s.ExtraArgs = l
	}
	return s, diags
}

// evalSlurmTime evaluates slurm.time: a cairn duration ("90m", "2h", a
// number of seconds) or a Slurm time ("30", "1:30:00", "2-00:00:00").
func evalSlurmTime(expr hcl.Expression, ctx *hcl.EvalContext) (time.Duration, hcl.Diagnostics) {
	v, diags := evalValue(expr, ctx, "slurm.time")
	if diags.HasErrors() {
		return 0, diags
	}
	if v.Type() == cty.String {
		if d, ok := ParseSlurmTime(v.AsString()); ok {
			return d, diags
		}
	}
	d, dd := evalDuration(expr, ctx, "slurm.time")
	if dd.HasErrors() {
		for _, x := range dd {
			x.Detail = strings.TrimSuffix(x.Detail, ".") + `, or a Slurm time such as "30" (minutes), "1:30:00" or "2-00:00:00".`
		}
	}
	return d, dd
}

// ParseSlurmTime parses a time in one of Slurm's formats (minutes,
// minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]]).
func ParseSlurmTime(s string) (time.Duration, bool) {
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

// SlurmMinutes renders a time limit as sbatch's --time value: whole
// minutes, rounded up (Slurm's granularity).
func SlurmMinutes(d time.Duration) string {
	m := (d + time.Minute - 1) / time.Minute
	if m < 1 {
		m = 1
	}
	return strconv.FormatInt(int64(m), 10)
}

// decodeExecutor evaluates an executor attribute.
func decodeExecutor(a *hcl.Attribute, ctx *hcl.EvalContext) (string, hcl.Diagnostics) {
	v, diags := evalString(a.Expr, ctx, "executor")
	if diags.HasErrors() {
		return "", diags
	}
	for _, e := range Executors {
		if v == e {
			return v, diags
		}
	}
	return "", append(diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unknown executor",
		Detail:   fmt.Sprintf("executor is %q; it can be %q (this machine) or %q (submit with sbatch).%s", v, ExecutorLocal, ExecutorSlurm, didYouMean(v, Executors)),
		Subject:  a.Expr.Range().Ptr(),
	})
}
