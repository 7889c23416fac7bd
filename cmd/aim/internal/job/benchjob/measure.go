package benchjob

// The measurement of a target: the timed iterations of each algorithm, their summary, and the
// Dgemm rate beside them.

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/stream"
)

// sample is one timed iteration: its seconds and the time spent in each kind of operation.
type sample struct {
	seconds float64
	ops     OpTimes
}

// recorder marks the end of each iteration (the engine's Progress callback) with the host clock
// and the target's operation totals; samples are the differences between consecutive marks, so
// the first iteration (the warm-up) is not one of them.
type recorder struct {
	t   *benchTarget
	at  []time.Time
	ops []OpTimes
}

func (r *recorder) mark() {
	r.at = append(r.at, time.Now())
	r.ops = append(r.ops, r.t.times())
}

func (r *recorder) samples() []sample {
	var out []sample
	for i := 1; i < len(r.at); i++ {
		out = append(out, sample{seconds: r.at[i].Sub(r.at[i-1]).Seconds(), ops: r.ops[i].sub(r.ops[i-1])})
	}
	return out
}

// summary returns the median and the minimum seconds of the samples, and the operations of the
// median sample (the mean of the two middle ones for an even count), so that they add up to the
// median with the host's share.
func summary(s []sample) (median, least float64, ops OpTimes) {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b sample) int { return cmpFloat(a.seconds, b.seconds) })
	n := len(s)
	if n%2 == 1 {
		return s[n/2].seconds, s[0].seconds, s[n/2].ops
	}
	a, b := s[n/2-1], s[n/2]
	for k := range ops.Seconds {
		ops.Seconds[k] = (a.ops.Seconds[k] + b.ops.Seconds[k]) / 2
		ops.Calls[k] = (a.ops.Calls[k] + b.ops.Calls[k]) / 2
	}
	return (a.seconds + b.seconds) / 2, s[0].seconds, ops
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// iterate runs repeat + 1 iterations of algo (the first a warm-up) at precision prec on the
// target's group with its operation timers attached, and returns the repeat timed ones.
func (t *benchTarget) iterate(algo string, parts []*aim.Data, repeat int, prec device.Precision) ([]sample, error) {
	rec := &recorder{t: t}
	D := parts[0].P.D
	var done int
	err := t.timed(func() error {
		switch algo {
		case "amp":
			o := amp.DefaultOptions()
			o.MaxIter, o.Tol = repeat+1, math.SmallestNonzeroFloat64 // every iteration runs
			o.Precision = prec
			o.Progress = func(amp.Iteration) { rec.mark() }
			res, err := amp.RunGroup(t.group, parts, o)
			if err != nil {
				return fmt.Errorf("%s GAMP-RIE at D = %d: %w", t.name, D, err)
			}
			done = res.Iterations
		case "gd":
			o := gd.DefaultOptions()
			o.Steps = repeat + 1
			o.Precision = prec
			o.Progress = func() { rec.mark() }
			if _, err := gd.RunGroup(t.group, parts, o); err != nil {
				return fmt.Errorf("%s GD at D = %d: %w", t.name, D, err)
			}
			done = len(rec.at)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s := rec.samples(); done == repeat+1 && len(s) == repeat {
		return s, nil
	}
	return nil, fmt.Errorf("%s %s at D = %d stopped after %d of %d iterations", t.name, algo, D, done, repeat+1)
}

// measureGemm measures the target's square product rate at precision p on its lead,
// C = A B with n x n operands of normals (Gemm at fp64, device.GemmAt otherwise): one warm-up
// product then repeat timed ones (the GPU's events where it has them), their median, in
// GFLOP/s (2 n^3 per product). It runs before each row, so that a row's fraction of the rate is
// a ratio of two figures measured back to back on a machine whose load may change between
// rows. The fp64 rates are the target's Dgemm figures of the manifest.
func (t *benchTarget) measureGemm(p device.Precision, repeat int) (float64, error) {
	n := t.gemm
	dev := t.dev.Group.Lead()
	bufs, err := device.AllocAll(dev, n*n, n*n, n*n)
	if err != nil {
		return 0, fmt.Errorf("%s %s Gemm %d: %w", t.name, p, n, err)
	}
	defer device.FreeAll(dev, bufs...)
	for i, b := range bufs[:2] {
		if err := dev.GaussianFill(b, 7, stream.Data+uint64(i*n*n), 1); err != nil {
			return 0, fmt.Errorf("%s %s Gemm %d: %w", t.name, p, n, err)
		}
	}
	gemm := func() error { return device.GemmAt(dev, p, false, false, n, n, n, 1, bufs[0], bufs[1], 0, bufs[2]) }
	var secs []float64
	for i := 0; i <= repeat; i++ {
		s, err := t.timers[0].clock(gemm)
		if err != nil {
			return 0, fmt.Errorf("%s %s Gemm %d: %w", t.name, p, n, err)
		}
		if i > 0 {
			secs = append(secs, s)
		}
	}
	rate := 2 * float64(n) * float64(n) * float64(n) / median(secs) / 1e9
	if p == device.FP64 {
		t.dgemmRates = append(t.dgemmRates, rate)
		t.dgemmGFlops = median(t.dgemmRates)
		t.dgemmSeconds = 2 * float64(n) * float64(n) * float64(n) / t.dgemmGFlops / 1e9
	}
	return rate, nil
}

// median returns the median of v (the mean of the two middle values for an even count).
func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// run measures the target: for every case the data drawn once (timed), then for each
// algorithm and precision the fp64 Dgemm rate, the precision's own product rate (the same
// figure at fp64) and the iterations.
func (t *benchTarget) run(c *BenchConfig, bar job.Progress) ([]BenchRow, error) {
	var rows []BenchRow
	for _, bc := range t.cases {
		var parts []*aim.Data
		gen, err := hostTime(func() (err error) { parts, err = bc.plan.Generate(t.dev, bc.p); return err })
		if err != nil {
			return nil, fmt.Errorf("%s: data at D = %d: %w", t.name, bc.p.D, err)
		}
		for _, algo := range c.algos {
			for _, prec := range t.precs {
				row, err := t.measureRow(c, bc, parts, algo, prec, gen)
				if err != nil {
					aim.FreeGroup(t.dev.Group, parts)
					return nil, err
				}
				rows = append(rows, row)
				bar.Add(1)
			}
		}
		aim.FreeGroup(t.dev.Group, parts)
	}
	return rows, nil
}

// measureRow measures one row: the Dgemm rate, the rate of the product at prec (the same at
// fp64), and the timed iterations.
func (t *benchTarget) measureRow(c *BenchConfig, bc benchCase, parts []*aim.Data, algo string, prec device.Precision, gen float64) (BenchRow, error) {
	dgemm, err := t.measureGemm(device.FP64, c.Repeat)
	if err != nil {
		return BenchRow{}, err
	}
	gemm := dgemm
	if prec != device.FP64 {
		if gemm, err = t.measureGemm(prec, c.Repeat); err != nil {
			return BenchRow{}, err
		}
	}
	s, err := t.iterate(algo, parts, c.Repeat, prec)
	if err != nil {
		return BenchRow{}, err
	}
	med, least, ops := summary(s)
	tokens, chunk := "stored", 0
	if bc.plan.Streamed {
		tokens, chunk = "streamed", bc.plan.Chunk
	}
	f := benchFlops(algo, bc.p)
	gf := f / med / 1e9
	return BenchRow{Device: t.name, Algorithm: algo, Channel: bc.p.Channel.Kind.Name(), D: bc.p.D, N: bc.p.N(), T: bc.p.T(), Tokens: tokens, Chunk: chunk,
		Repeat: c.Repeat, SecondsMedian: med, SecondsMin: least, Generate: gen, Flops: f, GFlops: gf,
		DgemmGFlops: dgemm, Fraction: gf / dgemm, Precision: prec.String(), GemmGFlops: gemm, FractionGemm: gf / gemm,
		Ops: ops, Host: med - ops.Sum()}, nil
}
