// Package planfile is the saved-plan file format: what cairn plan -out
// writes and cairn run FILE reads, checks and compares with the plan made
// now. A plan records what a run was approved to do, so that applying it
// refuses when anything that decides a phase moved since (the spec, a
// variable, an input), as Terraform refuses a stale plan.
//
// It is apart from the command line because the format is a contract with
// files from anywhere (every field is checked before use, and fuzzed) and
// must keep secrets out; it is tested without cobra or a workspace. Being
// under cmd/cairn/internal, only the command line may use it.
package planfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// Magic starts every saved plan: cairn run tells a saved plan from
// a target by it. The number is the format's version.
const Magic = "cairn-plan 1\n"

// Ext is the extension saved plans are given by convention; a file
// with it must be a saved plan.
const Ext = ".cairnplan"

// maxSize bounds what is read of a file that claims to be a plan.
const maxSize = 1 << 30

// Plan is a saved plan's JSON body.
type Plan struct {
	// Spec is the spec file as given; SpecSHA256 the SHA-256 of its bytes.
	Spec       string       `json:"spec"`
	SpecSHA256 string       `json:"spec_sha256"`
	Targets    []string     `json:"targets"`
	Gates      runrec.Gates `json:"gates"`
	// Variables holds every variable that is not sensitive, with its
	// value as resolved (default, CAIRN_VAR_NAME, -var-file, -var).
	Variables map[string]string `json:"variables"`
	// Sensitive names the sensitive variables, whose values are never
	// written: they must be given again to run the plan.
	// SensitiveDigest tells their values apart without revealing them.
	Sensitive       []string `json:"sensitive,omitempty"`
	SensitiveDigest string   `json:"sensitive_digest,omitempty"`
	Phases          []Phase  `json:"phases"`
}

// Phase is one phase of a saved plan: what the run does with it, its
// key (or, when an upstream phase must run first, the provisional key of
// its own components), and, for a phase that runs, the components, so a
// stale plan can say what changed.
type Phase struct {
	Phase          string            `json:"phase"`
	Action         engine.Action     `json:"action"`
	Key            string            `json:"key,omitempty"`
	ProvisionalKey string            `json:"provisional_key,omitempty"`
	Reasons        []string          `json:"reasons,omitempty"`
	Components     []cache.Component `json:"components,omitempty"`
}

// phaseKey returns the key a phase is checked by.
func (p *Phase) phaseKey() string {
	if p.Key != "" {
		return p.Key
	}
	return p.ProvisionalKey
}

// New records plan, made from s with targets and gates.
func New(s *spec.Spec, targets []string, gates runrec.Gates, plan *engine.PlanResult) *Plan {
	sp := &Plan{
		Spec:       s.File,
		SpecSHA256: s.Hash,
		Targets:    targets,
		Gates:      gates,
		Variables:  map[string]string{},
		Sensitive:  s.SensitiveVars,
	}
	if sp.Targets == nil {
		sp.Targets = []string{}
	}
	for name, v := range s.Variables {
		if !slices.Contains(s.SensitiveVars, name) {
			sp.Variables[name] = v
		}
	}
	if len(s.SensitiveVars) > 0 {
		sp.SensitiveDigest = sensitiveDigest(s.SensitiveValues)
	}
	sp.Phases = make([]Phase, 0, len(plan.Decisions))
	for _, d := range plan.Decisions {
		ph := Phase{Phase: d.Phase, Action: d.Action, Key: d.Key, ProvisionalKey: d.ProvisionalKey(), Reasons: d.Reasons}
		if d.Action == engine.ActionRun {
			ph.Components = d.PlanComponents()
		}
		sp.Phases = append(sp.Phases, ph)
	}
	return sp
}

