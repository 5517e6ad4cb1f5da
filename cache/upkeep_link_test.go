package cache_test

import (
	"encoding/json"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/upkeep"
)

// Links upkeep's Verify and GC into the store's tests (see
// upkeep_hooks_test.go): the reports are copied field by field name.
func init() {
	cache.VerifyHook = func(c *cache.Dir, o cache.VerifyOptions) (*cache.VerifyReport, error) {
		rep, err := upkeep.Verify(c, upkeep.VerifyOptions{Repair: o.Repair})
		if rep == nil {
			return nil, err
		}
		out := new(cache.VerifyReport)
		convert(rep, out)
		out.Exit = rep.ExitCode()
		return out, err
	}
	cache.StatsHook = func(c *cache.Dir, recent int) (*cache.Stats, error) {
		st, err := upkeep.StatsOf(c, recent)
		if st == nil {
			return nil, err
		}
		out := new(cache.Stats)
		convert(st, out)
		return out, err
	}
	cache.GCHook = func(c *cache.Dir, o cache.GCOptions) (*cache.GCReport, error) {
		rep, err := upkeep.GC(c, upkeep.GCOptions{MaxSize: o.MaxSize, Grace: o.Grace, Now: o.Now})
		if rep == nil {
			return nil, err
		}
		out := new(cache.GCReport)
		convert(rep, out)
		return out, err
	}
}

func convert(from, to any) {
	b, err := json.Marshal(from)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		panic(err)
	}
}
