// Package engine runs an evaluated experiment: it computes every phase's
// key from its command, params, env, input contents and upstream output
// digests, looks the key up in the cache, restores or runs the phase, and
// records each decision and result in the run's state.json.
//
// Plan decides without running anything; Run takes the workspace lock,
// schedules ready phases up to the concurrency limit through an Executor,
// stores successful outputs in the cache and restores cached ones into the
// workspace. Progress goes to a Reporter; the engine never prints.
//
// The spec model comes from package spec, the graph and scheduling state
// from package dag, and the content-addressed store from package cache.
package engine
