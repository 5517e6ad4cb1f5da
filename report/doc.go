// Package report renders one run as a single self-contained HTML page: a
// header with the run's status and spend, its phase graph drawn as inline
// SVG, a phase table, params and metrics, and the tails of every phase's
// logs. The page loads nothing: no script, no font, no stylesheet, no
// image from anywhere, so it can be mailed or attached as it is.
//
// The entry point is [Write], which takes an [Input]: the run's record
// (runrec.RunState), the spec's graph when it still loads, and where to
// read logs. The same input gives the same bytes.
//
// The graph layout (layers by longest path, barycentre ordering that keeps
// for_each instances together, dummy slots for long edges) lives in
// layout.go and knows nothing of runs; svg.go turns it into boxes, paths
// and a legend; status.go holds the status colours; metrics.go flattens
// params and metrics into tables; logs.go reads log tails; page.html is
// the html/template that escapes everything the page shows. Loading the
// run, the spec and the cache is the caller's job (cmd/cairn's report
// command).
package report
