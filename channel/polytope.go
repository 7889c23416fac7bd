package channel

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"
)

// Gaussian probabilities of polytopes, for the hardmax channel at any T (docs/theory/aim.md 2.3: the
// likelihood of a hardmax output is the probability that a Gaussian vector satisfies T(T-1)
// linear inequalities).
//
// For xi ~ N(0, I_M) and K constraints a_k . xi >= c_k (A K x M), Polytope estimates
//
//	Z = P(A xi >= c)   and   m = E[xi | A xi >= c]
//
// by Genz's separation of variables. The constraints are ordered (the least probable first, by
// their one-dimensional probabilities Phi(-c_k/|a_k|)), and a Householder QR of the ordered A^T
// rotates xi = Q eta so that A Q = L is lower trapezoidal: constraint k involves eta_0 ..
// eta_{last(k)} only. Then
//
//	Z = int prod_j [Phi(hi_j) - Phi(lo_j)] dw,   eta_j = Phi^-1(Phi(lo_j) + w_j (Phi(hi_j) - Phi(lo_j))),
//
// where [lo_j, hi_j] is the interval that the constraints whose last variable is j leave to
// eta_j given eta_0 .. eta_{j-1}, and w is uniform on [0, 1)^(M-1) (the last variable needs no
// point: its conditional mean (phi(lo) - phi(hi))/(Phi(hi) - Phi(lo)) enters m exactly). The
// integral over w is a randomised quasi-Monte Carlo rule (Lattice): R independent random shifts
// of an n-point Richtmyer lattice with the tent (baker's) transform; the R shift means give the
// estimate and its standard error. All products are kept in logarithms, so Z may be far below
// the smallest float64 (the channel's tails) and m keeps full relative accuracy there.

// Lattice is a randomised quasi-Monte Carlo rule on [0, 1)^dim: point i of shift r is
// w_j = tent(frac(i alpha_j + s_rj)), alpha_j = frac(sqrt(p_j)) for the j-th prime p_j (a
// Richtmyer lattice) and tent(x) = |2x - 1|. The shifts s_rj are fixed by the seed (SplitMix64),
// so that a rule is the same on every run and on every device.
type Lattice struct {
	Dim, N, R int
	alpha     []float64
	shift     []float64 // R x Dim
}

// NewLattice returns the rule of n >= 1 points and r >= 2 shifts in dim >= 0 dimensions; the
// shifts come from seed.
func NewLattice(dim, n, r int, seed uint64) (*Lattice, error) {
	switch {
	case dim < 0 || dim > len(latticePrimes):
		return nil, fmt.Errorf("lattice: dimension %d, need 0 to %d", dim, len(latticePrimes))
	case n < 1:
		return nil, fmt.Errorf("lattice: %d points, need at least 1", n)
	case r < 2:
		return nil, fmt.Errorf("lattice: %d shifts, need at least 2 for an error estimate", r)
	}
	l := &Lattice{Dim: dim, N: n, R: r, alpha: make([]float64, dim), shift: make([]float64, r*dim)}
	for j := range l.alpha {
		s := math.Sqrt(float64(latticePrimes[j]))
		l.alpha[j] = s - math.Floor(s)
	}
	l.Reshift(seed)
	return l, nil
}

// Reshift replaces the rule's shifts by those of seed (SplitMix64: shift value k is the k-th
// output of the generator started at seed, times 2^-53), as NewLattice draws them. Integrals
// nested inside another rule reshift per outer point, so that the inner rules' errors are
// independent from point to point and average out instead of adding up.
func (l *Lattice) Reshift(seed uint64) {
	x := seed
	for i := range l.shift {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		l.shift[i] = float64(z>>11) * 0x1p-53
	}
}

// latticePrimes are the primes whose square roots generate the lattice, one per dimension.
var latticePrimes = []int{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 101, 103, 107, 109, 113}

// Point writes point i of shift r (0 <= r < R) into w (Dim values in [0, 1]).
func (l *Lattice) Point(w []float64, r, i int) { l.point(w, r, i) }

