// Package testkit holds what the tests of several packages share: golden
// files that -update rewrites ([Golden], [Updating]) and the process census
// ([Procs], [KillProcs], [WaitGone]): every process a phase starts carries a
// marker in its environment, and a test asserts that none is left alive.
// It also reads a live terminal display's output ([Visible], [CheckCleanEnd]).
// Only tests import it.
package testkit
