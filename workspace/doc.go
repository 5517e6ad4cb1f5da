// Package workspace is the experiment's directory on disk as cairn uses
// it: the .cairn layout (run directories, the current-run file, stop
// requests, checkpoint directories), the lock a run holds, atomic writes
// of state files and the removal of the temps a dead cairn left, the run
// record's writer, and reading the tree itself (stat without an
// fs.FileInfo, glob expansion of input patterns). It decides nothing
// about phases: the engine says what to write and when, and every reader
// of run records (cairn status, logs, stop) needs only this package and
// runrec, not the engine.
package workspace
