package cores

import (
	"sync"
	"sync/atomic"
)

// Parallel calls fn(i) for every i in [0, n) on up to workers goroutines
// and returns the first error (the remaining calls are skipped).
func Parallel(n, workers int, fn func(i int) error) error {
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		for i := 0; i < n; i++ {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
		failed  atomic.Bool
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errOnce.Do(func() { first = err })
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// Ranges calls fn(lo, hi) for contiguous ranges covering [0, n), on up to
// workers goroutines, and returns the first error. A range holds at least
// minRange items (one range if n is smaller): work cheap per item, such as
// a lookup, is worth spreading only in long stretches. There are a few
// ranges per worker, so that one slow range does not leave the others
// idle.
func Ranges(n, workers, minRange int, fn func(lo, hi int) error) error {
	if n <= 0 {
		return nil
	}
	count := min(max(workers, 1)*4, max(n/max(minRange, 1), 1))
	size := (n + count - 1) / count
	count = (n + size - 1) / size
	return Parallel(count, workers, func(i int) error {
		return fn(i*size, min((i+1)*size, n))
	})
}
