package inputs

import (
	"errors"
	"io/fs"
	"sync"

	"github.com/cairn-run/cairn/workspace"
	"github.com/cairn-run/cairn/workspace/watch"
)

// Watched is a phase's inputs found under a directory watch (package
// workspace/watch), kept to tell later, without expanding them again,
// that an expansion would find what this one found: see Unchanged. The
// watch starts at the first directory walked and covers every directory
// the walk opens, from before it is read. What it does not vouch for is
// noted with the stat the walk took, and stat'ed again by Unchanged: each
// plain input's own path (a file, or a directory's root, which a rename
// or a symlink retargeted above it would swap without an event in it),
// every symlink and every file with several links. A glob's listing is
// not watched: a phase with a glob input is never Unchanged.
//
// Unchanged vouches for names and stats only, as the fingerprint does:
// files racy when their digests were taken must still be hashed again.
type Watched struct {
	ws   *workspace.Workspace
	once sync.Once
	w    *watch.Watch // set by start; nil while no directory was walked

	mu    sync.Mutex
	glob  bool   // an input is a glob
	noted []File // what the watch does not vouch for, with its stat then (zero: nothing there)
}

// NewWatched returns a Watched for inputs in ws, with no watch yet.
func NewWatched(ws *workspace.Workspace) *Watched { return &Watched{ws: ws} }

// start starts the watch if it is not; a nil v does nothing.
func (v *Watched) start() {
	if v != nil {
		v.once.Do(func() { v.w = watch.New() })
	}
}

// watch returns the watch, nil if none was started.
func (v *Watched) watch() *watch.Watch {
	if v == nil {
		return nil
	}
	return v.w
}

// note records rel, which the watch does not vouch for, with the stat the
// expansion took (zero when it named nothing).
func (v *Watched) note(rel string, st workspace.FileStat) {
	if v == nil {
		return
	}
	v.mu.Lock()
	v.noted = append(v.noted, File{Rel: rel, St: st})
	v.mu.Unlock()
}

// sawGlob records that an input was expanded from a glob.
func (v *Watched) sawGlob() {
	if v != nil {
		v.mu.Lock()
		v.glob = true
		v.mu.Unlock()
	}
}

// Unchanged reports whether expanding the inputs again would find the
// same files with the same stats: no glob among them, a watch that stayed
// quiet (when a directory was walked), and every noted path with the stat
// it had. A nil v is never unchanged.
func (v *Watched) Unchanged() bool {
	if v == nil {
		return false
	}
	v.once.Do(func() {}) // no watch starts after this
	v.mu.Lock()
	glob, noted := v.glob, v.noted
	v.mu.Unlock()
	if glob || v.w != nil && !v.w.Quiet() {
		return false
	}
	for _, f := range noted {
		st, err := v.ws.StatRel(f.Rel)
		if errors.Is(err, fs.ErrNotExist) {
			st, err = workspace.FileStat{}, nil
		}
		if err != nil || st != f.St {
			return false
		}
	}
	return true
}

// Close releases the watch; a nil v does nothing.
func (v *Watched) Close() {
	if v == nil {
		return
	}
	v.once.Do(func() {})
	if v.w != nil {
		v.w.Close()
	}
}
