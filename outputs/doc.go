// Package outputs moves a phase's declared outputs between the workspace
// and the cache: it clears them before the phase runs, hashes and stages
// them when it succeeds and stores its entry, tells whether the workspace
// still holds a cached tree, restores one (Checkout restores a recorded
// run's), and removes what a failed phase left. Every write and removal
// goes through an os.Root on the workspace, and every symlink an output
// holds or sits under is checked, so that neither a phase nor a planted
// cache entry makes cairn write or delete outside the workspace.
//
// It stands apart from the engine because it decides nothing: the engine
// says which outputs to restore, store or remove and when; this package
// knows only how, and its safety rules live in one place.
package outputs
