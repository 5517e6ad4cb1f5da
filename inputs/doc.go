// Package inputs finds a phase's input files and digests them: it expands
// the phase's patterns into the files they name, stats them (walking
// directories on all cores), fingerprints them by name and stat, and
// digests them through the digest memory (package memories), reading only
// the files it does not know.
package inputs
