// Package fsxtest holds the test implementations of the file layer
// [fsx.FS]: [Fault], which fails (or silently skips) the n-th call of an
// operation, and [Recorder], which logs every operation so that the states
// a power cut could leave can be enumerated and written out ([Recorder.CrashStates]).
package fsxtest
