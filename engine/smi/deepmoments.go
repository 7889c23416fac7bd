package smi

import (
	"errors"
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/internal/spd"
)

// DeepPosterior computes the posterior moments of the deep attention channel (docs/theory/smi.md 2.1,
// 2.2): Z (P x M) has independent columns z_{.l} ~ N(omega_{.l}, V) and the output y fixes
// u = v_L(Z) up to its sign (M = 2). Writing x for the free pre-activations of layers 1..L-1
// (2(L-1) numbers) and z_L for the last layer's, the constraint v_L = B_{L-1}(x) z_L = s u
// leaves z_L = s B_{L-1}(x)^{-1} u, so
//
//	Z_out(y; omega, V) = sum_{s = +-1} int dx  prod_l N(z_{.l}; omega_{.l}, V) / |det B_{L-1}(x)|,
//
// the 1/|det B| being the Jacobian of delta(u - B z_L) (the Gaussian normalisations cancel in
// every ratio below, so Z_out is known up to a constant). The integral over x is deterministic
// adaptive cubature (Genz-Malik, cubature.go) in the whitened coordinates
// x_{.l} = omega_{x,l} + L_xx t_l (L_xx the Cholesky factor of V_xx), so the quadrature is
// centred on omega and scaled by V, over the box |t_i| <= Box. Narrow peaks of the integrand
// (V_LL small: the last layer is learned) are found first (findPeaks) and seed the partition.
// For L = 1 there is nothing to integrate: the posterior is the two points z_1 = +-u.
//
// Accuracy (measured against the same quadrature at 100 times the budget): L = 2 moments to
// about 1e-4 with 2 000 to 5 000 evaluations at the default tolerance; L = 3 (4-dimensional)
// stops at the MaxEval budget. Its posterior means are then off by 5e-3 (every layer broad) to
// 0.04 (V_33 ~ 0.01, the earlier layers broad) and 0.16 (V = diag(0.7, 0.7, 0.006), where the
// earlier layers turn on) of the prior scale, and by 5e-3 once every layer is learned (the
// alpha = 2 fixed point, where brute-force Monte Carlo agrees to 1e-3) at 20 000 evaluations.
//
// At L = 3 the state evolution and GAMP use DeepSampler by default (unbiased, with a measured
// error, ten times faster); this cubature stays their reference and their --cubature option.
//
// One DeepPosterior per goroutine: it holds work space.
type DeepPosterior struct {
	d       *Deep
	P, M, n int // n = (L-1) M free coordinates
	Tol     float64
	MaxEval int
	Box     float64
	// unit maps the whitened coordinates to the unit cube, t_i = Phi^{-1}(p_i), so that the
	// prior is the uniform measure and the cubature sees the likelihood alone: chosen for
	// L >= 3 when the last layer is sharp (sigma2 < unitSigma2), where it converges faster than
	// the Gaussian-weighted box.
	unit     bool
	tu       []float64
	cub      *cubature
	s        *DeepScratch
	weight   []float64
	val, err []float64
	// per call
	u, omega, lxx, k, zs []float64
	sigma2, shift        float64
	overflow             bool
}

// DeepMoments are posterior moments of Z - omega given y, omega and V. Vectors index Z
// row-major: entry (k, l) of Z (layer k, token l) is k M + l.
type DeepMoments struct {
	Mean   []float64 // P M: E[Z - omega | y]
	Second []float64 // (P M) x (P M): E[(Z - omega)(Z - omega)^T | y]
	LogZ   float64   // log Z_out: the density of u at +-u, log(p_u(u) + p_u(-u))
	Evals  int       // integrand evaluations
	Exact  bool      // the cubature met its tolerance (always true for L = 1)
}

// NewMoments returns moments sized for the channel.
func (d *Deep) NewMoments() *DeepMoments {
	pm := d.P() * d.M
	return &DeepMoments{Mean: make([]float64, pm), Second: make([]float64, pm*pm)}
}

// Default accuracy of DeepPosterior: relative tolerance on Z_out and on every moment (scaled by
// the prior standard deviations), the evaluation budget, and the half-width of the box in
// whitened coordinates (the prior mass outside is below 2e-9 per coordinate).
const (
	DefaultDeepTol     = 1e-3
	DefaultDeepMaxEval = 20000
	DefaultDeepBox     = 6.0
)

