// Package spec turns an experiment.hcl file into a typed, fully evaluated
// model: the experiment settings, the variables' values and every phase
// with its command, inputs, outputs, params and environment, plus the edges
// between phases.
//
// Load is the entry point. Decoding happens in two steps, as HCL's
// "interdependent blocks" pattern suggests: blocks are first decoded into
// expressions, the references between phases (phase.NAME.outputs.KEY,
// depends_on) are collected to order them, and then each phase is evaluated
// in dependency order with an hcl.EvalContext that holds its upstream
// phases' output paths. Every problem is reported as an hcl.Diagnostic with
// a source range, all at once.
//
// spec knows nothing about execution or caching: hashing input content,
// running commands and storing results live in package engine and cache.
// The graph type comes from package dag.
package spec
