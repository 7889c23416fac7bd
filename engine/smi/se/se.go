// Package se solves the state evolution of Bayes-optimal learning in the sequence multi-index
// model of deep tied attention (docs/theory/smi.md 2): the diagonal P x P overlaps Q with their
// conjugates q-hat from the channel's posterior quadrature, the weak-recovery thresholds of
// each layer (2.3) and the conditional (grand-staircase) thresholds, the generalisation errors
// (the authors' plug-in error and the Bayes-optimal one), and the Monte Carlo standard error of
// every overlap (Point.QErr).
package se

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/root"
	"github.com/aimtheory/aim/engine/smi"
)

// Point is a fixed point of the SMI state evolution.
type Point struct {
	Alpha float64
	Q     []float64 // diagonal overlaps Q_ll = E[w-hat_l . w*_l]/D, l = 1..L
	QHat  []float64 // their conjugates q-hat_ll
	// QErr is the Monte Carlo standard error of each Q_ll at the fixed point: the covariance of
	// the channel average F over the replicates, propagated through q-hat = alpha F,
	// Q = q-hat/(1 + q-hat) and the fixed point (linearisation.cov). 0 for a frozen layer, NaN
	// with one replicate or when not converged, +Inf for a layer in Undetermined.
	QErr []float64
	// Undetermined lists the layers (0-based) that ended at the sampled floor, reported as
	// Q_ll = 0, whose stability the draws cannot settle: the map's slope there,
	// s_l = G_l(Q)/SampledFloor with the floor's clamp undone, is not below 1 by 2 of its
	// standard errors (StabilityMargin). Q_ll = 0 is a fixed point of the exact map at every
	// alpha, but the exact iteration leaves it where s_l > 1, for a fixed point of another
	// branch that the sampled one never reached; the linearised QErr cannot see that, so
	// these layers' QErr is +Inf. More draws (Options.MCError grows them) settle it.
	Undetermined []FloorSlope
	// Samples is the number of draws per iteration of the last solve (Options.Samples
	// rounded up to a multiple of Replicates, or more with Options.MCError).
	Samples int
	// ErrorMissed is set when Options.MCError > 0 and some QErr is still above it at
	// Options.MaxSamples draws.
	ErrorMissed bool
	// Iterations counts the evaluations of the SE map (with Newton, its Jacobians' too), summed
	// over the sample counts solved at.
	Iterations int
	Converged  bool
	// NoiseLimited is set when the last solve stopped by the Monte Carlo noise rule of
	// engine/fixedpoint (sampled integrals: the iterates jittered within half the map's
	// standard error, so the distance left to the fixed point is at most about half of QErr)
	// rather than by Tol.
	NoiseLimited bool
	// Inexact counts the last iteration's channel integrals that stopped at their budget
	// (sampled: an effective sample size below smi.MinSampleESS) or failed (dropped).
	Inexact int
	// PsiOut is the output part of the free entropy at Q (the channel average of the last
	// iteration, on the SE's draws),
	//
	//	psi_out(Q) = E_{xi, eta} log Z_out(y; omega, V),  omega = Q^{1/2} xi, y = g(omega + V^{1/2} eta),
	//
	// with Z_out the density of the output's pre-activation pair +-u (smi.DeepMoments.LogZ), and
	// PsiOutErr its Monte Carlo standard error over the replicates (NaN with one).
	PsiOut, PsiOutErr float64
	// FreeEntropy is Phi(Q, q-hat; alpha) = psi_in(q-hat) - tr(Q q-hat)/2 + alpha psi_out(Q) at
	// the fixed point (FreeEntropy), NaN when not converged. FreeEntropyErr = alpha PsiOutErr
	// is its Monte Carlo standard error: Phi is stationary in Q and q-hat, so the draws move it
	// through psi_out's average alone, to first order.
	FreeEntropy, FreeEntropyErr float64
	// Start is where the reported fixed point's iteration started (Uninformed or Informed);
	// with Options.Start = Both it is Both where the two starts reached one fixed point
	// (Coexist false: the point is the uninformed one), or where one of them did not converge
	// (Converged false).
	Start Start
	// Coexist is set (Options.Start = Both) where the two starts reached two distinct fixed
	// points (Options.Coexist); Other is then the one not reported, of smaller free entropy.
	Coexist bool
	Other   *Point
}