// unitSigma2 is the conditional variance of the last layer below which the L >= 3 cubature
// runs on the unit cube (measured: at V_33 = 0.011 the unit cube's error is a third of the
// box's at 20 000 evaluations, at V_33 = 0.1 twice as large).
const unitSigma2 = 0.05

// NewPosterior returns the posterior integrator for the channel; the channel must pass
// CheckInvertible.
func (d *Deep) NewPosterior() (*DeepPosterior, error) {
	if err := d.CheckInvertible(); err != nil {
		return nil, err
	}
	P, M := d.P(), d.M
	n := (P - 1) * M
	pm := P * M
	nf := 1 + pm + pm*(pm+1)/2
	q := &DeepPosterior{d: d, P: P, M: M, n: n, Tol: DefaultDeepTol, MaxEval: DefaultDeepMaxEval, Box: DefaultDeepBox,
		s: d.NewScratch(), weight: make([]float64, nf), val: make([]float64, nf), err: make([]float64, nf),
		u: make([]float64, M), omega: make([]float64, pm), lxx: make([]float64, (P-1)*(P-1)), k: make([]float64, P-1),
		zs: make([]float64, pm), tu: make([]float64, n)}
	if n >= 2 {
		q.cub = newCubature(n, nf)
	}
	return q, nil
}

// Moments writes the posterior moments of Z - omega given the last pre-activation u (either
// sign), omega (P x M) and V (P x P, symmetric positive definite) into m.
func (q *DeepPosterior) Moments(m *DeepMoments, u, omega, V []float64) error {
	P, M := q.P, q.M
	copy(q.u, u)
	copy(q.omega, omega)
	// Split V into the free block V_xx = L_xx L_xx^T, k = L_xx^{-1} V_xL and the conditional
	// variance sigma2 = V_LL - k^T k of z_L given x.
	pl := P - 1
	for i := 0; i < pl; i++ {
		for j := 0; j <= i; j++ {
			s := V[i*P+j]
			for r := 0; r < j; r++ {
				s -= q.lxx[i*pl+r] * q.lxx[j*pl+r]
			}
			if i == j {
				if !(s > 0) {
					return fmt.Errorf("deep channel: V is not positive definite (pivot %d is %g)", i, s)
				}
				q.lxx[i*pl+i] = math.Sqrt(s)
			} else {
				q.lxx[i*pl+j] = s / q.lxx[j*pl+j]
			}
		}
	}
	s2 := V[pl*P+pl]
	for i := 0; i < pl; i++ {
		s := V[i*P+pl]
		for r := 0; r < i; r++ {
			s -= q.lxx[i*pl+r] * q.k[r]
		}
		q.k[i] = s / q.lxx[i*pl+i]
		s2 -= q.k[i] * q.k[i]
	}
	if !(s2 > 0) {
		return fmt.Errorf("deep channel: V is not positive definite (conditional variance %g)", s2)
	}
	q.sigma2 = s2
	pm := P * M
	for k := range q.weight {
		q.weight[k] = 0
	}
	q.weight[0] = 1
	for a := 0; a < pm; a++ {
		sa := math.Sqrt(V[(a/M)*P+a/M])
		q.weight[1+a] = sa
		for b := a; b < pm; b++ {
			q.weight[1+pm+triIndex(pm, a, b)] = sa * math.Sqrt(V[(b/M)*P+b/M])
		}
	}
	var exact bool
	var evals int
	logNorm := -float64(q.n)/2*math.Log(2*math.Pi) - float64(M)/2*math.Log(2*math.Pi*q.sigma2)
	if q.n == 0 {
		q.shift = q.exponentMax(nil, true)
		q.integrand(q.val, nil)
		exact, evals = true, 1
	} else {
		centre := make([]float64, q.n)
		half := make([]float64, q.n)
		for i := range half {
			half[i] = q.Box
		}
		q.unit = q.P >= 3 && q.sigma2 < unitSigma2
		if q.unit {
			// The unit cube's measure is the normalised prior: no (2 pi)^{-n/2} in Z_out.
			logNorm += float64(q.n) / 2 * math.Log(2*math.Pi)
		}
		peaks := q.findPeaks()
		q.shift = q.exponentMax(centre, !q.unit)
		for _, p := range peaks {
			q.shift = math.Max(q.shift, q.exponentMax(p.at, !q.unit))
		}
		if q.unit {
			for i := range half {
				centre[i], half[i] = 0.5, 0.5
			}
			for _, p := range peaks {
				for i, t := range p.at {
					p.at[i] = math.Erfc(-t/math.Sqrt2) / 2
					p.width[i] *= math.Exp(-t*t/2) / math.Sqrt(2*math.Pi)
				}
			}
		}
		// The Genz-Malik rule has a negative weight, so an under-resolved spiky integrand (c < 1,
		// where det A(z_1) can vanish) can give Z_out <= 0 or a negative variance: refine with a
		// 100 times tighter tolerance and a 10 times larger budget, twice at most, then fall
		// back to a rule with positive weights on the refined partition.
		tol, budget, total := q.Tol, q.MaxEval, 0
		for try, refine := 0, 0; ; try++ {
			q.overflow = false
			exact, evals = q.cub.integrate(q.val, q.err, q.integrand, centre, half, tol, budget, q.weight, peaks)
			total += evals
			if q.overflow {
				if try == 4 {
					return errors.New("deep channel: the posterior weights overflow")
				}
				continue
			}
			if q.plausible() || refine == 2 {
				break
			}
			tol, budget, refine = tol/100, budget*10, refine+1
		}
		if !q.plausible() {
			// Still not a measure: the positive Gauss-Legendre rule on the refined partition.
			q.cub.positive(q.val, q.integrand)
			exact = false
		}
		evals = total
	}
	z := q.val[0]
	if !(z > 0) || math.IsInf(z, 0) {
		return fmt.Errorf("deep channel: Z_out = %g (the output is not reachable from omega, V)", z)
	}
	for a := 0; a < pm; a++ {
		m.Mean[a] = q.val[1+a] / z
		for b := a; b < pm; b++ {
			v := q.val[1+pm+triIndex(pm, a, b)] / z
			m.Second[a*pm+b], m.Second[b*pm+a] = v, v
		}
	}
	m.LogZ = math.Log(z) + q.shift + logNorm
	m.Evals, m.Exact = evals, exact
	return nil
}

