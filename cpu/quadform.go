package cpu

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/internal/par"
)

var _ device.QuadFormSummer = (*backend)(nil)

// qfGroups is the most sample groups of the native QuadFormSum, each summed into its own d x d
// matrix: the unit of its parallel work and of its summation order.
const qfGroups = 8

// QuadFormSum computes the d x d matrix out = alpha sum_mu X_mu^T C_mu X_mu for n samples:
// C is n x t x t with each C_mu symmetric, X is n x t x d, and scratch (at least n t d values)
// may be overwritten (the gonum path uses it). It is the back-projection of GAMP-RIE, whose
// result is symmetric.
//
// With a native library it exploits that symmetry: each C_mu = sum_k s_k u_k u_k^T (its
// eigendecomposition, closed form for t = 2), so X_mu^T C_mu X_mu = sum_k s_k r_k r_k^T with
// r_k = X_mu^T u_k, and the sum is alpha (P^T P - Q^T Q) over the rows sqrt|s_k| r_k^T of the
// positive (P) and negative (Q) s_k: dsyrk updates of the upper triangle, mirrored, n t d^2 / 2
// multiply-adds instead of the n t d^2 of the general product X^T (C X), and an exactly
// symmetric result. The samples are cut into chunks of blockRows(d)/t samples and the chunks
// into at most qfGroups groups of consecutive chunks (fixed by n, t and d alone). A group's
// chunks are taken in order by one goroutine: a chunk's rows are written to the goroutine's
// own buffer of one chunk (P from the top, Q from the bottom), which stays in its cache, and
// added at once by two one-thread dsyrk into the group's matrix; the groups' matrices are then
// added in group order. The result therefore does not depend on
// the worker count. On the gonum path it is TokenMix then Gemm, the product X^T (C X), with
// its upper triangle mirrored: exactly symmetric too. out does not overlap c, x or scratch,
// nor scratch c or x.
func (d *backend) QuadFormSum(out, c, x, scratch device.Buffer, n, t, dd int, alpha float64) error {
	const op = "cpu QuadFormSum"
	outs, cs, xs := data(out), data(c), data(x)
	if dd == 0 {
		return nil
	}
	if d.blas.lib == nil {
		if err := d.TokenMix(scratch, c, x, n, t, dd); err != nil {
			return err
		}
		if err := d.Gemm(true, false, dd, dd, n*t, alpha, x, scratch, 0, out); err != nil {
			return err
		}
		return d.mirrorUpper(op, outs[:dd*dd], dd)
	}
	outs = outs[:dd*dd]
	per, nc, ng, workers := d.quadFormLayout(n, t, dd)
	d.scratchMu.Lock() // before the library's hold, as EighSym and SpectralCompose take them
	defer d.scratchMu.Unlock()
	l, done := d.serial()
	defer done()
	// Group 0 sums into out, group g > 0 into acc[(g-1) d^2 : g d^2]; goroutine w forms a
	// chunk's rows in rows[w len : (w+1) len], len = min(per, n) t d, which stays in its cache.
	d.qfAcc = grow(d.qfAcc, (ng-1)*dd*dd)
	acc := d.qfAcc
	chunkLen := min(per, n) * t * dd
	d.qfRows = grow(d.qfRows, workers*chunkLen)
	var started atomic.Int32
	state := func() (qfState, error) {
		w := int(started.Add(1) - 1)
		return qfState{newSymEig(t), d.qfRows[w*chunkLen : (w+1)*chunkLen]}, nil
	}
	err := par.For(workers, ng, state, func(st qfState, g int) error {
		e := st.eig
		m := outs
		if g > 0 {
			m = acc[(g-1)*dd*dd : g*dd*dd]
		}
		beta := 0.0 // the first update of the group's matrix overwrites it
		update := func(rows []float64, k int, a float64) error {
			if k == 0 {
				return nil
			}
			if err := l.Dsyrk(true, true, dd, k, a, rows, dd, beta, m, dd); err != nil {
				return err
			}
			beta = 1
			return nil
		}
		for ch := g * nc / ng; ch < (g+1)*nc/ng; ch++ {
			lo, hi := span(ch, n, per)
			nr := (hi - lo) * t
			part := st.rows[:nr*dd]
			pi, qi := 0, 0
			for mu := lo; mu < hi; mu++ {
				e.decompose(cs[mu*t*t : (mu+1)*t*t])
				xm := xs[mu*t*dd : (mu+1)*t*dd]
				for k, s := range e.vals {
					var dst []float64
					switch {
					case s > 0:
						dst = part[pi*dd : (pi+1)*dd]
						pi++
					case s < 0:
						r := nr - 1 - qi
						dst = part[r*dd : (r+1)*dd]
						qi++
					case s == 0:
						continue
					default:
						return errNaNC
					}
					combineRows(dst, xm, e.vecs[k*t:(k+1)*t], math.Sqrt(math.Abs(s)), t, dd)
				}
			}
			if err := update(part[:pi*dd], pi, alpha); err != nil {
				return err
			}
			if err := update(part[(nr-qi)*dd:nr*dd], qi, -alpha); err != nil {
				return err
			}
		}
		if beta == 0 { // no nonzero eigenvalue in the group
			for i := 0; i < dd; i++ {
				clear(m[i*dd+i : (i+1)*dd])
			}
		}
		return nil
	})
	if errors.Is(err, errNaNC) {
		for i := range outs {
			outs[i] = math.NaN()
		}
		return nil // NaN in C gives NaN out, as the product would
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if ng > 1 {
		// out += the groups' matrices in group order, upper triangles, rows in fixed chunks.
		rowsPer := max(1, chunkElems/dd)
		if err := d.forChunks(op, chunks(dd, rowsPer), same(func(c int) {
			lo, hi := span(c, dd, rowsPer)
			for i := lo; i < hi; i++ {
				row := outs[i*dd+i : (i+1)*dd]
				for g := 1; g < ng; g++ {
					src := acc[(g-1)*dd*dd+i*dd+i : (g-1)*dd*dd+(i+1)*dd]
					for j, v := range src {
						row[j] += v
					}
				}
			}
		})); err != nil {
			return err
		}
	}
	return d.mirrorUpper(op, outs, dd)
}

// quadFormLayout returns how QuadFormSum cuts n samples of t x dd tokens on the native
// library: per samples a chunk (a block of rows, blockRows), nc chunks, ng groups of
// consecutive chunks, and the goroutines that take the groups (the library's threads where
// the device splits its products, at most one per group).
func (d *backend) quadFormLayout(n, t, dd int) (per, nc, ng, workers int) {
	per = max(1, blockRows(dd)/t)
	nc = chunks(n, per)
	ng = max(1, min(qfGroups, nc))
	workers = 1
	if d.splits() {
		workers = min(par.Workers(d.blasWorkers()), ng)
	}
	return per, nc, ng, workers
}

// qfState is a QuadFormSum goroutine's scratch: the small eigendecompositions and the rows of
// a chunk.
type qfState struct {
	eig  *symEig
	rows []float64
}

// errNaNC reports a NaN eigenvalue of some C_mu (QuadFormSum then returns NaN).
var errNaNC = errors.New("C has a NaN eigenvalue")

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
