package channel

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
)

// NoisySoftmaxT is the softmax channel with additive Gaussian label noise at any T >= 2
// (NoisySoftmax computes T = 2 by one-dimensional rules, and is how this one is tested):
//
//	y = softmax_row(beta h) + sqrt(Delta) xi,   xi_ab iid N(0, 1) per output entry,
//
// with h_aa = sqrt2 u_aa and h_ab = h_ba = u_ab from the M = T(T+1)/2 packed unit coordinates u.
// Given omega and V, u ~ N(omega, V I_M), and the posterior of u given y has the density
//
//	p(u) = N(u; omega, V I_M) prod_ab N(y_ab; s_ab(u), Delta),   s = softmax_row(beta h(u)),
//
// whose integral is Z_out(y; omega, V), the density of the whole T x T output y.
// g_out = E[u - omega | y]/V = E[grad_u log L(u) | y], L(u) = prod_ab N(y_ab; s_ab(u), Delta)
// (integration by parts against the prior). Both are estimated by importance sampling on a
// randomised lattice:
//
//   - the mode u* of p by Gauss-Newton on the residuals ((u - omega)/sqrt V, (y - s)/sqrt Delta)
//     with a backtracking line search, started at omega, and its Gauss-Newton precision
//     H = I/V + J^T J/Delta (J = ds/du);
//   - two proposals, the Laplace one N(u*, kappa^2 H^-1) (kappa = NoisyTInflate) and the prior
//     N(omega, V I) as a defensive component, mixed half and half: lattice point w of shift r
//     gives one draw of each, x = u* + kappa H^{-1/2} Phi^-1(w) and x = omega + sqrt(V) Phi^-1(w),
//     each weighted by p(x)/q(x) with q the mixture's density (the balance heuristic of multiple
//     importance sampling, unbiased whatever the mode finder returned);
//   - per draw x, the two unbiased forms of g_out mixed with a fixed weight c,
//     eta = (1 - c)(x - omega)/sqrt V + c sqrt V J(x)^T (y - s(x))/Delta, whose posterior mean
//     is sqrt V g_out: c = 1/(1 + V h), with h = tr(J^T J)/(M Delta) the likelihood's mean
//     curvature at the mode, weights the score form where the prior is the narrower factor
//     (V h << 1: the first form's error grows as 1/sqrt V there, the score's as sqrt V) and the
//     first form where the likelihood is;
//   - the shifts' estimates combined as the polytope estimates are (shiftEstimator): Z_out,
//     E[eta | y] and their standard errors over the shifts.
//
// For a small Delta the posterior is the Laplace Gaussian to O(Delta) and the weights are nearly
// constant; for a large one it is the prior. Everything is in logarithms.
type NoisySoftmaxT struct {
	// Tol is the target of each estimate's reported errors (shiftEstimator.moments: the points
	// double from 64 per shift until they are met or the rule's are used up); 0: every point.
	Tol         float64
	t, m        int
	beta, delta float64
	rule        *Lattice
	shifts      shiftEstimator
	// per call
	y, omega  []float64
	v         float64
	softmax   *Softmax  // the noiseless output s(u)
	mode      []float64 // u*
	jac       []float64 // T^2 x M: ds/du at the current point
	hess      *mat.SymDense
	chol      mat.Cholesky // of the proposal's precision
	pilotChol mat.Cholesky // refit's factor of the pilot covariance
	tri       *mat.TriDense
	lower     []float64 // M x M row-major: L with H = L L^T at the mode
	pilotMean []float64 // M: refit's sums
	pilotCov  []float64 // M x M
	logDetL   float64   // log det L
	curv      float64   // h: tr(J^T J)/(M Delta) at the mode
	grad      []float64 // M: grad_u log L at the current point
	w, x, eta []float64
	hm, s     []float64 // T x T: h and the softmax
	step      *mat.VecDense
	rhs       *mat.VecDense
}

// NoisyTPoints and NoisyTShifts are the default lattice rule of NewNoisySoftmaxT (points per
// shift at most, shifts), NoisyTMax the largest T (M = 21 lattice dimensions) and
// NoisyTInflate kappa, the widening of the Laplace proposal (heavier than the posterior where
// the softmax saturates).
const (
	NoisyTPoints  = 1024
	NoisyTShifts  = 8
	NoisyTMax     = 6
	NoisyTInflate = 1.1
	// noisyTPriorEvery: one lattice point in this many is a draw of the defensive prior.
	noisyTPriorEvery = 4
	// noisyTPilot: points per shift of refit's pilot.
	noisyTPilot = 64
	noisyTSeed  = 0x6e6f697379 // "noisy": the lattice shifts, the same on every run
)

