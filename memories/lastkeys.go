package memories

import (
	"path/filepath"
	"slices"
	"sync"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/internal/fsx"
)

// LastKeys remembers the last key each phase succeeded or hit with in this
// workspace, so a miss can be explained by diffing against that entry's
// recorded components.
type LastKeys struct {
	path  string
	mu    sync.Mutex
	keys  map[string]cache.ActionID
	dirty bool
}

// keysStore is the last keys' file: per phase, sorted by address, the
// address and the key.
var keysStore = hint.Store[map[string]cache.ActionID]{
	Format:   hint.NewFormat("last-keys", 1, "ws"),
	Perm:     0o644,
	SizeHint: func(m map[string]cache.ActionID) int { return len(m) * (40 + len(cache.ActionID{})) },
	Encode: func(w *hint.Writer, m map[string]cache.ActionID) {
		addrs := make([]string, 0, len(m))
		for addr := range m {
			addrs = append(addrs, addr)
		}
		slices.Sort(addrs)
		w.Len(len(addrs))
		for _, addr := range addrs {
			id := m[addr]
			w.Str(addr)
			w.Fixed(id[:])
		}
	},
	Decode: func(r *hint.Reader) (map[string]cache.ActionID, error) {
		n := r.Len()
		m := make(map[string]cache.ActionID, n)
		for i := 0; i < n && r.OK(); i++ {
			addr := r.Str()
			var id cache.ActionID
			r.Fixed(id[:])
			m[addr] = id
		}
		return m, nil
	},
}

func LoadLastKeys(path string) *LastKeys {
	ki := &LastKeys{path: path}
	ki.keys, _ = keysStore.Load(path)
	if ki.keys == nil {
		ki.keys = map[string]cache.ActionID{}
	}
	return ki
}

func (ki *LastKeys) Get(addr string) (cache.ActionID, bool) {
	ki.mu.Lock()
	id, ok := ki.keys[addr]
	ki.mu.Unlock()
	return id, ok
}

func (ki *LastKeys) Set(addr string, key cache.ActionID) {
	ki.mu.Lock()
	if cur, ok := ki.keys[addr]; !ok || cur != key {
		ki.keys[addr] = key
		ki.dirty = true
	}
	ki.mu.Unlock()
}

func (ki *LastKeys) Save() error {
	ki.mu.Lock()
	defer ki.mu.Unlock()
	if !ki.dirty {
		return nil
	}
	if err := fsx.NoSpace(keysStore.Save(ki.path, ki.keys), filepath.Dir(ki.path)); err != nil {
		return err
	}
	ki.dirty = false
	return nil
}