// plausible reports whether the integrals q.val are those of a measure: Z_out > 0 and
// nonnegative second moments.
func (q *DeepPosterior) plausible() bool {
	if !(q.val[0] > 0) {
		return false
	}
	pm := q.P * q.M
	for a := 0; a < pm; a++ {
		if !(q.val[1+pm+triIndex(pm, a, a)] >= 0) {
			return false
		}
	}
	return true
}

// triIndex is the position of (a, b), a <= b, in the packed upper triangle of an n x n matrix.
func triIndex(n, a, b int) int { return a*n - a*(a-1)/2 + (b - a) }

// branch computes, at whitened coordinates t, the free rows of Z - omega (into q.zs), the
// solution w = B^{-1} u, the conditional means' offsets and returns log|det B|. It reports
// false if B is singular.
func (q *DeepPosterior) branch(t []float64) (w [2]float64, logDet float64, ok bool) {
	M, pl := q.M, q.P-1
	z := q.zs
	for k := 0; k < pl; k++ {
		for l := 0; l < M; l++ {
			var s float64
			for j := 0; j <= k; j++ {
				s += q.lxx[k*pl+j] * t[j*M+l]
			}
			z[k*M+l] = s
		}
	}
	if pl == 0 {
		return [2]float64{q.u[0], q.u[1]}, 0, true
	}
	// B_{L-1} by the recursion of Deep, written out for M = 2 (channel.Attention2).
	c, beta := q.d.C, q.d.Beta
	B := channel.Attention2(c, beta, [2]float64{z[0] + q.omega[0], z[1] + q.omega[1]})
	for k := 1; k < pl; k++ {
		z0, z1 := z[k*M]+q.omega[k*M], z[k*M+1]+q.omega[k*M+1]
		a := channel.Attention2(c, beta, [2]float64{B[0]*z0 + B[1]*z1, B[2]*z0 + B[3]*z1})
		B = [4]float64{a[0]*B[0] + a[1]*B[2], a[0]*B[1] + a[1]*B[3], a[2]*B[0] + a[3]*B[2], a[2]*B[1] + a[3]*B[3]}
	}
	b := B[:]
	det := b[0]*b[3] - b[1]*b[2]
	if det == 0 || math.IsNaN(det) {
		return w, 0, false
	}
	w[0] = (b[3]*q.u[0] - b[1]*q.u[1]) / det
	w[1] = (-b[2]*q.u[0] + b[0]*q.u[1]) / det
	return w, math.Log(math.Abs(det)), true
}

