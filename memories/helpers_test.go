package memories

import (
	"testing"

	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/internal/testkit"
)

// calmFiles is testkit.CalmFiles.
func calmFiles(t testing.TB, dir string, names ...string) {
	t.Helper()
	testkit.CalmFiles(t, dir, names...)
}

// parseMemory reads every entry of the memory file data.
func parseMemory(data []byte) (map[string]memEntry, error) {
	r, err := digestsFormat.Open(data)
	if err != nil {
		return nil, err
	}
	f, err := indexMemory(r)
	if err != nil {
		return nil, err
	}
	out := make(map[string]memEntry, len(f.recs))
	for _, rec := range f.recs {
		p, e := readMemEntry(hint.NewReader(rec))
		out[p] = e
	}
	return out, nil
}

// encodeMemory returns the memory file of entries.
func encodeMemory(entries map[string]memEntry) []byte {
	m := &Memory{entries: map[string]*dirRecs{}}
	for path, e := range entries {
		m.record(path, e)
	}
	return m.merged()
}
