package memories

import (
	"io/fs"
	"testing"

	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/internal/testkit"
	"github.com/cairn-run/cairn/workspace"
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

// loadedRecords returns the records a loaded memory reads: the base
// file's, and over them the recent file's.
func loadedRecords(m *Memory) map[string]memEntry {
	out := map[string]memEntry{}
	for _, f := range []memFile{m.file, m.recent} {
		for _, rec := range f.recs {
			p, e := readMemEntry(hint.NewReader(rec))
			out[p] = e
		}
	}
	return out
}

// statOf is the stat of the file e was recorded of.
func statOf(e memEntry) workspace.FileStat {
	return workspace.FileStat{Size: e.size, MTime: e.mtime, CTime: e.ctime, Ino: e.ino, Mode: fs.FileMode(e.mode)}
}
