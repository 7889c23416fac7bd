package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aimtheory/aim/internal/par"
)

// ErrInterrupted is the error of a job whose context (Env.Context) was cancelled while it ran:
// the command's SIGINT or SIGTERM. The job wrote the rows it had finished, in grid order, and
// a manifest with "complete": false and the grid points it did not finish under "missing"; the
// command exits with status 130.
var ErrInterrupted = errors.New("interrupted")

// Missing is a grid point a job did not finish: its coordinates by CSV column (rho, alpha,
// seed, ...), as the manifest lists it under "missing".
type Missing map[string]any

// Interrupted returns the error of a job stopped after done of total units (what: "points",
// "runs").
func Interrupted(done, total int, what string) error {
	return fmt.Errorf("%w: wrote the %d of %d %s that finished; the manifest lists the %d missing",
		ErrInterrupted, done, total, what, total-done)
}

// Ctx returns the job's Ctx: Env.Context, or one never cancelled.
func (e Env) Ctx() context.Context {
	if e.Context == nil {
		return context.Background()
	}
	return e.Context
}

// ForPoints computes solve(i) for every point i in [0, n) on up to workers goroutines
// (par.For) and returns the results in point order, with done[i] true for each point computed;
// bar counts the points as they finish. When ctx is cancelled no point starts any more and
// ForPoints returns at once with the points finished so far: those in flight are abandoned
// (their goroutines run on to the end of their point and their results are dropped). err is
// solve's panic, recovered; an interruption is not an error, the caller reads it from done.
// A point's result depends only on i, never on the worker count or on when ctx is cancelled.
func ForPoints[R any](ctx context.Context, workers, n int, bar Progress, solve func(i int) R) (res []R, done []bool, err error) {
	res, done = make([]R, n), make([]bool, n)
	var (
		mu      sync.Mutex
		stopped bool // set once forPoints returns: later results are dropped
	)
	finished := make(chan error, 1)
	go func() {
		finished <- par.For(workers, n, par.NoState, func(_ struct{}, i int) error {
			if ctx.Err() != nil {
				return nil
			}
			r := solve(i)
			mu.Lock()
			defer mu.Unlock()
			if !stopped {
				res[i], done[i] = r, true
				bar.Add(1)
			}
			return nil
		})
	}()
	select {
	case err = <-finished:
	case <-ctx.Done():
	}
	mu.Lock()
	stopped = true
	mu.Unlock()
	return res, done, err
}