// ErrNotBracketed is wrapped by ConditionalThreshold's error when alpha F - 1 has the same
// sign at both ends of the search interval (it is root.ErrNotBracketed).
var ErrNotBracketed = root.ErrNotBracketed

// ErrNotConverged is wrapped by ConditionalThreshold's error when the restricted SE did not
// converge at a trial alpha within MaxIter (it is fixedpoint.ErrNotConverged).
var ErrNotConverged = fixedpoint.ErrNotConverged

// ErrDiverged is wrapped by the errors of an SMI state evolution that produced NaN.
var ErrDiverged = errors.New("SMI state evolution diverged")

// Solve iterates the state evolution of docs/theory/smi.md 2.2 for the deep attention channel at
// sample complexity alpha = N/D:
//
//	q-hat_ll = alpha E_{xi, eta}[ sum_tokens g_out,l(y, omega, V)^2 ],
//	omega = Q^{1/2} xi,  Z = omega + V^{1/2} eta,  y = g(Z),  V = I - Q + epsilon I,
//	Q_new = q-hat / (1 + q-hat),  Q <- (1 - theta) Q_new + theta Q,
//
// with g_out = V^{-1}(E[Z | y, omega, V] - omega) from the channel's posterior quadrature. Q is
// diagonal: the sign symmetry w_l -> -w_l of each layer makes E[z_l z_l'^T | y] = 0 for
// l != l', so only the diagonal is iterated (the authors' CSVs store the same).
//
// With two replicates or more the point carries the Monte Carlo standard error of each Q_ll
// (Point.QErr); with o.MCError > 0 the draws grow until it is below o.MCError or the
// draws reach o.MaxSamples, each solve starting from the last fixed point.
func Solve(ch *smi.Deep, alpha float64, o Options) (Point, error) {
	if err := o.validate(ch); err != nil {
		return Point{}, err
	}
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return Point{}, fmt.Errorf("SMI SE: alpha = %g: need alpha > 0", alpha)
	}
	if o.Start == Both {
		b, err := SolveBranches(ch, alpha, o)
		if err != nil {
			return Point{}, err
		}
		return b.Optimal(), nil
	}
	P := ch.P()
	Q := make([]float64, P)
	init := o.Init
	if o.Start == Informed {
		init = QInformed
	}
	for l := range Q {
		if !o.frozen(l) {
			Q[l] = init
			if o.start != nil {
				Q[l] = math.Max(init, o.start[l])
			}
		}
	}
	n := o.Replicates * o.perReplicate(o.Samples)
	maxN := o.Replicates * o.perReplicate(o.MaxSamples)
	pt, err := solveAt(ch, alpha, o, n, Q, false)
	iters := pt.Iterations
	for err == nil && o.MCError > 0 && pt.Converged && !(maxOf(pt.QErr) <= o.MCError) && n < maxN {
		// The error falls at least as 1/sqrt(n) (plain Monte Carlo; the shifted Halton points
		// do better), so (err / target)^2 times the draws are enough: grow by that power of
		// two, at least doubling.
		// A layer whose stability is undetermined (+Inf) doubles them.
		grow := 2
		for e := maxFinite(pt.QErr); float64(grow) < (e/o.MCError)*(e/o.MCError) && grow < maxN; grow *= 2 {
		}
		n = min(n*grow, maxN)
		pt, err = solveAt(ch, alpha, o, n, pt.Q, o.Newton)
		iters += pt.Iterations
	}
	pt.Iterations = iters
	pt.ErrorMissed = err == nil && o.MCError > 0 && pt.Converged && !(maxOf(pt.QErr) <= o.MCError)
	pt.Start = o.Start
	return pt, err
}

// maxOf returns the largest entry of xs (NaN if any is NaN).
func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		if math.IsNaN(x) {
			return x
		}
		m = math.Max(m, x)
	}
	return m
}

// maxFinite returns the largest finite entry of xs (NaN if any is NaN).
func maxFinite(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		if math.IsNaN(x) {
			return x
		}
		if !math.IsInf(x, 0) {
			m = math.Max(m, x)
		}
	}
	return m
}

// solveAt solves the SE from Q0 with n draws per iteration (a multiple of o.Replicates),
// by Newton steps when newton is set (Options.Newton), and, with two replicates or more, the
// standard errors of the fixed point.
func solveAt(ch *smi.Deep, alpha float64, o Options, n int, Q0 []float64, newton bool) (Point, error) {
	P := ch.P()
	o.Samples = n
	pt := Point{Alpha: alpha, Samples: n, PsiOut: math.NaN(), PsiOutErr: math.NaN(), FreeEntropy: math.NaN(), FreeEntropyErr: math.NaN()}
	// The map Q -> Q_new, with its q-hat, the covariance of F, psi_out and the inexact count
	// kept for the last two points it was evaluated at (the solver's answer is one of them).
	type eval struct {
		q, qh, fcov []float64
		psi, psiErr float64
		inexact     int
	}
	var last [2]eval
	G := func(dst, Q []float64) error {
		f, err := fisher(ch, Q, o)
		if err != nil {
			return err
		}
		qh := o.update(dst, Q, f.F.mean, alpha)
		last[0], last[1] = last[1], eval{q: append([]float64(nil), Q...), qh: qh, fcov: f.F.cov, psi: f.psi, psiErr: f.psiErr, inexact: f.F.inexact}
		return nil
	}
	so := o.solver()
	if o.Draws > 0 && o.Replicates > 1 {
		// The sampled map is rough below its Monte Carlo error (fixedpoint's Noise): the
		// standard error of G_l = q-hat_l/(1 + q-hat_l) from that of F_l, alpha sd(F_l)/(1 +
		// q-hat_l)^2.
		so.Noise = func(dst []float64) {
			e := last[1]
			for l := range dst {
				dst[l] = alpha * math.Sqrt(math.Max(e.fcov[l*P+l], 0)) / ((1 + e.qh[l]) * (1 + e.qh[l]))
			}
		}
	}
	var lin linearisation // the last Jacobian of the Newton steps, and where it was taken
	var linQ []float64
	jacEvals := 0 // the Jacobians' evaluations of the map
	if newton {
		so.Jacobian = func(J, Q, _ []float64) error {
			e := last[1]
			var err error
			if lin, err = linearise(ch, alpha, Q, e.qh, e.fcov, o); err != nil {
				return err
			}
			linQ = slices.Clone(Q)
			jacEvals += 2 * len(lin.nw.Free)
			copy(J, lin.J)
			return nil
		}
	}
	r, err := fixedpoint.Solve(G, Q0, so)
	switch {
	case errors.Is(err, fixedpoint.ErrDiverged):
		return pt, fmt.Errorf("%w at alpha = %g: %v", ErrDiverged, alpha, err)
	case err != nil && !errors.Is(err, fixedpoint.ErrNotConverged):
		return pt, fmt.Errorf("SMI SE at alpha = %g, evaluation %d: %w", alpha, r.Evals+1, err)
	}
	pt.Q, pt.Iterations, pt.Converged, pt.NoiseLimited = r.X, r.Evals+jacEvals, r.Converged, r.NoiseLimited
	var fcov []float64
	for _, e := range last {
		if slices.Equal(e.q, r.X) {
			pt.QHat, pt.Inexact, fcov = e.qh, e.inexact, e.fcov
			pt.PsiOut, pt.PsiOutErr = e.psi, e.psiErr
		}
	}
	var atFloor []int // the layers that ended at the floor, with their unclamped q-hat
	var floorQHat []float64
	if fl := o.floor(); fl > 0 && pt.Converged {
		pt.Q = slices.Clone(pt.Q)
		for l, q := range pt.Q {
			if !o.frozen(l) && q <= fl*(1+1e-9) { // the damped mean of two floors rounds up
				pt.Q[l] = 0
				atFloor = append(atFloor, l)
				if pt.QHat != nil {
					floorQHat = append(floorQHat, pt.QHat[l])
					pt.QHat[l] = 0
				}
			}
		}
	}
	if pt.Converged && pt.QHat != nil {
		pt.FreeEntropy = FreeEntropy(alpha, pt.Q, pt.QHat, pt.PsiOut)
		pt.FreeEntropyErr = alpha * pt.PsiOutErr
	}
	pt.QErr = make([]float64, P)
	for l := range pt.QErr {
		if !o.frozen(l) {
			pt.QErr[l] = math.NaN()
		}
	}
	if o.noError || o.Replicates < 2 || !pt.Converged || fcov == nil {
		return pt, nil
	}
	if !slices.Equal(linQ, pt.Q) { // the Newton steps' last Jacobian is at the answer
		if lin, err = linearise(ch, alpha, pt.Q, pt.QHat, fcov, o); err != nil {
			return pt, fmt.Errorf("SMI SE at alpha = %g: the Monte Carlo error of Q: %w", alpha, err)
		}
	}
	cov := lin.cov(P)
	for l := range pt.QErr {
		if !o.frozen(l) {
			pt.QErr[l] = math.Sqrt(math.Max(cov[l*P+l], 0))
		}
	}
	for i, l := range atFloor {
		if i >= len(floorQHat) {
			break
		}
		if f := floorSlope(l, floorQHat[i], fcov[l*P+l], alpha); f.Slope+StabilityMargin*f.SlopeErr >= 1 {
			pt.Undetermined = append(pt.Undetermined, f)
			pt.QErr[l] = math.Inf(1)
		}
	}
	return pt, nil
}

// StabilityMargin is the number of standard errors by which a layer's slope at the sampled
// floor must lie below 1 for Q_ll = 0 to be reported as settled (Point.Undetermined).
const StabilityMargin = 2

// FloorSlope is the slope of the SE map of layer Layer (0-based) at the sampled floor,
// Slope = G_l/SampledFloor with G_l = q-hat/(1 + q-hat) unclamped, and its Monte Carlo
// standard error SlopeErr = alpha sd(F_l) / ((1 + q-hat)^2 SampledFloor). G_l(0) = 0 exactly
// (the sign symmetry), so Slope is the secant slope of G_l from 0 to the floor: the trivial
// fixed point is stable in layer l where it is below 1.
type FloorSlope struct {
	Layer           int
	Slope, SlopeErr float64
}

// floorSlope returns layer l's FloorSlope from its q-hat = alpha F_l at the floor and the
// variance varF of the average F_l.
func floorSlope(l int, qhat, varF, alpha float64) FloorSlope {
	d := (1 + qhat) * (1 + qhat)
	return FloorSlope{Layer: l, Slope: qhat / (1 + qhat) / SampledFloor, SlopeErr: alpha * math.Sqrt(math.Max(varF, 0)) / d / SampledFloor}
}

// update writes the SE map Q_new,l = q-hat_l / (1 + q-hat_l), q-hat_l = alpha F_l, into dst
// (Q_ll itself for a frozen layer) and returns q-hat (0 for a frozen layer). q-hat >= 0 by
// definition; an unbiased sampled F (Options.Draws) can fall below 0 where the true one is 0,
// and q-hat is clipped there, with Q_new at least o.floor().
func (o Options) update(dst, Q, F []float64, alpha float64) []float64 {
	qh := make([]float64, len(Q))
	for l := range Q {
		if o.frozen(l) {
			dst[l] = Q[l]
			continue
		}
		qh[l] = math.Max(alpha*F[l], 0)
		dst[l] = math.Max(qh[l]/(1+qh[l]), o.floor())
	}
	return qh
}
