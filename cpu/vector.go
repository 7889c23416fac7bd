package cpu

import (
	"fmt"

	"github.com/aimtheory/aim/device"
)

// Element-wise operations and reductions over whole buffers, in chunks of chunkElems.

// Scal computes x = alpha x over the whole buffer.
func (d *backend) Scal(x device.Buffer, alpha float64) error {
	const op = "cpu Scal"
	xs := data(x)
	n := len(xs)
	return d.forChunks(op, chunks(n, chunkElems), same(func(c int) {
		lo, hi := span(c, n, chunkElems)
		v := xs[lo:hi]
		for i := range v {
			v[i] *= alpha
		}
	}))
}

// Axpby computes y = a x + b y; x and y have the same length.
func (d *backend) Axpby(y device.Buffer, a float64, x device.Buffer, b float64) error {
	const op = "cpu Axpby"
	xs, ys := data(x), data(y)
	n := len(xs)
	return d.forChunks(op, chunks(n, chunkElems), same(func(c int) {
		lo, hi := span(c, n, chunkElems)
		xv, yv := xs[lo:hi], ys[lo:hi]
		for i := range yv {
			yv[i] = a*xv[i] + b*yv[i]
		}
	}))
}

// Dot returns sum_k x_k y_k; x and y have the same length. The sum is deterministic and
// independent of the worker count (see the package comment).
func (d *backend) Dot(x, y device.Buffer) (float64, error) {
	return d.reduce("cpu Dot", x, y, dot)
}

// SqDist returns sum_k (x_k - y_k)^2; x and y have the same length. Deterministic like
// Dot.
func (d *backend) SqDist(x, y device.Buffer) (float64, error) {
	return d.reduce("cpu SqDist", x, y, sqDist)
}

// reduce returns the sum over fixed-size chunks of f(x chunk, y chunk), added in chunk order.
func (d *backend) reduce(op string, x, y device.Buffer, f func(a, b []float64) float64) (float64, error) {
	xs, ys := data(x), data(y)
	n := len(xs)
	part := make([]float64, chunks(n, chunkElems))
	err := d.forChunks(op, len(part), same(func(c int) {
		lo, hi := span(c, n, chunkElems)
		part[c] = f(xs[lo:hi], ys[lo:hi])
	}))
	return sumChunks(part), err
}

// AddDiag adds v to the diagonal of each of the n stacked t x t matrices in x.
func (d *backend) AddDiag(x device.Buffer, n, t int, v float64) error {
	const op = "cpu AddDiag"
	xs := data(x)
	return d.forChunks(op, chunks(n, chunkSamples), same(func(c int) {
		lo, hi := span(c, n, chunkSamples)
		for mu := lo; mu < hi; mu++ {
			m := xs[mu*t*t : (mu+1)*t*t]
			for a := 0; a < t; a++ {
				m[a*t+a] += v
			}
		}
	}))
}

// SumDiag returns the sum of the diagonals of the n stacked t x t matrices in x
// (deterministic, independent of the worker count).
func (d *backend) SumDiag(x device.Buffer, n, t int) (float64, error) {
	const op = "cpu SumDiag"
	xs := data(x)
	part := make([]float64, chunks(n, chunkSamples))
	err := d.forChunks(op, len(part), same(func(c int) {
		lo, hi := span(c, n, chunkSamples)
		var s float64
		for mu := lo; mu < hi; mu++ {
			m := xs[mu*t*t : (mu+1)*t*t]
			for a := 0; a < t; a++ {
				s += m[a*t+a]
			}
		}
		part[c] = s
	}))
	return sumChunks(part), err
}

// MulPattern computes x_mu,k *= p_k for n stacked blocks of m values (p has m values).
func (d *backend) MulPattern(x, p device.Buffer, n, m int) error {
	const op = "cpu MulPattern"
	xs, ps := data(x), data(p)
	if m == 0 {
		return nil
	}
	ps = ps[:m]
	// Chunks of whole blocks, about chunkElems values each (no reduction: any chunking works).
	per := max(1, chunkElems/m)
	return d.forChunks(op, chunks(n, per), same(func(c int) {
		lo, hi := span(c, n, per)
		for mu := lo; mu < hi; mu++ {
			blk := xs[mu*m : (mu+1)*m]
			for k, pk := range ps {
				blk[k] *= pk
			}
		}
	}))
}

// GaussianFill sets x_k = scale * G(seed, offset + k) for the whole buffer, chunk c covering
// [lo, hi) with device.FillNormals(x[lo:hi], seed, offset+lo); FillNormals is split-invariant,
// so the values do not depend on the chunking.
func (d *backend) GaussianFill(x device.Buffer, seed, offset uint64, scale float64) error {
	const op = "cpu GaussianFill"
	xs := data(x)
	n := len(xs)
	return d.forChunks(op, chunks(n, chunkElems), same(func(c int) {
		lo, hi := span(c, n, chunkElems)
		v := xs[lo:hi]
		device.FillNormals(v, seed, offset+uint64(lo))
		if scale != 1 {
			for i := range v {
				v[i] *= scale
			}
		}
	}))
}

// GaussianFillAsync runs GaussianFill on a goroutine of its own (its chunks on the worker pool,
// beside the chunks of the operations that run meanwhile) and returns the wait for it.
func (d *backend) GaussianFillAsync(x device.Buffer, seed, offset uint64, scale float64) (func() error, error) {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("cpu GaussianFillAsync: panic: %v", r)
			}
		}()
		done <- d.GaussianFill(x, seed, offset, scale)
	}()
	return func() error { return <-done }, nil
}

// dot returns sum_i x_i y_i with four accumulators (len(y) >= len(x)).
func dot(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// sqDist returns sum_i (x_i - y_i)^2 with four accumulators (len(y) >= len(x)).
func sqDist(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		d0, d1, d2, d3 := x[i]-y[i], x[i+1]-y[i+1], x[i+2]-y[i+2], x[i+3]-y[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(x); i++ {
		e := x[i] - y[i]
		s0 += e * e
	}
	return (s0 + s1) + (s2 + s3)
}
