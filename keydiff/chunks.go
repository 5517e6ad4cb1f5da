package keydiff

import "github.com/cairn-run/cairn/cache"

// Changed narrows prev, an earlier result read as a head (its input
// components in chunks, see [cache.Dir.GetEntryHead]), and cur, a phase's
// components now, to the components that can differ, for [Reasons]: the
// inputs of a chunk both have (one digest: the same components) are left
// out of both sides. Chunk boundaries move only where an input was edited,
// added or removed, so of a million inputs with one edited, read is asked
// for one chunk of prev's (or two, where a boundary moved). An entry
// without chunks is returned whole.
func Changed(prev *cache.Entry, cur *cache.Keyed, read func(cache.Chunk) ([]cache.Component, error)) (old, now []cache.Component, err error) {
	if len(prev.Chunks) == 0 {
		return prev.Components, cur.Components(), nil
	}
	chunks := cur.Chunks()
	ours := make(map[cache.Digest]bool, len(chunks))
	for _, ch := range chunks {
		ours[ch.Digest] = true
	}
	for _, c := range prev.Components {
		if c.Kind != cache.ChunkKind { // a whole entry holds its inputs too
			old = append(old, c)
		}
	}
	theirs := make(map[cache.Digest]bool, len(prev.Chunks))
	for _, ch := range prev.Chunks {
		theirs[ch.Digest] = true
		if ours[ch.Digest] {
			continue
		}
		comps, err := read(ch)
		if err != nil {
			return nil, nil, err
		}
		old = append(old, comps...)
	}
	if chunks == nil { // few inputs now: all of them may differ
		return old, cur.Components(), nil
	}
	// In cur's order: its inputs lie between the kinds before theirs and
	// those after.
	for _, c := range cur.Components() {
		if c.Kind < cache.ChunkKind {
			now = append(now, c)
		}
	}
	for i, ch := range chunks {
		if !theirs[ch.Digest] {
			now = append(now, cur.ChunkComponents(i)...)
		}
	}
	for _, c := range cur.Components() {
		if c.Kind > cache.ChunkKind {
			now = append(now, c)
		}
	}
	return old, now, nil
}