// sensitiveDigest is a domain-separated SHA-256 prefix of the sensitive
// variables' values: it tells one set of values from another and reveals
// no more than a phase key over them does.
func sensitiveDigest(values []string) string {
	vs := slices.Clone(values)
	sort.Strings(vs)
	h := sha256.New()
	io.WriteString(h, "cairn plan sensitive values\x00")
	for _, v := range vs {
		fmt.Fprintf(h, "%d:%s\x00", len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Encode returns the bytes of a saved plan. It refuses when they
// would hold a secret in clear: a value of a sensitive variable, or of an
// environment variable a phase names in secret_env (both can reach a key
// component or a reason that is not masked, such as a variable's value
// equal to a secret).
func Encode(sp *Plan, s *spec.Spec, lookupEnv func(string) (string, bool)) ([]byte, error) {
	body, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return nil, err
	}
	data := append([]byte(Magic), body...)
	data = append(data, '\n')
	for _, v := range s.SensitiveValues {
		if v != "" && bytes.Contains(data, []byte(v)) {
			return nil, fmt.Errorf("the plan would hold the value of a sensitive variable (one of %s) in clear; nothing was written", strings.Join(s.SensitiveVars, ", "))
		}
	}
	seen := map[string]bool{}
	for _, p := range s.Phases {
		for _, name := range p.SecretEnv {
			if seen[name] {
				continue
			}
			seen[name] = true
			if v, ok := lookupEnv(name); ok && v != "" && bytes.Contains(data, []byte(v)) {
				return nil, fmt.Errorf("the plan would hold the value of secret_env %s (phase %s) in clear; nothing was written", name, p.Addr)
			}
		}
	}
	return data, nil
}

// Is reports whether the argument of cairn run names a saved
// plan: a file that starts with Magic. A file named *.cairnplan
// that does not is an error (a usage error to the caller), not a target.
func Is(arg string) (bool, error) {
	f, err := os.Open(arg)
	if err != nil {
		if strings.HasSuffix(arg, Ext) {
			return false, fmt.Errorf("saved plan %s: %w", arg, err)
		}
		return false, nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false, nil
	}
	head := make([]byte, len(Magic))
	n, _ := io.ReadFull(f, head)
	if string(head[:n]) == Magic {
		return true, nil
	}
	if strings.HasSuffix(arg, Ext) {
		if bytes.HasPrefix(head[:n], []byte("cairn-plan ")) {
			return false, fmt.Errorf("saved plan %s: written by another version of cairn (its first line is not %q); make a new plan with cairn plan -out", arg, strings.TrimSpace(Magic))
		}
		return false, fmt.Errorf("%s is not a saved plan (it does not start with %q)", arg, strings.TrimSpace(Magic))
	}
	return false, nil
}

// Read reads and decodes the saved plan at path.
func Read(path string) (*Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSize {
		return nil, fmt.Errorf("saved plan %s: larger than %d bytes", path, maxSize)
	}
	sp, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("saved plan %s: %w", path, err)
	}
	return sp, nil
}

// Decode decodes and checks a saved plan's bytes, which may come
// from anywhere: every field is checked before it is used.
func Decode(data []byte) (*Plan, error) {
	body, ok := bytes.CutPrefix(data, []byte(Magic))
	if !ok {
		return nil, fmt.Errorf("not a saved plan of this version of cairn (it does not start with %q)", strings.TrimSpace(Magic))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var sp Plan
	if err := dec.Decode(&sp); err != nil {
		return nil, fmt.Errorf("damaged: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("damaged: data after the plan")
	}
	if sp.Spec == "" {
		return nil, errors.New("damaged: no spec file")
	}
	if !isHexDigest(sp.SpecSHA256, 64) {
		return nil, fmt.Errorf("damaged: spec_sha256 %q is not a SHA-256", sp.SpecSHA256)
	}
	if sp.SensitiveDigest != "" && !isHexDigest(sp.SensitiveDigest, 16) {
		return nil, fmt.Errorf("damaged: sensitive_digest %q", sp.SensitiveDigest)
	}
	seen := map[string]bool{}
	for i, p := range sp.Phases {
		switch {
		case p.Phase == "":
			return nil, fmt.Errorf("damaged: phase %d has no name", i+1)
		case seen[p.Phase]:
			return nil, fmt.Errorf("damaged: phase %s listed twice", p.Phase)
		case p.Action != engine.ActionRun && p.Action != engine.ActionCached && p.Action != engine.ActionRestore:
			return nil, fmt.Errorf("damaged: phase %s: unknown action %q", p.Phase, p.Action)
		case p.Key != "" && !isHexDigest(p.Key, 64), p.ProvisionalKey != "" && !isHexDigest(p.ProvisionalKey, 64):
			return nil, fmt.Errorf("damaged: phase %s: a key is not a SHA-256", p.Phase)
		}
		seen[p.Phase] = true
	}
	return &sp, nil
}

func isHexDigest(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// Staleness lists, one line each, how the plan made now (s, plan) differs
// from the saved plan sp: the spec, the variables, and each phase whose
// action or key changed, with what changed in it. None: the saved plan
// still holds.
func Staleness(sp *Plan, s *spec.Spec, plan *engine.PlanResult, diff func(prev, cur []cache.Component) []string) []string {
	var out []string
	if s.Hash != sp.SpecSHA256 {
		out = append(out, fmt.Sprintf("spec %s changed (sha256 %s → %s)", s.File, shortKey(sp.SpecSHA256), shortKey(s.Hash)))
	}
	now := New(s, nil, runrec.Gates{}, &engine.PlanResult{})
	names := map[string]bool{}
	for n := range sp.Variables {
		names[n] = true
	}
	for n := range now.Variables {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		was, had := sp.Variables[n]
		is, has := now.Variables[n]
		switch {
		case !had && slices.Contains(sp.Sensitive, n):
			if !slices.Contains(now.Sensitive, n) {
				out = append(out, fmt.Sprintf("variable %s is no longer sensitive (now %s)", n, is))
			}
		case !had:
			out = append(out, fmt.Sprintf("variable %s: not in the saved plan (now %s)", n, is))
		case !has && !slices.Contains(now.Sensitive, n):
			out = append(out, fmt.Sprintf("variable %s: no longer declared (was %s)", n, was))
		case !has:
			out = append(out, fmt.Sprintf("variable %s is sensitive now", n))
		case was != is:
			out = append(out, fmt.Sprintf("variable %s: %s → %s", n, was, is))
		}
	}
	if slices.Equal(sp.Sensitive, now.Sensitive) && sp.SensitiveDigest != now.SensitiveDigest {
		// Which one changed would tell a guesser more: say only that one did.
		out = append(out, fmt.Sprintf("sensitive variables (%s): values differ from the plan's (values hidden; a saved plan holds none: give them again as when it was made)", strings.Join(now.Sensitive, ", ")))
	}
	planned := map[string]*Phase{}
	for i := range sp.Phases {
		planned[sp.Phases[i].Phase] = &sp.Phases[i]
	}
	for _, d := range plan.Decisions {
		p := planned[d.Phase]
		delete(planned, d.Phase)
		key := d.Key
		if key == "" {
			key = d.ProvisionalKey()
		}
		switch {
		case p == nil:
			out = append(out, fmt.Sprintf("phase %s: not in the saved plan (now %s)", d.Phase, d.Action))
		case p.phaseKey() != key:
			why := d.Reasons
			if cur := d.PlanComponents(); p.Components != nil && cur != nil {
				why = diff(p.Components, cur)
			}
			line := fmt.Sprintf("phase %s: key changed", d.Phase)
			if p.Action != d.Action {
				line = fmt.Sprintf("phase %s: planned %s, now %s", d.Phase, p.Action, d.Action)
			}
			if len(why) > 0 {
				line += ": " + strings.Join(why, "; ")
			}
			out = append(out, line)
		case p.Action != d.Action:
			line := fmt.Sprintf("phase %s: planned %s, now %s", d.Phase, p.Action, d.Action)
			if len(d.Reasons) > 0 {
				line += ": " + strings.Join(d.Reasons, "; ")
			}
			out = append(out, line)
		}
	}
	for _, p := range sp.Phases {
		if planned[p.Phase] != nil {
			out = append(out, fmt.Sprintf("phase %s: in the saved plan, not in the plan now", p.Phase))
		}
	}
	return out
}

// shortKey is a key's prefix as cairn prints keys.
func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12]
	}
	return k
}
