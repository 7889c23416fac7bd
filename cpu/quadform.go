package cpu

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/device"
)

var _ device.QuadFormSummer = (*backend)(nil)

// QuadFormSum computes the d x d matrix out = alpha sum_mu X_mu^T C_mu X_mu for n samples:
// C is n x t x t with each C_mu symmetric, X is n x t x d, and scratch (at least n t d values)
// is overwritten. It is the back-projection of GAMP-RIE, whose result is symmetric.
//
// With a native library it exploits that symmetry: each C_mu = sum_k s_k u_k u_k^T (its
// eigendecomposition, closed form for t = 2), so X_mu^T C_mu X_mu = sum_k s_k r_k r_k^T with
// r_k = X_mu^T u_k. The rows sqrt|s_k| r_k^T go to the top of scratch for s_k > 0 and to its
// bottom for s_k < 0 (at positions fixed by per-chunk counts, so the result does not depend on
// the worker count), and out = alpha (P^T P - Q^T Q) is two dsyrk updates of the upper
// triangle, mirrored: n t d^2 multiply-adds instead of the 2 n t d^2 of a general product, and
// an exactly symmetric result. On the gonum path it is TokenMix then Gemm, the product
// X^T (C X). out does not overlap c, x or scratch, nor scratch c or x.
func (d *backend) QuadFormSum(out, c, x, scratch device.Buffer, n, t, dd int, alpha float64) error {
	const op = "cpu QuadFormSum"
	per := tokenChunk(t, dd)
	outs, cs, xs, ss := data(out), data(c), data(x), data(scratch)
	l := d.native()
	if l == nil {
		if err := d.TokenMix(scratch, c, x, n, t, dd); err != nil {
			return err
		}
		return d.Gemm(true, false, dd, dd, n*t, alpha, x, scratch, 0, out)
	}
	if dd == 0 {
		return nil
	}
	outs = outs[:dd*dd]
	nc := chunks(n, per)
	d.scratchMu.Lock()
	defer d.scratchMu.Unlock()
	if cap(d.qfCounts) < 2*nc {
		d.qfCounts = make([]int, 2*nc)
	}
	pos, neg := d.qfCounts[:nc], d.qfCounts[nc:2*nc]
	// Pass 1: the inertia of every C_mu, counted per chunk.
	var bad error
	if err := d.forChunks(op, nc, func() func(int) {
		e := newSymEig(t)
		return func(ch int) {
			lo, hi := span(ch, n, per)
			np, nn := 0, 0
			for mu := lo; mu < hi; mu++ {
				e.decompose(cs[mu*t*t : (mu+1)*t*t])
				for _, s := range e.vals {
					switch {
					case s > 0:
						np++
					case s < 0:
						nn++
					case s != 0:
						panic(fmt.Sprintf("sample %d: C has a NaN eigenvalue", mu))
					}
				}
			}
			pos[ch], neg[ch] = np, nn
		}
	}); err != nil {
		bad = err
	}
	if bad != nil {
		for i := range outs {
			outs[i] = math.NaN()
		}
		return nil // NaN in C gives NaN out, as the product would
	}
	// Row offsets: positive rows from the top, negative rows from the bottom of scratch.
	np, nn := 0, 0
	for ch := range nc {
		pos[ch], np = np, np+pos[ch]
		neg[ch], nn = nn, nn+neg[ch]
	}
	rows := n * t
	// Pass 2: the scaled rows sqrt|s_k| u_k^T X_mu.
	if err := d.forChunks(op, nc, func() func(int) {
		e := newSymEig(t)
		return func(ch int) {
			lo, hi := span(ch, n, per)
			pi, qi := pos[ch], neg[ch]
			for mu := lo; mu < hi; mu++ {
				e.decompose(cs[mu*t*t : (mu+1)*t*t])
				xm := xs[mu*t*dd : (mu+1)*t*dd]
				for k, s := range e.vals {
					var dst []float64
					switch {
					case s > 0:
						dst = ss[pi*dd : (pi+1)*dd]
						pi++
					case s < 0:
						r := rows - 1 - qi
						dst = ss[r*dd : (r+1)*dd]
						qi++
					default:
						continue
					}
					combineRows(dst, xm, e.vecs[k*t:(k+1)*t], math.Sqrt(math.Abs(s)), t, dd)
				}
			}
		}
	}); err != nil {
		return err
	}
	p, q := ss[:np*dd], ss[(rows-nn)*dd:rows*dd]
	if err := l.Dsyrk(true, true, dd, np, alpha, p, dd, 0, outs, dd); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if nn > 0 {
		if err := l.Dsyrk(true, true, dd, nn, -alpha, q, dd, 1, outs, dd); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return d.mirrorUpper(op, outs, dd)
}

// combineRows sets dst = scale sum_b u_b X_b for the t rows X_b (each d long) of x.
func combineRows(dst, x, u []float64, scale float64, t, d int) {
	dst = dst[:d]
	switch t {
	case 1:
		c0, x0 := scale*u[0], x[:d]
		for i := range dst {
			dst[i] = c0 * x0[i]
		}
		return
	case 2:
		c0, c1 := scale*u[0], scale*u[1]
		x0, x1 := x[:d], x[d:2*d]
		for i := range dst {
			dst[i] = c0*x0[i] + c1*x1[i]
		}
		return
	}
	c0, x0 := scale*u[0], x[:d]
	for i := range dst {
		dst[i] = c0 * x0[i]
	}
	for b := 1; b < t; b++ {
		cb, xb := scale*u[b], x[b*d:(b+1)*d]
		for i := range dst {
			dst[i] += cb * xb[i]
		}
	}
}

// symEig is the eigendecomposition of small symmetric t x t matrices, with its scratch: vals[k]
// and the unit vector vecs[k*t:(k+1)*t] are the k-th eigenpair (in no particular order).
type symEig struct {
	t          int
	vals, vecs []float64
	a          []float64 // Jacobi's working copy (t > 2)
}

func newSymEig(t int) *symEig {
	return &symEig{t: t, vals: make([]float64, t), vecs: make([]float64, t*t), a: make([]float64, t*t)}
}

// decompose computes the eigenpairs of the symmetric t x t matrix c (its upper triangle is
// read): in closed form for t <= 2, by cyclic Jacobi rotations for larger t.
func (e *symEig) decompose(c []float64) {
	t := e.t
	switch t {
	case 1:
		e.vals[0], e.vecs[0] = c[0], 1
		return
	case 2:
		a, b, cc := c[0], c[1], c[3]
		if b == 0 {
			e.vals[0], e.vals[1] = a, cc
			e.vecs[0], e.vecs[1], e.vecs[2], e.vecs[3] = 1, 0, 0, 1
			return
		}
		h, m := (a-cc)/2, (a+cc)/2
		r := math.Hypot(h, b)
		// The eigenvector of m + r, in the form without cancellation.
		v0, v1 := h+r, b
		if h < 0 {
			v0, v1 = b, r-h
		}
		nv := math.Hypot(v0, v1)
		v0, v1 = v0/nv, v1/nv
		e.vals[0], e.vals[1] = m+r, m-r
		e.vecs[0], e.vecs[1], e.vecs[2], e.vecs[3] = v0, v1, -v1, v0
		return
	}
	a, v := e.a, e.vecs
	for i := 0; i < t; i++ {
		for j := 0; j < t; j++ {
			a[i*t+j] = c[min(i, j)*t+max(i, j)]
			v[i*t+j] = 0
		}
		v[i*t+i] = 1
	}
	// Cyclic Jacobi: a <- J^T a J; the rows of v accumulate the eigenvectors.
	for sweep := 0; sweep < 64; sweep++ {
		var off, diag float64
		for i := 0; i < t; i++ {
			diag += a[i*t+i] * a[i*t+i]
			for j := i + 1; j < t; j++ {
				off += a[i*t+j] * a[i*t+j]
			}
		}
		if !(off > 1e-32*diag) {
			break
		}
		for p := 0; p < t; p++ {
			for q := p + 1; q < t; q++ {
				apq := a[p*t+q]
				if apq == 0 {
					continue
				}
				theta := (a[q*t+q] - a[p*t+p]) / (2 * apq)
				tn := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				cs := 1 / math.Sqrt(tn*tn+1)
				sn := tn * cs
				for k := 0; k < t; k++ { // columns p, q
					akp, akq := a[k*t+p], a[k*t+q]
					a[k*t+p], a[k*t+q] = cs*akp-sn*akq, sn*akp+cs*akq
				}
				for k := 0; k < t; k++ { // rows p, q
					apk, aqk := a[p*t+k], a[q*t+k]
					a[p*t+k], a[q*t+k] = cs*apk-sn*aqk, sn*apk+cs*aqk
				}
				for k := 0; k < t; k++ { // eigenvectors are the rows of v
					vpk, vqk := v[p*t+k], v[q*t+k]
					v[p*t+k], v[q*t+k] = cs*vpk-sn*vqk, sn*vpk+cs*vqk
				}
			}
		}
	}
	for k := 0; k < t; k++ {
		e.vals[k] = a[k*t+k]
	}
}