// NewNoisySoftmaxT returns the noisy softmax channel for 2 <= T <= NoisyTMax, 0 < beta < inf and
// 0 < Delta < inf, with a lattice rule of at most points points of each of shifts shifts (0 for
// the defaults) and Tol 1e-3.
func NewNoisySoftmaxT(T int, beta, delta float64, points, shifts int) (*NoisySoftmaxT, error) {
	switch {
	case T < 2 || T > NoisyTMax:
		return nil, fmt.Errorf("noisy softmax channel: T = %d, need 2 <= T <= %d", T, NoisyTMax)
	case !(beta > 0) || math.IsInf(beta, 1):
		return nil, fmt.Errorf("noisy softmax channel: beta = %g, need 0 < beta < inf", beta)
	case !(delta > 0) || math.IsInf(delta, 1):
		return nil, fmt.Errorf("noisy softmax channel: noise Delta = %g, need 0 < Delta < inf", delta)
	}
	if points == 0 {
		points = NoisyTPoints
	}
	if shifts == 0 {
		shifts = NoisyTShifts
	}
	M := Fields(T)
	rule, err := NewLattice(M, points, shifts, noisyTSeed)
	if err != nil {
		return nil, fmt.Errorf("noisy softmax channel: %w", err)
	}
	return &NoisySoftmaxT{Tol: 1e-3, t: T, m: M, beta: beta, delta: delta, rule: rule,
		y: make([]float64, T*T), omega: make([]float64, M), mode: make([]float64, M), softmax: &Softmax{t: T, beta: beta},
		jac: make([]float64, T*T*M), hess: mat.NewSymDense(M, nil), tri: mat.NewTriDense(M, mat.Lower, nil),
		lower: make([]float64, M*M), grad: make([]float64, M), pilotMean: make([]float64, M), pilotCov: make([]float64, M*M), w: make([]float64, M), x: make([]float64, M), eta: make([]float64, M),
		hm: make([]float64, T*T), s: make([]float64, T*T), step: mat.NewVecDense(M, nil), rhs: mat.NewVecDense(M, nil)}, nil
}

// Clone returns a channel with the same rule and Tol and its own work space (one per goroutine).
func (n *NoisySoftmaxT) Clone() *NoisySoftmaxT {
	c, _ := NewNoisySoftmaxT(n.t, n.beta, n.delta, n.rule.N, n.rule.R)
	copy(c.rule.shift, n.rule.shift)
	c.Tol = n.Tol
	return c
}

// Reseed draws new shifts of the lattice rule from seed (Lattice.Reshift), so that the
// estimates of different samples of an outer average have independent errors.
func (n *NoisySoftmaxT) Reseed(seed uint64) { n.rule.Reshift(seed) }

// Name returns "softmax".
func (n *NoisySoftmaxT) Name() string { return "softmax" }

// Tokens returns T.
func (n *NoisySoftmaxT) Tokens() int { return n.t }

// Beta returns the inverse temperature beta.
func (n *NoisySoftmaxT) Beta() float64 { return n.beta }

// Noise returns Delta, the variance of the label noise per output entry.
func (n *NoisySoftmaxT) Noise() float64 { return n.delta }

// Output writes the noiseless row softmax of beta h (T x T); the data add the noise.
func (n *NoisySoftmaxT) Output(y, h []float64) {
	n.softmax.Output(y, h)
}

// logLik returns sum_ab log N(y_ab; s_ab(u), Delta) at u (leaving s in n.s).
func (n *NoisySoftmaxT) logLik(u []float64) float64 {
	T := n.t
	HFromU(n.hm, u, T)
	n.Output(n.s, n.hm)
	var r2 float64
	for i, y := range n.y {
		d := y - n.s[i]
		r2 += d * d
	}
	return -r2/(2*n.delta) - float64(T*T)/2*math.Log(2*math.Pi*n.delta)
}

// logPost returns log p(u) = log N(u; omega, V I) + logLik(u).
func (n *NoisySoftmaxT) logPost(u []float64) float64 {
	var d2 float64
	for j, x := range u {
		d := x - n.omega[j]
		d2 += d * d
	}
	return n.logLik(u) - d2/(2*n.v) - float64(n.m)/2*math.Log(2*math.Pi*n.v)
}

