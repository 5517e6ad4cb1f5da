// Package inputs finds a phase's input files and digests them: it expands
// the phase's patterns into the files they name, stats them (walking
// directories on all cores), fingerprints them by name and stat, and
// digests them through the digest memory (package memories), reading only
// the files it does not know; the small files of a directory it knows
// nothing of are read as the walk finds them, each opened and stat'ed
// once.
package inputs
