package engine

import (
	"errors"
	"fmt"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/spec"
)

// An input edited while its phase runs leaves outputs made from the old
// content, the new one or a mix, and the key computed before the command
// started describes only the old. Stored under that key, they would be
// restored to everyone with the old content, from a shared or remote
// cache too. So once the command has ended, the inputs are checked again
// (Bazel's guard against concurrent changes does the same before it
// uploads): they are expanded again as the key's were (directories,
// globs) and their stats compared with those the key was made from, by
// the fingerprint; the inputs that were racy then are hashed again. An
// input calm then and edited since has another stat (the racy rule), so
// when all is the same, nothing changed. Otherwise (or when the
// fingerprint is unknown) their components are computed again, through
// the digest memory, to name what changed.
//
// A phase run on this kernel (executor.Here) had its inputs walked under
// a directory watch (inputs.Watched): when the watch stayed quiet and
// what it cannot vouch for (symlinks, files of several links, each
// input's own path) has the stat it had, a second walk would find what
// the first found, so only the racy inputs are hashed again. A glob
// input, a watch that cannot be had (a network filesystem, no inotify)
// or any event in a walked directory (the phase's own outputs written
// inside an input directory, too) takes the walk. Other executors' jobs
// write through another kernel: they never have a watch.
//
// A changed input does not fail the phase: its command succeeded, and its
// outputs are in the workspace, as make would leave them. They are not
// cached, which is all a later run trusts (a key with no entry runs
// again), the phase-key memory forgets the phase, and the run warns and
// says so in its record and its closing line. Its dependants run as
// usual: their keys hold the digests of the outputs they read, not this
// phase's key, so what they store is described truthfully.

// inputsChanged reports how p's inputs differ from those d's key was
// computed from ("input in.txt changed", "input data/c.txt added"), or
// nil when they are the same. up holds the upstream output trees d was
// decided with.
func (e *Engine) inputsChanged(p *spec.Phase, d *Decision, up map[string][]cache.OutputFile) []string {
	if d.seen != nil && d.watched.Unchanged() && e.sameContent(d.seen.racy) {
		return nil
	}
	if testHookRecheckWalk != nil {
		testHookRecheckWalk(p.Addr)
	}
	if d.seen != nil {
		if g, err := e.gather(p, up); err == nil && e.fingerprint(g) == d.seen.fp && e.sameContent(d.seen.racy) {
			return nil
		}
	}
	comps, err := e.components(p, up)
	if err != nil {
		var missing *MissingInputError
		if errors.As(err, &missing) {
			return []string{fmt.Sprintf("input %s removed", missing.Input)}
		}
		return []string{fmt.Sprintf("inputs could not be checked again (%v)", err)}
	}
	if cache.ComputeKey(comps) == d.key {
		return nil
	}
	if changed := diffComponents(inputComponents(d.components), inputComponents(comps), nil); len(changed) > 0 {
		return e.maskSensitive(changed)
	}
	return []string{"its inputs changed"}
}

// testHookRecheckWalk, when set by a test, is told each phase whose
// inputs the recheck expands again.
var testHookRecheckWalk func(addr string)

// inputComponents returns the input files' components of comps.
func inputComponents(comps []cache.Component) []cache.Component {
	var out []cache.Component
	for _, c := range comps {
		if c.Kind == kindInput {
			out = append(out, c)
		}
	}
	return out
}
