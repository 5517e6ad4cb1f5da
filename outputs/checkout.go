package outputs

import (
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace"
)

// CheckoutResult counts what Checkout did.
type CheckoutResult struct {
	Restored  []string // phases whose outputs were restored
	UpToDate  int      // phases whose outputs were already in place
	NotCached []string // phases whose result is not in the cache
}

// Checkout restores into the workspace the outputs that the phases of
// run st produced or found cached, from cache c, without running
// anything. Outputs already in place are left alone.
func Checkout(ws workspace.Workspace, c *remote.Tiered, st *runrec.RunState) (*CheckoutResult, error) {
	lock, err := ws.TryLock("checkout")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	mem := memories.LoadMemory(filepath.Join(ws.StateDir(), "digests"))
	out := &Keeper{WS: &ws, Cache: c, Mem: mem, Now: time.Now}
	res := &CheckoutResult{}
	addrs := make([]string, 0, len(st.Phases))
	for a := range st.Phases {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, addr := range addrs {
		ps := st.Phases[addr]
		switch ps.Status {
		case runrec.StatusSucceeded, runrec.StatusCached, runrec.StatusRestored:
		default:
			continue
		}
		key, err := cache.ParseActionID(ps.Key)
		if err != nil {
			continue
		}
		entry, err := c.GetEntry(key)
		if err != nil {
			res.NotCached = append(res.NotCached, addr)
			continue
		}
		parts, problem := Split(entry)
		if problem != "" {
			return res, fmt.Errorf("phase %s: cached result %s %s; refusing to restore it", addr, key.Short(), problem)
		}
		restored := false
		// A temporary output is not in the cache: the run removed it
		// once the phases reading it were done.
		var stored []string
		for _, o := range Declared(entry) {
			if !Temporary(parts[o]) {
				stored = append(stored, o)
			}
		}
		unmatched := out.Unmatched(stored, parts)
		for i, o := range stored {
			part := parts[o]
			if !unmatched[i] {
				continue
			}
			if err := out.Restore(o, part, entry.Inline); err != nil {
				return res, fmt.Errorf("phase %s: %w", addr, err)
			}
			restored = true
		}
		if restored {
			res.Restored = append(res.Restored, addr)
		} else {
			res.UpToDate++
		}
	}
	if err := mem.Save(); err != nil {
		return res, err
	}
	return res, nil
}
