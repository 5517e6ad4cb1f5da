package cache

import (
	"errors"
	"fmt"
)

// ErrNotFound means the object is not in the cache: a plain miss. Check it
// with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrCorrupt means an object was in the cache but failed verification. The
// returned error is a [*CorruptError] naming the object; callers treat it
// as a miss and may report it. Check it with errors.Is.
var ErrCorrupt = errors.New("corrupt")

// ErrTemporary means a restore asked for a temporary output, which the
// cache does not store (see OutputFile.Temporary): only running its phase
// again makes it.
var ErrTemporary = errors.New("temporary output, not stored in the cache")

// ErrUnknownFormat means a cache directory was written in an on-disk format
// this version of cairn does not know. [Open] refuses such a directory
// rather than guess.
var ErrUnknownFormat = errors.New("unknown cache format")

// ErrDamagedFormat means a cache directory's format marker names no format
// at all (it was truncated or overwritten). Errors wrapping it also wrap
// [ErrUnknownFormat]; upkeep.Verify with Repair rewrites such a marker once
// every object verifies (see [Options.AllowDamagedFormat]).
var ErrDamagedFormat = errors.New("damaged cache format marker")

// CorruptError reports an object that failed verification. By the time it
// is returned the object has been moved out of the way (see Moved), so the
// next write of the same object can succeed.
type CorruptError struct {
	Kind  string // "blob" or "entry"
	ID    string // full hex digest or key
	Path  string // where the object was found
	Moved string // where it was moved to, under quarantine/; "" if it could not be moved
	Err   error  // what was wrong
}

func (e *CorruptError) Error() string {
	id := e.ID
	if len(id) > 12 {
		id = id[:12]
	}
	msg := fmt.Sprintf("corrupt %s %s: %v", e.Kind, id, e.Err)
	if e.Moved != "" {
		msg += " (moved to " + e.Moved + ")"
	}
	return msg
}

// Unwrap returns the cause.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true for every *CorruptError.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }
