package erm

import (
	"errors"
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim/se"
	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/internal/par"
)

// The softmax channel (T >= 2). The estimator minimises the loss `aim gd` trains,
//
//	(1/D) sum_mu sum_ab (softmax_row(beta h_mu(S))_ab - y_mu,ab)^2 + penalty(S),
//
// whose per-sample loss l (channel.SquareLoss) acts on the M = T(T+1)/2 unit coordinates u of
// h. The state evolution is the generalised-linear-model ERM one with an M-dimensional channel
// (docs/theory/aim.md 4.1). With the order parameters m = Tr(S* S-hat)/D, q = Tr S-hat^2/D and
// Sigma, the teacher's fields u* ~ N(0, Q0 I_M), the student's omega = (m/Q0) u* +
// sqrt(q - m^2/Q0) xi, y = softmax(beta h(u*)) (+ sqrt(Delta) xi'), and the proximal map
// P = argmin_u l(u) + |u - omega|^2/(2 Sigma), f = (P - omega)/Sigma:
//
//	Sigma-hat = 2 alpha E[M - tr dP/domega] / Sigma,   q-hat = 2 alpha E|f|^2,
//	m-hat = 2 alpha E[u* . f] / Q0 + (m/Q0) Sigma-hat,
//
// (m-hat is Stein's lemma applied to the GLM's E[f (u* - E[u*|omega])]/Var(u*|omega), written so
// that nothing is divided by the vanishing Var(u*|omega) near recovery). The prior side is
// Y = S* + sqrt(Delta_eff) Z with Delta_eff = q-hat/m-hat^2 and S-hat = kappa r(Y),
// kappa = m-hat/Sigma-hat, r(y) = max(y - tau, 0), tau = 2 lambda/m-hat (Nuclear), so that
//
//	m = kappa ∫ r(y)(y - 2 Delta_eff h(y)) dmu,   q = kappa^2 ∫ r^2 dmu,   Sigma = I/Sigma-hat,
//
// and for Ridge S-hat = s Y, s = m-hat/(Sigma-hat + 4 lambda), Sigma = 1/(Sigma-hat + 4 lambda).
// With the linear channel's loss (T = 1) m-hat = Sigma-hat = 2 alpha/(Sigma + 1/4) and this is
// the scalar state evolution of Solve, which is how it is tested. The averages are Monte Carlo
// over Problem.Samples draws of a fixed stream (common random numbers: the map is a
// deterministic function of (m, q, Sigma)), iterated to its fixed point with engine/fixedpoint;
// Point.TestErr and Point.TrainErr are the standard errors of E and of the training error from
// the spread of the fixed points of sampleBatches disjoint batches of the draws.
//
// At lambda = 0 without label noise the softmax loss is zero exactly on the S whose indices
// match the teacher's up to the shift h -> h + c 1 1^T: the limit lambda -> 0+ is the minimal
// penalty S that fits the M - 1 = K/2 observed directions of N = alpha D^2 samples, the linear
// channel's estimator at alpha_lin = alpha K/2 (K = T^2 + T - 2). Solve computes it so, by
// quadrature.

// DefaultSamples is the Monte Carlo size of the softmax channel's averages.
const DefaultSamples = 8192

// sampleBatches is the number of disjoint batches whose fixed points give the stated errors.
const sampleBatches = 16

// MinSamples is the smallest Problem.Samples: 64 draws in each of the batches of the stated
// errors.
const MinSamples = 64 * sampleBatches

// softmaxSeed fixes the Monte Carlo draws of the channel averages.
const softmaxSeed = 0x61696d2d65726d31 // "aim-erm1"

// directions returns K, the number of observed directions per sample times 2: T^2 + T - 2 for
// the softmax, 2 for the linear channel.
func (p Problem) directions() int {
	if p.T >= 2 {
		return p.T*p.T + p.T - 2
	}
	return 2
}

// samples returns the Monte Carlo size of p.
func (p Problem) samples() int {
	if p.Samples > 0 {
		return p.Samples
	}
	return DefaultSamples
}

// solveSoftmaxLimit solves lambda = 0 of the noiseless softmax as the linear channel's at
// alpha K/2.
func solveSoftmaxLimit(p Problem, o se.Options) (Point, error) {
	lin := p
	lin.T, lin.Beta, lin.Alpha = 0, 0, p.Alpha*float64(p.directions())/2
	pt, err := Solve(lin, o)
	pt.Problem = p
	// The softmax's outputs are bounded: its generalisation error on y is not 2E.
	pt.GenError = math.NaN()
	return pt, err
}

// averages are the channel's per-sample sums at one (m, q, Sigma).
type averages struct {
	sHat, qHat, fu, loss float64
	n                    int
}

func (a averages) add(b averages) averages {
	return averages{a.sHat + b.sHat, a.qHat + b.qHat, a.fu + b.fu, a.loss + b.loss, a.n + b.n}
}

// channelSums returns the sums over draws [lo, hi) of M - tr dP/domega, |f|^2, u*.f and l(P)
// at (m, q, sigma).
func channelSums(p Problem, lo, hi int, m, q, sigma float64, workers int) (averages, error) {
	T := max(p.T, 1)
	M := channel.Fields(T)
	ny := T * T
	if T == 1 {
		ny = 1
	}
	stride := 2*M + ny
	Q0 := p.prior().Q0()
	a, s := m/Q0, math.Sqrt(math.Max(q-m*m/Q0, 0))
	const chunk = 64
	type work struct {
		l                        *channel.SquareLoss
		sm                       *channel.Softmax
		z, u, omega, pr, g, h, y []float64
	}
	return par.MapReduce(workers, par.Chunks(hi-lo, chunk), func() (*work, error) {
		l, err := channel.NewSquareLoss(T, p.Beta)
		if err != nil {
			return nil, err
		}
		w := &work{l: l, z: make([]float64, stride), u: make([]float64, M), omega: make([]float64, M),
			pr: make([]float64, M), g: make([]float64, M), h: make([]float64, T*T), y: make([]float64, ny)}
		if T >= 2 {
			w.sm, _ = channel.NewSoftmax(T, p.Beta)
		}
		return w, nil
	}, func(w *work, c int) (averages, error) {
		clo, chi := par.Span(c, hi-lo, chunk)
		var acc averages
		for i := lo + clo; i < lo+chi; i++ {
			device.FillNormals(w.z, softmaxSeed, uint64(stride*i))
			for k := 0; k < M; k++ {
				w.u[k] = math.Sqrt(Q0) * w.z[k]
				w.omega[k] = a*w.u[k] + s*w.z[M+k]
			}
			if T == 1 {
				w.y[0] = math.Sqrt2 * w.u[0]
			} else {
				channel.HFromU(w.h, w.u, T)
				w.sm.Output(w.y, w.h)
			}
			for k := range w.y {
				w.y[k] += math.Sqrt(p.Noise) * w.z[2*M+k]
			}
			_, trJ, err := w.l.Prox(w.pr, w.y, w.omega, sigma)
			if err != nil {
				return acc, fmt.Errorf("draw %d: %w", i, err)
			}
			var f2, fu float64
			for k := 0; k < M; k++ {
				f := (w.pr[k] - w.omega[k]) / sigma
				f2 += f * f
				fu += f * w.u[k]
			}
			acc.sHat += (float64(M) - trJ) / sigma
			acc.qHat += f2
			acc.fu += fu
			acc.loss += w.l.Grad(w.g, w.pr, w.y)
			acc.n++
		}
		return acc, nil
	}, averages{}, averages.add)
}

// hats returns (m-hat, q-hat, Sigma-hat) and the mean training loss from channel sums.
func hats(p Problem, s averages, m float64) (mh, qh, sh, loss float64) {
	Q0 := p.prior().Q0()
	n := float64(s.n)
	sh = 2 * p.Alpha * s.sHat / n
	qh = 2 * p.Alpha * s.qHat / n
	mh = 2*p.Alpha*s.fu/n/Q0 + m/Q0*sh
	return mh, qh, sh, s.loss / n
}

// channelSide is the prior side at the hats: the next (m, q, Sigma) and the prior's values.
func channelSide(p Problem, mh, qh, sh float64) (next [3]float64, pr prior, kappa float64, err error) {
	if !(mh > 0) || !(qh > 0) || !(sh > 0) {
		return next, pr, 0, fmt.Errorf("erm: the channel's m-hat = %g, q-hat = %g, Sigma-hat = %g: need all > 0", mh, qh, sh)
	}
	d := qh / (mh * mh)
	sp, err := p.prior().Noisy(d)
	if err != nil {
		return next, pr, 0, fmt.Errorf("erm: Delta_eff = %g: %w", d, err)
	}
	pr.sp = sp
	if p.Penalty == Ridge {
		s := mh / (sh + 4*p.Lambda)
		Q0 := p.prior().Q0()
		pr.q, pr.m, pr.trS, pr.rank, pr.i = Q0+d, Q0, p.prior().Mean(), 1, 1
		return [3]float64{s * Q0, s * s * (Q0 + d), 1 / (sh + 4*p.Lambda)}, pr, s, nil
	}
	pr.tau = 2 * p.Lambda / mh
	pr.i, pr.q, pr.m, pr.trS, pr.rank, pr.err = integrals(sp, pr.tau)
	kappa = mh / sh
	return [3]float64{kappa * pr.m, kappa * kappa * pr.q, pr.i / sh}, pr, kappa, nil
}

// solveChannel solves the state evolution of p with its channel's Monte Carlo averages over
// draws [lo, hi), from x0 = (m, q, Sigma): damped iteration (damping at least coarseDamping,
// without jumps) to coarseTol, then Newton's method with a Jacobian by differences (engine/fixedpoint)
// to o.Tol; with newton, Newton's method from x0 at once. Result.Evals counts the evaluations of
// the map, the Jacobians' included.
func solveChannel(p Problem, o se.Options, lo, hi int, x0 []float64, workers int, newton bool) (fixedpoint.Result, error) {
	evals := 0
	// The iterate is (m, q, log Sigma): Sigma > 0 whatever the steps do, and it grows without
	// bound as lambda -> 0 in the interpolating phase.
	G := func(dst, x []float64) error {
		evals++
		m, q, sigma := x[0], x[1], math.Exp(x[2])
		s, err := channelSums(p, lo, hi, m, q, sigma, workers)
		if err != nil {
			return err
		}
		mh, qh, sh, _ := hats(p, s, m)
		next, _, _, err := channelSide(p, mh, qh, sh)
		dst[0], dst[1], dst[2] = next[0], next[1], math.Log(math.Max(next[2], math.Exp(logSigmaMin)))
		return err
	}
	jac := func(J, x, gx []float64) error {
		xp, gp := append([]float64(nil), x...), make([]float64, 3)
		for j := 0; j < 3; j++ {
			h := 1e-6 * math.Max(1, math.Abs(x[j]))
			xp[j] = x[j] + h
			if err := G(gp, xp); err != nil {
				return err
			}
			xp[j] = x[j]
			for i := 0; i < 3; i++ {
				J[i*3+j] = (gp[i] - gx[i]) / h
			}
		}
		return nil
	}
	y := []float64{x0[0], x0[1], math.Log(x0[2])}
	fo := fixedpoint.Options{Damping: math.Max(o.Damping, coarseDamping), Tol: coarseTol, MaxIter: o.MaxIter, Lower: logSigmaMin, Upper: 1e3}
	var r fixedpoint.Result
	var err error
	if !newton {
		r, err = fixedpoint.Solve(G, y, fo)
		if !r.Converged {
			return r, err
		}
		y = r.GX
	}
	fo.Tol, fo.Jacobian, fo.MaxIter = o.Tol, jac, max(o.MaxIter-evals, 1)
	r, err = fixedpoint.Solve(G, y, fo)
	r.Evals = evals
	for _, v := range [][]float64{r.X, r.GX} {
		if len(v) == 3 {
			v[2] = math.Exp(v[2])
		}
	}
	return r, err
}

// The damped phase of solveChannel: at least this damping, and no Aitken jumps (which throw
// Sigma past the fixed point where the estimator interpolates), to this distance; Newton's
// method takes it from there. logSigmaMin is the floor of log Sigma (Sigma = 0 when S-hat = 0).
const (
	coarseDamping = 0.5
	coarseTol     = 1e-2
	logSigmaMin   = -50
)

// solveSoftmax solves p (T >= 2, or the linear channel through the same Monte Carlo when
// called directly) and its Monte Carlo error.
func solveSoftmax(p Problem, o se.Options) (Point, error) {
	n := p.samples()
	if n < MinSamples {
		return Point{Problem: p}, fmt.Errorf("erm: %d Monte Carlo samples, need at least %d", n, MinSamples)
	}
	fail := func(r fixedpoint.Result, err error) (Point, error) {
		pt := Point{Problem: p, Iterations: r.Evals, TestError: math.NaN()}
		if err == nil || errors.Is(err, fixedpoint.ErrNotConverged) {
			err = fmt.Errorf("%w: %v", ErrNotConverged, err)
		}
		return pt, fmt.Errorf("erm: T = %d, rho = %g, alpha = %g, Delta = %g, lambda = %g: %w", p.T, p.Rho, p.Alpha, p.Noise, p.Lambda, err)
	}
	// From S-hat = 0 (m = q = 0) with a unit response.
	r, err := solveChannel(p, o, 0, n, []float64{0, 0, 1}, p.Workers, false)
	if !r.Converged {
		return fail(r, err)
	}
	x := r.GX
	s, err := channelSums(p, 0, n, x[0], x[1], x[2], p.Workers)
	if err != nil {
		return fail(r, err)
	}
	mh, qh, sh, loss := hats(p, s, x[0])
	next, pr, kappa, err := channelSide(p, mh, qh, sh)
	if err != nil {
		return fail(r, err)
	}
	Q0 := p.prior().Q0()
	e := Q0 - 2*next[0] + next[1]
	pt := Point{Problem: p, TestError: e, GenError: math.NaN(), TrainError: loss, M: next[0], Q: next[1],
		TrS: kappa * pr.trS, Rank: pr.rank, Tau: pr.tau, Shrink: kappa, DeltaEff: pr.sp.Noise(),
		I: pr.i, QuadError: kappa*kappa*pr.err + math.Abs(e-(Q0-2*x[0]+x[1])), Iterations: r.Evals, Converged: true}
	if p.Penalty == Ridge {
		pt.TrS, pt.Tau = kappa*p.prior().Mean(), 0
	}
	// The Monte Carlo errors: the spread of the batches' fixed points, from the full one.
	var es, ts []float64
	bo := o
	bo.MaxIter = max(o.MaxIter, 200)
	for b := 0; b < sampleBatches; b++ {
		lo, hi := par.Span(b, n, (n+sampleBatches-1)/sampleBatches)
		rb, err := solveChannel(p, bo, lo, hi, x, p.Workers, true)
		if !rb.Converged {
			return fail(rb, err)
		}
		xb := rb.GX
		sb, err := channelSums(p, lo, hi, xb[0], xb[1], xb[2], p.Workers)
		if err != nil {
			return fail(rb, err)
		}
		_, _, _, lb := hats(p, sb, xb[0])
		es, ts = append(es, Q0-2*xb[0]+xb[1]), append(ts, lb)
	}
	pt.TestErr, pt.TrainErr = stdErr(es), stdErr(ts)
	return pt, nil
}

// stdErr returns the standard error of the mean of the full sample estimated from equal
// batches: sd(batches)/sqrt(len).
func stdErr(es []float64) float64 {
	var mean, v float64
	for _, x := range es {
		mean += x
	}
	mean /= float64(len(es))
	for _, x := range es {
		v += (x - mean) * (x - mean)
	}
	v /= float64(len(es) - 1)
	return math.Sqrt(v / float64(len(es)))
}
