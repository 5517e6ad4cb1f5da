// Package runrec holds a workspace's run records: the content of
// .cairn/runs/<run-id>/state.json (RunState, PhaseState, the Request that
// resume repeats, the statuses, the Spend ledger), its encoder and reader,
// and the directory of records (Dir): listing them, newest first or all,
// finding one by id or prefix, pruning old ones.
//
// The name says "records": what a run leaves for cairn status, report,
// compare and resume, read by packages that never schedule a phase
// (report, the executors). It imports nothing of the engine, the cache or
// the spec, so reading a run's record costs none of them.
package runrec
