package outputs

import (
	"errors"
	"fmt"
	"os"

	"github.com/cairn-run/cairn/cache"
)

// Logs are the logs of a phase's last attempt, and whether the command
// wrote nothing to each.
type Logs struct {
	Stdout, Stderr           string
	StdoutEmpty, StderrEmpty bool
}

// Store writes a succeeded phase's logs and action entry to the cache.
// entry holds what the engine knows of the phase (key, components,
// spending, host); Store adds the output tree, the inline blobs and the
// logs. The outputs' blobs are already there (CommitAll) or go inside the
// entry, so the entry never references a missing blob. replace makes the
// entry the key's even if one is there (a forced run).
func (k *Keeper) Store(entry *cache.Entry, out *Collected, logs Logs, replace bool) error {
	c := k.Cache
	tree := out.Tree
	outD, err := k.putLog(logs.Stdout, logs.StdoutEmpty, &out.Inline)
	if err != nil {
		return err
	}
	errD, err := k.putLog(logs.Stderr, logs.StderrEmpty, &out.Inline)
	if err != nil {
		return err
	}
	format := cache.EntryFormat
	if len(out.Inline.Blobs) > 0 {
		format = cache.EntryFormatInline
	}
	for _, f := range tree {
		if f.Temporary {
			format = cache.EntryFormatTemp
			break
		}
	}
	entry.Format = format
	entry.Outputs = tree
	entry.Inline = out.Inline.Blobs
	entry.Stdout, entry.Stderr = outD, errD
	put := c.PutEntry
	if replace {
		put = c.ReplaceEntry
	}
	err = put(entry)
	if errors.Is(err, cache.ErrNotFound) {
		// A blob was evicted (cairn cache gc) between being stored and
		// being referenced: store the outputs again, once.
		for _, f := range tree {
			if _, inline := entry.InlineData(f.Digest); f.Type != cache.TypeFile || f.Temporary || inline {
				continue
			}
			d, _, perr := c.PutFile(k.WS.Abs(f.Path))
			if perr != nil {
				return perr
			}
			if d != f.Digest {
				return fmt.Errorf("output %s changed after the phase ended", f.Path)
			}
		}
		if _, err = k.putLog(logs.Stdout, logs.StdoutEmpty, &out.Inline); err == nil {
			if _, err = k.putLog(logs.Stderr, logs.StderrEmpty, &out.Inline); err == nil {
				err = put(entry)
			}
		}
	}
	if err == nil && k.Session != nil {
		k.Session().Put(entry.Key)
	}
	return err
}

// putLog stores a log of the phase's last attempt in the cache: inside
// the entry (in inline) if it is small, else as a blob. One the command
// wrote nothing to is the empty blob, not read again.
func (k *Keeper) putLog(path string, empty bool, inline *InlineBlobs) (cache.Digest, error) {
	if empty {
		d := cache.HashBytes(nil)
		if inline.Add(d, nil) {
			return d, nil
		}
		return k.Cache.PutBytes(nil)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() <= cache.InlineMax {
		if b, err := os.ReadFile(path); err == nil && len(b) <= cache.InlineMax {
			d := cache.HashBytes(b)
			if inline.Add(d, b) {
				return d, nil
			}
		}
	}
	d, _, err := k.Cache.PutFile(path)
	return d, err
}
