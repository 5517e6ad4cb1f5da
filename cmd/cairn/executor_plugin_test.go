package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/spec"
)

// An executor known only to the tests, registered as cmd/cairn registers
// its own (executors.go): testdata/script/executor_plugin.txtar shows
// that a spec can name it and configure it with its block, that its
// block's errors point into the spec, and that --executor picks it, with
// no other edit anywhere.
func init() {
	executor.Register(executor.Plugin{
		Name:    "tagged",
		Summary: "this machine, tagged",
		Decode:  decodeTagged,
		New:     func(executor.Env) (executor.Executor, error) { return taggedExecutor{}, nil },
	})
}

// taggedExecutor runs a phase's command with sh, and first writes the
// tag of the phase's tagged block to its standard error.
type taggedExecutor struct{}

func (taggedExecutor) Run(ctx context.Context, job *executor.Job) (int, error) {
	var c struct {
		Tag string `json:"tag"`
	}
	if err := job.Config.Decode(&c); err != nil {
		return -1, err
	}
	fmt.Fprintf(job.Stderr, "tagged executor, tag %q\n", c.Tag)
	cmd := exec.CommandContext(ctx, job.Argv[0], job.Argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = job.Dir, job.Env, job.Stdout, job.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

var taggedSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "tag"}}}

var tagWord = regexp.MustCompile(`^[a-z]+$`)

func decodeTagged(body hcl.Body, ctx *hcl.EvalContext) (executor.Config, hcl.Diagnostics) {
	content, diags := spec.Content(body, taggedSchema)
	cfg := executor.Config{}
	if a, ok := content.Attributes["tag"]; ok {
		v, d := spec.EvalString(a.Expr, ctx, "tagged.tag")
		diags = append(diags, d...)
		if !d.HasErrors() && !tagWord.MatchString(v) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid tagged.tag",
				Detail:   fmt.Sprintf("tag is %q; write it in lower-case letters.", v),
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		cfg["tag"], _ = json.Marshal(v)
	}
	return cfg, diags
}