// jacobian writes J = ds/du (T^2 x M) at the softmax n.s of the last logLik:
// ds_ab/dh_ac = beta s_ab (delta_bc - s_ac), and h_ac depends on u_{(a,c)} with the factor
// sqrt2 on the diagonal, 1 off it.
func (n *NoisySoftmaxT) jacobian() {
	T, M := n.t, n.m
	for i := range n.jac {
		n.jac[i] = 0
	}
	for a := 0; a < T; a++ {
		for c := 0; c < T; c++ {
			k := Index(T, a, c)
			f := 1.0
			if a == c {
				f = math.Sqrt2
			}
			sac := n.s[a*T+c]
			for b := 0; b < T; b++ {
				d := -sac
				if b == c {
					d += 1
				}
				n.jac[(a*T+b)*M+k] += f * n.beta * n.s[a*T+b] * d
			}
		}
	}
}

// findMode runs Gauss-Newton from omega to the mode u* of log p (n.mode) and leaves the
// Cholesky factor of H = I/V + J^T J/Delta at u* in n.chol. It reports false if H could not be
// factorised (then the proposal is the prior alone).
func (n *NoisySoftmaxT) findMode() bool {
	M := n.m
	u := n.mode
	copy(u, n.omega)
	lp := n.logPost(u)
	for it := 0; it < 100; it++ {
		n.jacobian()
		n.buildHess()
		n.likGrad()
		for j := 0; j < M; j++ {
			n.rhs.SetVec(j, n.grad[j]-(u[j]-n.omega[j])/n.v)
		}
		if ok := n.chol.Factorize(n.hess); !ok {
			return false
		}
		if err := n.chol.SolveVecTo(n.step, n.rhs); err != nil {
			return false
		}
		// Backtracking: halve the step until log p does not decrease.
		t, moved := 1.0, false
		for k := 0; k < 30; k++ {
			for j := 0; j < M; j++ {
				n.x[j] = u[j] + t*n.step.AtVec(j)
			}
			if l := n.logPost(n.x); l >= lp {
				lp, moved = l, true
				copy(u, n.x)
				break
			}
			t /= 2
		}
		var sz, su float64
		for j := 0; j < M; j++ {
			sz += t * t * n.step.AtVec(j) * n.step.AtVec(j)
			su += u[j] * u[j]
		}
		if !moved || sz <= 1e-20*(1+su) {
			break
		}
	}
	// H at the mode (logPost left s there when the last step moved; recompute to be sure).
	n.logPost(u)
	n.jacobian()
	n.buildHess()
	if ok := n.chol.Factorize(n.hess); !ok {
		return false
	}
	n.setLower()
	return true
}

// setLower copies the Cholesky factor L of n.chol (H = L L^T) into n.lower, with log det L.
func (n *NoisySoftmaxT) setLower() {
	M := n.m
	n.chol.LTo(n.tri)
	n.logDetL = 0
	for j := 0; j < M; j++ {
		for k := 0; k <= j; k++ {
			n.lower[j*M+k] = n.tri.At(j, k)
		}
		n.logDetL += math.Log(n.lower[j*M+j])
	}
}

// likGrad writes grad_u log L = J^T (y - s)/Delta into n.grad, at the point of the last
// logLik and jacobian.
func (n *NoisySoftmaxT) likGrad() {
	M := n.m
	for j := 0; j < M; j++ {
		var g float64
		for i, y := range n.y {
			g += n.jac[i*M+j] * (y - n.s[i])
		}
		n.grad[j] = g / n.delta
	}
}

// buildHess writes H = I/V + J^T J/Delta into n.hess and h = tr(J^T J)/(M Delta) into n.curv.
func (n *NoisySoftmaxT) buildHess() {
	M, TT := n.m, n.t*n.t
	n.curv = 0
	for a := 0; a < M; a++ {
		for b := a; b < M; b++ {
			var s float64
			for i := 0; i < TT; i++ {
				s += n.jac[i*M+a] * n.jac[i*M+b]
			}
			s /= n.delta
			if a == b {
				n.curv += s / float64(M)
				s += 1 / n.v
			}
			n.hess.SetSym(a, b, s)
		}
	}
}

