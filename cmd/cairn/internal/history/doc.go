// Package history is the run-history views of cairn metrics and cairn
// compare: the table of params and metrics across runs and the
// side-by-side comparison of two runs, built from run records, sorted and
// written as text, JSON or CSV.
//
// It is apart from the command line because it only reads records and
// renders them: it is tested against fixture runs and golden files with no
// workspace, flags or cobra. Choosing the runs stays in the command line.
// Being under cmd/cairn/internal, only the command line may use it.
package history