// exponents returns the log-weights of the two branches s = +1, -1 at t, with z_L - omega_L of
// each branch; ok is false where B is singular (weight 0). With prior false the standard
// normal density of t is left out (the cubature integrates it by the change of variables).
func (q *DeepPosterior) exponents(t []float64, prior bool) (e [2]float64, zl [2][2]float64, ok bool) {
	M, pl := q.M, q.P-1
	w, logDet, ok := q.branch(t)
	if !ok {
		return e, zl, false
	}
	var tt float64
	if prior {
		for _, v := range t {
			tt += v * v
		}
	}
	for si, s := range [2]float64{1, -1} {
		var r2 float64
		for l := 0; l < M; l++ {
			var mu float64 // E[z_L,l - omega_L,l | x] = k . t_l
			for j := 0; j < pl; j++ {
				mu += q.k[j] * t[j*M+l]
			}
			d := s*w[l] - q.omega[pl*M+l]
			zl[si][l] = d
			r2 += (d - mu) * (d - mu)
		}
		e[si] = -tt/2 - r2/(2*q.sigma2) - logDet
	}
	return e, zl, true
}

func (q *DeepPosterior) exponentMax(t []float64, prior bool) float64 {
	e, _, ok := q.exponents(t, prior)
	if !ok {
		return 0
	}
	return math.Max(e[0], e[1])
}

// integrand writes, at t, the weight e^{exponent - shift} and its products with Z - omega and
// (Z - omega)(Z - omega)^T, summed over both branches.
func (q *DeepPosterior) integrand(fx, t []float64) {
	for k := range fx {
		fx[k] = 0
	}
	prior := true
	if q.unit {
		for i, v := range t {
			q.tu[i] = -math.Sqrt2 * math.Erfcinv(2*v)
		}
		t, prior = q.tu, false
	}
	e, zl, ok := q.exponents(t, prior)
	if !ok {
		return
	}
	pm, M, pl := q.P*q.M, q.M, q.P-1
	for si := range e {
		if e[si]-q.shift > 600 {
			q.overflow = true
			q.shift = e[si]
		}
		w := math.Exp(e[si] - q.shift)
		if w == 0 {
			continue
		}
		z := q.zs
		z[pl*M], z[pl*M+1] = zl[si][0], zl[si][1]
		fx[0] += w
		for a := 0; a < pm; a++ {
			wa := w * z[a]
			fx[1+a] += wa
			row := fx[1+pm+triIndex(pm, a, a):]
			for b := a; b < pm; b++ {
				row[b-a] += wa * z[b]
			}
		}
	}
}

// Cov writes the posterior covariance of Z's entries, Second - Mean Mean^T ((P M) x (P M)).
func (m *DeepMoments) Cov(c []float64) {
	n := len(m.Mean)
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			c[a*n+b] = m.Second[a*n+b] - m.Mean[a]*m.Mean[b]
		}
	}
}

// residual writes r(t) = [t; (s w(t) - omega_L - K t)/sigma] for branch s, the vector whose half
// squared norm plus log|det B| is minus the branch's exponent; ok is false where B is singular.
func (q *DeepPosterior) residual(r, t []float64, si int) (logDet float64, ok bool) {
	M, pl := q.M, q.P-1
	w, logDet, ok := q.branch(t)
	if !ok {
		return 0, false
	}
	copy(r, t)
	s := 1.0 - 2*float64(si)
	sd := math.Sqrt(q.sigma2)
	for l := 0; l < M; l++ {
		var mu float64
		for j := 0; j < pl; j++ {
			mu += q.k[j] * t[j*M+l]
		}
		r[q.n+l] = (s*w[l] - q.omega[pl*M+l] - mu) / sd
	}
	return logDet, true
}