// GOut writes g_out(y; omega, V) = E[u - omega | y]/V in packed unit coordinates for one sample
// (y T x T row-major, noisy; omega packed, M values; V > 0) and returns the estimate: LogZ is
// log Z_out (the density of the T x T output), ErrM the largest standard error of the
// estimate of sqrt V g_out = E[(u - omega)/sqrt V | y] (that of g is ErrM/sqrt V), VarM the
// sum of their squares. It is not safe for concurrent use (one NoisySoftmaxT per goroutine).
func (n *NoisySoftmaxT) GOut(g, y, omega []float64, V float64) Estimate {
	copy(n.y, y)
	copy(n.omega, omega)
	n.v = V
	laplace := n.refit(n.findMode())
	acc := func(s *shiftSum, rule *Lattice, r, i0, i1 int) { n.accumulate(s, rule, r, i0, i1, laplace) }
	est := n.shifts.moments(n.eta, n.rule, n.Tol, acc, nil)
	sv := math.Sqrt(V)
	for j := range g {
		g[j] = n.eta[j] / sv
	}
	return est
}

// accumulate adds points [i0, i1) of shift r (draw), each with its eta (see NoisySoftmaxT).
func (n *NoisySoftmaxT) accumulate(s *shiftSum, rule *Lattice, r, i0, i1 int, laplace bool) {
	sv := math.Sqrt(n.v)
	c := 1 / (1 + n.v*n.curv)
	for i := i0; i < i1; i++ {
		lw, ok := n.draw(rule, r, i, laplace)
		if !ok {
			continue
		}
		n.jacobian() // at x: draw's logPost left s(x)
		n.likGrad()
		for j, x := range n.x {
			n.eta[j] = (1-c)*(x-n.omega[j])/sv + c*sv*n.grad[j]
		}
		s.add(lw, n.eta)
	}
}

// draw writes point i of shift r into n.x and returns its log-weight log p(x)/q(x). With the
// Gaussian proposal, every noisyTPriorEvery-th point is a draw of the prior and the others of
// the Gaussian N(u*, kappa^2 H^-1), each weighted for q = lambda q_G + (1 - lambda) q_P, their
// mixture (lambda = 1 - 1/noisyTPriorEvery: the balance heuristic of multiple importance
// sampling); without it every point is a prior draw.
func (n *NoisySoftmaxT) draw(rule *Lattice, r, i int, laplace bool) (float64, bool) {
	M := n.m
	const lo = 0x1p-53
	// log densities of the standard normal draw under each proposal, up to -|w|^2/2:
	// prior: -M/2 log(2 pi V); Gaussian: log det(L) - M log kappa - M/2 log(2 pi).
	lqP0 := -float64(M) / 2 * math.Log(2*math.Pi*n.v)
	lqL0 := n.logDetL - float64(M)*math.Log(NoisyTInflate) - float64(M)/2*math.Log(2*math.Pi)
	rule.point(n.w, r, i)
	var w2 float64
	for j, p := range n.w {
		n.w[j] = mathext.NormalQuantile(math.Min(math.Max(p, lo), 1-lo))
		w2 += n.w[j] * n.w[j]
	}
	prior := !laplace || i%noisyTPriorEvery == noisyTPriorEvery-1
	var lqP, lqL float64
	if prior {
		sv := math.Sqrt(n.v)
		for j := 0; j < M; j++ {
			n.x[j] = n.omega[j] + sv*n.w[j]
		}
		lqP = lqP0 - w2/2
		if laplace {
			lqL = lqL0 - n.dist2Laplace()/2
		}
	} else {
		n.laplaceDraw()
		lqL = lqL0 - w2/2
		lqP = lqP0 - n.dist2Prior()/2
	}
	lw := n.logPost(n.x) - lqP
	if laplace {
		a, b := math.Log(1-1.0/noisyTPriorEvery)+lqL, math.Log(1.0/noisyTPriorEvery)+lqP
		mx := math.Max(a, b)
		lw += lqP - (mx + math.Log(math.Exp(a-mx)+math.Exp(b-mx)))
	}
	return lw, !(math.IsNaN(lw) || math.IsInf(lw, -1))
}

