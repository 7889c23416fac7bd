// Package par is aim's one deterministic parallel map-reduce: work is cut into fixed chunks,
// chunks are handed to goroutines as they free up, each chunk writes only what it owns, and
// results are combined in chunk order. The answer therefore depends on the chunk size (which
// fixes the summation order) and never on the number of workers or on scheduling. It sits
// below both the engine and the CPU backend (docs/design.md, sections 4 and 8).
//
// The chunk size is the caller's: it is the unit of the summation order, so it belongs to the
// computation (a token contraction takes chunks of thousands of samples, a posterior
// quadrature of 13 ms per sample chunks of 64) and is named where the computation is.
package par

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Chunks returns the number of chunks of size size that cover [0, n): ceil(n / size).
func Chunks(n, size int) int { return (n + size - 1) / size }

// Span returns chunk c of [0, n) cut into chunks of size size: [c size, min((c+1) size, n)).
func Span(c, n, size int) (lo, hi int) {
	lo = c * size
	return lo, min(lo+size, n)
}

// Workers returns w, or GOMAXPROCS when w <= 0: the number of goroutines callers ask for.
func Workers(w int) int {
	if w <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return w
}

// For runs body(s, c) for every chunk c in [0, nc) on up to Workers(workers) goroutines. Each
// goroutine calls state once, before its first chunk, for its private scratch s, and runs its
// chunks with it; which goroutine runs which chunk is unspecified, so a body must write only
// to outputs that chunk c owns. For returns the error of the lowest-numbered chunk that failed
// (state's errors count as chunk -1's), so the error too does not depend on scheduling; after a
// failure no new chunk starts. A panic in state or body is recovered and returned as an error.
func For[S any](workers, nc int, state func() (S, error), body func(s S, c int) error) error {
	if nc <= 0 {
		return nil
	}
	w := min(Workers(workers), nc)
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed = nc // lowest failed chunk, nc when none
		first  error
	)
	fail := func(c int, err error) {
		mu.Lock()
		if c < failed {
			failed, first = c, err
		}
		mu.Unlock()
		next.Store(int64(nc)) // stop handing out chunks
	}
	run := func() {
		c := -1
		defer func() {
			if r := recover(); r != nil {
				fail(c, fmt.Errorf("panic in chunk %d: %v", c, r))
			}
		}()
		s, err := state()
		if err != nil {
			fail(-1, err)
			return
		}
		for {
			c = int(next.Add(1) - 1)
			if c >= nc {
				return
			}
			if err := body(s, c); err != nil {
				fail(c, err)
				return
			}
		}
	}
	if w == 1 {
		run()
		return first
	}
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run()
		}()
	}
	wg.Wait()
	return first
}

// NoState is the state function of bodies that need no per-goroutine scratch.
func NoState() (struct{}, error) { return struct{}{}, nil }

// MapReduce computes r_c = mapc(s, c) for every chunk c in [0, nc) with For, then folds them in
// chunk order: acc = fold(fold(fold(init, r_0), r_1), ...). With a fixed chunk size the result
// is the same for any number of workers, bit for bit.
func MapReduce[S, R any](workers, nc int, state func() (S, error), mapc func(s S, c int) (R, error), init R, fold func(acc, r R) R) (R, error) {
	part := make([]R, max(nc, 0))
	err := For(workers, nc, state, func(s S, c int) error {
		r, err := mapc(s, c)
		part[c] = r
		return err
	})
	if err != nil {
		return init, err
	}
	acc := init
	for _, r := range part {
		acc = fold(acc, r)
	}
	return acc, nil
}
