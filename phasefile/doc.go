// Package phasefile handles the files a running phase writes for cairn
// beside its outputs: its stdout and stderr logs (which start as links to
// one empty file), the masking of secret values on their way into them,
// the $CAIRN_REPORT file it appends spending to while it runs, and the
// metrics files it names. Each works on a path or a stream and knows
// nothing of the run that asked: the engine decides where the files go
// and what their contents mean for the phase.
package phasefile