// refit moves the Gaussian proposal towards the posterior's mean and covariance as estimated by
// the first noisyTPilot points of every shift of the current proposal (one step of adaptive
// importance sampling: the Laplace Gaussian misses the skew of a saturating softmax and the
// spread of a weak likelihood). The new mean and covariance are the blend
//
//	lambda (pilot's) + (1 - lambda) (current proposal's),   lambda = ESS/(ESS + 4 M),
//
// of the pilot's estimates, weighted by its effective sample size ESS, and the proposal it drew
// from (N(u*, H^-1) from findMode, or the prior N(omega, V I) when there is none). The blend is
// positive definite and a smooth function of (y, omega, V), so the state evolution's Monte
// Carlo map has no jumps where a threshold on ESS would switch a sample's proposal. If a
// Cholesky factorisation fails it keeps the proposal it drew from. It reports whether there is
// a Gaussian proposal.
func (n *NoisySoftmaxT) refit(laplace bool) bool {
	M := n.m
	mean, cov := n.pilotMean, n.pilotCov
	for j := range mean {
		mean[j] = 0
	}
	for j := range cov {
		cov[j] = 0
	}
	top, sw, sw2 := math.Inf(-1), 0.0, 0.0
	np := min(noisyTPilot, n.rule.N)
	for r := 0; r < n.rule.R; r++ {
		for i := 0; i < np; i++ {
			lw, ok := n.draw(n.rule, r, i, laplace)
			if !ok {
				continue
			}
			if lw > top { // rescale the sums to the new largest weight
				f := math.Exp(top - lw)
				sw, sw2 = sw*f, sw2*f*f
				for j := range mean {
					mean[j] *= f
				}
				for j := range cov {
					cov[j] *= f
				}
				top = lw
			}
			w := math.Exp(lw - top)
			sw += w
			sw2 += w * w
			for j, x := range n.x {
				mean[j] += w * x
				for k := 0; k <= j; k++ {
					cov[j*M+k] += w * x * n.x[k]
				}
			}
		}
	}
	var lambda float64
	if sw > 0 {
		ess := sw * sw / sw2
		lambda = ess / (ess + float64(4*M))
		for j := range mean {
			mean[j] /= sw
		}
	}
	// The current proposal's mean and covariance: (u*, H^-1) or (omega, V I).
	base := n.omega
	if laplace {
		base = n.mode
		if err := n.chol.InverseTo(n.hess); err != nil {
			return laplace
		}
	} else {
		n.hess.Zero()
		for j := 0; j < M; j++ {
			n.hess.SetSym(j, j, n.v)
		}
	}
	for j := 0; j < M; j++ {
		for k := 0; k <= j; k++ {
			c := 0.0
			if sw > 0 {
				c = cov[j*M+k]/sw - mean[j]*mean[k]
			}
			n.hess.SetSym(j, k, lambda*c+(1-lambda)*n.hess.At(j, k))
		}
	}
	for j := range mean {
		mean[j] = lambda*mean[j] + (1-lambda)*base[j]
	}
	// mean is the blend from here on; n.mode and n.lower still hold the proposal drawn from.
	if !n.pilotChol.Factorize(n.hess) {
		return laplace
	}
	if err := n.pilotChol.InverseTo(n.hess); err != nil || !n.chol.Factorize(n.hess) {
		return laplace
	}
	copy(n.mode, mean)
	n.setLower()
	return true
}

// laplaceDraw writes x = u* + kappa H^{-1/2} w (H = L L^T: x - u* = kappa L^-T w).
func (n *NoisySoftmaxT) laplaceDraw() {
	M := n.m
	// Back substitution with L^T (upper triangular): solve L^T d = w.
	for j := M - 1; j >= 0; j-- {
		s := n.w[j]
		for k := j + 1; k < M; k++ {
			s -= n.lower[k*M+j] * n.x[k]
		}
		n.x[j] = s / n.lower[j*M+j]
	}
	for j := 0; j < M; j++ {
		n.x[j] = n.mode[j] + NoisyTInflate*n.x[j]
	}
}

// dist2Prior returns |x - omega|^2 / V.
func (n *NoisySoftmaxT) dist2Prior() float64 {
	var d2 float64
	for j, x := range n.x {
		d := x - n.omega[j]
		d2 += d * d
	}
	return d2 / n.v
}

// dist2Laplace returns |L^T (x - u*)|^2 / kappa^2, the squared standard-normal norm of x under
// the Laplace proposal.
func (n *NoisySoftmaxT) dist2Laplace() float64 {
	M := n.m
	var d2 float64
	for j := 0; j < M; j++ {
		var s float64
		for k := j; k < M; k++ {
			s += n.lower[k*M+j] * (n.x[k] - n.mode[k])
		}
		d2 += s * s
	}
	return d2 / (NoisyTInflate * NoisyTInflate)
}