// findPeaks locates the maxima of the integrand over the box, branch by branch: the best points
// of a coarse grid start Levenberg-Marquardt on the residual above (Jacobian by central
// differences), and each maximum's width along each axis is the marginal standard deviation of
// the Gauss-Newton Laplace approximation. It returns the peaks within 40 of the best
// exponent.
func (q *DeepPosterior) findPeaks() []peak {
	n := q.n
	g := 9
	if n > 2 {
		g = 5
	}
	h := 2 * q.Box / float64(g)
	type start struct {
		t  []float64
		e  float64
		si int
	}
	var starts []start
	t := make([]float64, n)
	idx := make([]int, n)
	total := 1
	for i := 0; i < n; i++ {
		total *= g
	}
	for c := 0; c < total; c++ {
		k := c
		for i := range idx {
			idx[i] = k % g
			k /= g
			t[i] = -q.Box + h*(float64(idx[i])+0.5)
		}
		e, _, ok := q.exponents(t, true)
		if !ok {
			continue
		}
		for si := range e {
			starts = append(starts, start{append([]float64(nil), t...), e[si], si})
		}
	}
	// Keep the 2 best starts of each branch.
	var best []start
	for si := 0; si < 2; si++ {
		for pick := 0; pick < 2; pick++ {
			k := -1
			for i, s := range starts {
				if s.si == si && (k < 0 || s.e > starts[k].e) {
					k = i
				}
			}
			if k < 0 {
				break
			}
			best = append(best, starts[k])
			starts[k].e = math.Inf(-1)
			starts[k].si = -1
		}
	}
	m := n + q.M
	r, r2, jac := make([]float64, m), make([]float64, m), make([]float64, m*n)
	jtj, jtr, step, tt := make([]float64, n*n), make([]float64, n), make([]float64, n), make([]float64, n)
	obj := func(t []float64, si int) float64 {
		ld, ok := q.residual(r2, t, si)
		if !ok {
			return math.Inf(1)
		}
		var f float64
		for _, v := range r2 {
			f += v * v
		}
		return f/2 + ld
	}
	var peaks []peak
	var es []float64
	top := math.Inf(-1)
	for _, st := range best {
		t := st.t
		f := obj(t, st.si)
		lambda := 1e-3
		for it := 0; it < 60 && !math.IsInf(f, 1); it++ {
			q.residual(r, t, st.si)
			for j := 0; j < n; j++ {
				d := 1e-6 * (1 + math.Abs(t[j]))
				copy(tt, t)
				tt[j] += d
				q.residual(r2, tt, st.si)
				for i := 0; i < m; i++ {
					jac[i*n+j] = r2[i]
				}
				tt[j] -= 2 * d
				q.residual(r2, tt, st.si)
				for i := 0; i < m; i++ {
					jac[i*n+j] = (jac[i*n+j] - r2[i]) / (2 * d)
				}
			}
			for a := 0; a < n; a++ {
				jtr[a] = 0
				for i := 0; i < m; i++ {
					jtr[a] += jac[i*n+a] * r[i]
				}
				for b := 0; b < n; b++ {
					var s float64
					for i := 0; i < m; i++ {
						s += jac[i*n+a] * jac[i*n+b]
					}
					jtj[a*n+b] = s
				}
			}
			improved := false
			for try := 0; try < 20; try++ {
				for a := 0; a < n; a++ {
					jtj[a*n+a] *= 1 + lambda
				}
				ok := spd.Solve(step, jtj, jtr, n, nil)
				for a := 0; a < n; a++ {
					jtj[a*n+a] /= 1 + lambda
				}
				if ok {
					for a := range tt {
						tt[a] = t[a] - step[a]
					}
					if f2 := obj(tt, st.si); f2 < f {
						copy(t, tt)
						df := f - f2
						f = f2
						lambda = math.Max(lambda/10, 1e-12)
						improved = df > 1e-10*(1+math.Abs(f))
						break
					}
				}
				lambda *= 10
			}
			if !improved {
				break
			}
		}
		if math.IsInf(f, 1) {
			continue
		}
		// Laplace widths: sqrt of the diagonal of (J^T J)^{-1}, capped at the box.
		width := make([]float64, n)
		inv := make([]float64, n)
		e := make([]float64, n)
		for a := 0; a < n; a++ {
			for b := range e {
				e[b] = 0
			}
			e[a] = 1
			if !spd.Solve(inv, jtj, e, n, nil) || !(inv[a] > 0) {
				width[a] = q.Box
				continue
			}
			width[a] = math.Min(math.Sqrt(inv[a]), q.Box)
		}
		dup := false
		for _, p := range peaks {
			near := true
			for a := range t {
				if math.Abs(p.at[a]-t[a]) > 0.5*math.Min(p.width[a], width[a]) {
					near = false
					break
				}
			}
			if near {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		inBox := true
		for _, v := range t {
			if math.Abs(v) > q.Box {
				inBox = false
			}
		}
		if !inBox {
			continue
		}
		peaks = append(peaks, peak{append([]float64(nil), t...), width})
		es = append(es, -f)
		top = math.Max(top, -f)
	}
	kept := peaks[:0]
	for i, p := range peaks {
		if es[i] > top-40 {
			kept = append(kept, p)
		}
	}
	return kept
}