// point writes point i of shift r into w.
func (l *Lattice) point(w []float64, r, i int) {
	for j := range w {
		x := float64(i)*l.alpha[j] + l.shift[r*l.Dim+j]
		x -= math.Floor(x)
		w[j] = math.Abs(2*x - 1)
	}
}

// Polytope is the set of K linear constraints a_k . xi >= c_k on xi in R^M (A is K x M,
// row-major), with the work space of its estimates. It is not safe for concurrent use.
type Polytope struct {
	K, M int
	a    []float64 // K x M
	// Per evaluation: the order of the constraints, L = A_ordered Q (K x M), Q (M x M), the
	// last variable of each ordered constraint, and the thresholds in that order.
	order []int
	l, q  []float64
	last  []int
	c     []float64
	w     []float64 // a lattice point
	eta   []float64
	// Reused by every estimate, so that one allocates nothing once the sizes are known.
	shifts shiftEstimator // m in eta coordinates
	v      []float64      // M values: a reflection
	score  []float64      // K values: the ordering of the constraints
	hh     []float64      // Householder work (M x K copy of the ordered A^T)
}

// NewPolytope returns the constraints A xi >= c of xi in R^M, A K x M row-major with no zero
// row; A is copied.
func NewPolytope(A []float64, K, M int) (*Polytope, error) {
	if K < 1 || M < 1 || len(A) != K*M {
		return nil, fmt.Errorf("polytope: A has %d values for K = %d constraints of M = %d variables", len(A), K, M)
	}
	for k := 0; k < K; k++ {
		if norm(A[k*M:(k+1)*M]) == 0 {
			return nil, fmt.Errorf("polytope: constraint %d is zero", k)
		}
	}
	return &Polytope{K: K, M: M, a: append([]float64(nil), A...), order: make([]int, K),
		l: make([]float64, K*M), q: make([]float64, M*M), last: make([]int, K), c: make([]float64, K),
		w: make([]float64, M), eta: make([]float64, M), hh: make([]float64, M*K),
		v: make([]float64, M), score: make([]float64, K)}, nil
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// Estimate is a Polytope's estimate of Z = P(A xi >= c) and m = E[xi | A xi >= c] by a Lattice.
type Estimate struct {
	LogZ    float64 // log Z
	ErrLogZ float64 // the standard error of log Z over the shifts (about the relative error of Z)
	ErrM    float64 // the largest standard error of a coordinate of m over the shifts
	// VarM is the sum over the coordinates of m of their squared standard errors: |m|^2 - VarM
	// estimates |E[xi | A xi >= c]|^2 without the bias Var that |m|^2 carries.
	VarM   float64
	Points int // lattice points per shift used
}

// Moments estimates Z and m (written into m, M values) for thresholds c (K values) with rule
// (of dimension M - 1 or more). With tol > 0 it starts from 64 points per shift (fewer when the
// rule has fewer) and doubles them, up to rule.N, until the reported errors are below tol
// (ErrLogZ <= tol and ErrM <= tol max(1, |m|_inf)); the lattice is extensible, so the points of
// a smaller count are the first points of a larger one. With tol = 0 it takes rule.N points.
// Z = 0 (every point outside, LogZ = -Inf) leaves m NaN.
func (p *Polytope) Moments(m, c []float64, rule *Lattice, tol float64) Estimate {
	p.prepare(c)
	return p.shifts.moments(m, rule, tol, p.accumulate, p.rotate)
}

// shiftEstimator turns a lattice rule's weighted points into an Estimate: per shift the sums
// of the weights and of the weighted points, then the mean over the shifts and its standard
// error. Polytope and NoisySoftmaxT share it.
type shiftEstimator struct {
	acc   []shiftSum
	ratio [][]float64 // per shift: its m (nil when the shift saw no point)
	mean  []float64   // the combined m in the accumulated coordinates
}

// moments sizes the sums for rule.R shifts of dim-long points (dim = len(m)), then adds points
// [i0, i1) of each shift r with accumulate until the errors meet tol (the doubling of
// Polytope.Moments) and writes m, mapped coordinate by coordinate by rotate (nil: the
// identity).
func (e *shiftEstimator) moments(m []float64, rule *Lattice, tol float64, accumulate func(s *shiftSum, rule *Lattice, r, i0, i1 int), rotate func(eta []float64, j int) float64) Estimate {
	M := len(m)
	for len(e.acc) < rule.R {
		e.acc = append(e.acc, shiftSum{sm: make([]float64, M)})
		e.ratio = append(e.ratio, make([]float64, M))
	}
	if len(e.mean) != M {
		e.mean = make([]float64, M)
	}
	acc := e.acc[:rule.R]
	for r := range acc {
		acc[r].top, acc[r].sw = math.Inf(-1), 0
		for j := range acc[r].sm {
			acc[r].sm[j] = 0
		}
	}
	n := rule.N
	if tol > 0 {
		n = min(64, rule.N)
	}
	done := 0
	for {
		for r := range acc {
			accumulate(&acc[r], rule, r, done, n)
		}
		done = n
		est := e.combine(m, acc, n, rotate)
		if n >= rule.N || (est.ErrLogZ <= tol && est.ErrM <= tol*math.Max(1, maxAbs(m))) || math.IsInf(est.LogZ, -1) {
			est.Points = n
			return est
		}
		n = min(2*n, rule.N)
	}
}

func maxAbs(v []float64) float64 {
	var x float64
	for _, e := range v {
		x = math.Max(x, math.Abs(e))
	}
	return x
}

// shiftSum is one shift's running sums: the points' weights exp(lw) as top + log(sw), and sm
// the weighted sum of eta, both relative to exp(top), rescaled as the largest weight moves.
type shiftSum struct {
	top, sw float64
	sm      []float64
}

// add adds a point of weight exp(lw) at eta.
func (s *shiftSum) add(lw float64, eta []float64) {
	if lw > s.top {
		f := math.Exp(s.top - lw)
		s.sw *= f
		for j := range s.sm {
			s.sm[j] *= f
		}
		s.top = lw
	}
	e := math.Exp(lw - s.top)
	s.sw += e
	for j := range s.sm {
		s.sm[j] += e * eta[j]
	}
}

// accumulate adds points [i0, i1) of shift r.
func (p *Polytope) accumulate(s *shiftSum, rule *Lattice, r, i0, i1 int) {
	w := p.w[:max(p.M-1, 0)]
	for i := i0; i < i1; i++ {
		rule.point(w, r, i)
		lw, ok := p.sample(w)
		if !ok {
			continue
		}
		s.add(lw, p.eta)
	}
}

// combine turns the shifts' sums over n points each into the estimate, writing m: Z is the
// mean of the shifts' Z (in logarithms), m the Z-weighted mean of the shifts' ratios, and the
// errors the standard errors over the shifts, coordinate by coordinate after rotate.
func (e *shiftEstimator) combine(m []float64, acc []shiftSum, n int, rotate func(eta []float64, j int) float64) Estimate {
	M, R := len(m), len(acc)
	if rotate == nil {
		rotate = func(eta []float64, j int) float64 { return eta[j] }
	}
	top := math.Inf(-1)
	for _, s := range acc {
		if s.sw > 0 {
			top = math.Max(top, s.top+math.Log(s.sw/float64(n)))
		}
	}
	if math.IsInf(top, -1) {
		for j := range m {
			m[j] = math.NaN()
		}
		return Estimate{LogZ: math.Inf(-1), ErrLogZ: math.Inf(1), ErrM: math.Inf(1)}
	}
	var sz, sz2 float64
	eta := e.mean
	for j := range eta {
		eta[j] = 0
	}
	ratio := e.ratio[:R]
	for r, s := range acc {
		if s.sw == 0 {
			ratio[r][0] = math.NaN() // no point of this shift inside
			continue
		}
		z := math.Exp(s.top + math.Log(s.sw/float64(n)) - top)
		sz += z
		sz2 += z * z
		for j := range eta {
			ratio[r][j] = s.sm[j] / s.sw
			eta[j] += z * ratio[r][j]
		}
	}
	for j := range eta {
		eta[j] /= sz
	}
	meanZ := sz / float64(R)
	varZ := (sz2/float64(R) - meanZ*meanZ) * float64(R) / float64(R-1)
	est := Estimate{LogZ: top + math.Log(meanZ), ErrLogZ: math.Sqrt(math.Max(varZ, 0)/float64(R)) / meanZ}
	// The standard error of each coordinate of m from the spread of the shifts' ratios.
	for j := 0; j < M; j++ {
		var s, s2 float64
		for r := range ratio {
			x := math.NaN()
			if !math.IsNaN(ratio[r][0]) {
				x = rotate(ratio[r], j)
			}
			s += x
			s2 += x * x
		}
		v := (s2 - s*s/float64(R)) / float64(R-1)
		est.ErrM = math.Max(est.ErrM, math.Sqrt(math.Max(v, 0)/float64(R)))
		est.VarM += math.Max(v, 0) / float64(R)
		if math.IsNaN(v) {
			est.ErrM = math.Inf(1)
		}
	}
	for j := 0; j < M; j++ {
		m[j] = rotate(eta, j)
	}
	return est
}

// rotate returns (Q eta)_j, the j-th coordinate of xi for eta.
func (p *Polytope) rotate(eta []float64, j int) float64 {
	M := p.M
	var s float64
	for i := 0; i < M; i++ {
		s += p.q[j*M+i] * eta[i]
	}
	return s
}

// prepare orders the constraints for c (the least probable first) and computes L, Q and the
// last variables.
func (p *Polytope) prepare(c []float64) {
	K, M := p.K, p.M
	score := p.score
	for k := 0; k < K; k++ {
		p.order[k] = k
		score[k] = c[k] / norm(p.a[k*M:(k+1)*M]) // larger: less probable
	}
	slices.SortStableFunc(p.order, func(i, j int) int { return cmp.Compare(score[j], score[i]) })
	// hh = A_ordered^T, M x K; Householder QR: hh = Q R.
	h := p.hh
	for k, o := range p.order {
		p.c[k] = c[o]
		for j := 0; j < M; j++ {
			h[j*K+k] = p.a[o*M+j]
		}
	}
	for i := range p.q {
		p.q[i] = 0
	}
	for j := 0; j < M; j++ {
		p.q[j*M+j] = 1
	}
	v := p.v
	for col := 0; col < min(M, K); col++ {
		// The reflection that zeroes h[col+1:, col].
		var s float64
		for i := col; i < M; i++ {
			s += h[i*K+col] * h[i*K+col]
		}
		s = math.Sqrt(s)
		if s == 0 {
			continue
		}
		alpha := -math.Copysign(s, h[col*K+col])
		for i := range v {
			v[i] = 0
		}
		for i := col; i < M; i++ {
			v[i] = h[i*K+col]
		}
		v[col] -= alpha
		vv := 0.0
		for i := col; i < M; i++ {
			vv += v[i] * v[i]
		}
		if vv == 0 {
			continue
		}
		// h = (I - 2 v v^T / vv) h, Q = Q (I - 2 v v^T / vv).
		for k := 0; k < K; k++ {
			var d float64
			for i := col; i < M; i++ {
				d += v[i] * h[i*K+k]
			}
			d *= 2 / vv
			for i := col; i < M; i++ {
				h[i*K+k] -= d * v[i]
			}
		}
		for r := 0; r < M; r++ {
			var d float64
			for i := col; i < M; i++ {
				d += p.q[r*M+i] * v[i]
			}
			d *= 2 / vv
			for i := col; i < M; i++ {
				p.q[r*M+i] -= d * v[i]
			}
		}
	}
	// L = R^T (K x M): constraint k's coefficients on eta; its last variable is the last
	// coefficient that is not negligible against the constraint's norm.
	for k := 0; k < K; k++ {
		nk := 0.0
		for j := 0; j < M; j++ {
			x := h[j*K+k]
			if j > k {
				x = 0 // below the diagonal of R: zero up to rounding
			}
			p.l[k*M+j] = x
			nk = math.Max(nk, math.Abs(x))
		}
		p.last[k] = 0
		for j := M - 1; j >= 0; j-- {
			if math.Abs(p.l[k*M+j]) > 1e-12*nk {
				p.last[k] = j
				break
			}
		}
	}
}

// sample draws eta along the lattice point w (M - 1 values) and returns the log of the product
// of the intervals' probabilities, or false when an interval is empty. The last coordinate of
// eta is its conditional mean.
func (p *Polytope) sample(w []float64) (float64, bool) {
	K, M := p.K, p.M
	var lw float64
	for j := 0; j < M; j++ {
		lo, hi := math.Inf(-1), math.Inf(1)
		for k := 0; k < K; k++ {
			if p.last[k] != j {
				continue
			}
			s := p.c[k]
			for i := 0; i < j; i++ {
				s -= p.l[k*M+i] * p.eta[i]
			}
			if coef := p.l[k*M+j]; coef > 0 {
				lo = math.Max(lo, s/coef)
			} else {
				hi = math.Min(hi, s/coef)
			}
		}
		if !(lo < hi) {
			return 0, false
		}
		var u float64
		if j < M-1 {
			u = w[j]
		}
		lp, x := truncated(lo, hi, u, j == M-1)
		if math.IsInf(lp, -1) {
			return 0, false
		}
		lw += lp
		p.eta[j] = x
	}
	return lw, true
}

// truncated returns, for the standard normal truncated to [lo, hi] (lo < hi), log(Phi(hi) -
// Phi(lo)) and either its u-quantile Phi^-1(Phi(lo) + u (Phi(hi) - Phi(lo))) (mean false) or
// its mean (phi(lo) - phi(hi)) / (Phi(hi) - Phi(lo)) (mean true), each computed in the tail
// where the interval lies (by symmetry when lo > 0), with log Phi evaluated once per end.
func truncated(lo, hi, u float64, mean bool) (lp, x float64) {
	flip := lo > 0
	if flip {
		lo, hi, u = -hi, -lo, 1-u
	}
	a, b := LogNormCDF(hi), LogNormCDF(lo)
	t := math.Exp(b - a) // Phi(lo) / Phi(hi)
	lp = a + math.Log1p(-t)
	if mean {
		if !math.IsInf(lo, -1) {
			x += math.Exp(LogNormPDF(lo) - lp)
		}
		if !math.IsInf(hi, 1) {
			x -= math.Exp(LogNormPDF(hi) - lp)
		}
	} else {
		x = InvLogNormCDF(a + math.Log(t+u*(1-t)))
	}
	x = math.Min(math.Max(x, lo), hi)
	if flip {
		x = -x
	}
	return lp, x
}

// InvLogNormCDF returns x with log Phi(x) = lp (lp <= 0), to about 1e-15 relative: gonum's
// NormalQuantile (Wichura's AS241) of e^lp, or of 1 - e^lp = -expm1(lp) in the upper half,
// where e^lp is at least 1e-300; below, Newton steps on LogNormCDF (concave, with derivative
// phi/Phi = invMills) from the asymptotic start x = -sqrt(-2 lp - log(-4 pi lp)).
func InvLogNormCDF(lp float64) float64 {
	switch {
	case math.IsNaN(lp) || lp > 0:
		return math.NaN()
	case lp == 0:
		return math.Inf(1)
	case math.IsInf(lp, -1):
		return math.Inf(-1)
	}
	switch {
	case lp > -math.Ln2:
		return -mathext.NormalQuantile(-math.Expm1(lp))
	case lp > -690:
		return mathext.NormalQuantile(math.Exp(lp))
	}
	x := -math.Sqrt(-2*lp - math.Log(-4*math.Pi*lp))
	for it := 0; it < 100; it++ {
		dx := (LogNormCDF(x) - lp) / invMills(x)
		x -= dx
		if math.Abs(dx) <= 1e-15*math.Abs(x) {
			break
		}
	}
	return x
}
