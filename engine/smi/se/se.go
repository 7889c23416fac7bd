// Package se solves the state evolution of Bayes-optimal learning in the sequence multi-index
// model of deep tied attention (docs/SMI.md 2): the diagonal P x P overlaps Q with their
// conjugates q-hat from the channel's posterior quadrature, the weak-recovery thresholds of
// each layer (2.3) and the conditional (grand-staircase) thresholds, the generalisation errors
// (the authors' plug-in error and the Bayes-optimal one), and the Monte Carlo standard error of
// every overlap (Point.QErr).
package se

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/root"
	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/stream"
	"github.com/aimtheory/aim/internal/par"
)

// Options control the state evolution of the sequence multi-index model (docs/SMI.md 2.2).
type Options struct {
	// Samples is the number of Monte Carlo draws (xi, eta) of the channel average per
	// iteration, rounded up to a multiple of Replicates: Replicates independent randomisations
	// of Samples/Replicates draws each. The same draws (common random numbers, from Seed) serve
	// every iteration and every alpha, so the map is deterministic and the curves are smooth in
	// alpha. With MCError > 0 it is the count the first solve uses.
	Samples int
	Seed    uint64
	// MonteCarlo draws plain pseudo-random normals. The default is randomised quasi-Monte Carlo:
	// a Halton sequence (one prime per coordinate) shifted modulo 1 by a uniform vector drawn
	// from Seed (Cranley-Patterson), mapped to normals by Phi^{-1}; the channel average is
	// smooth in (xi, eta), so its error falls faster than 1/sqrt(Samples).
	MonteCarlo bool
	// Replicates R is the number of independent randomisations the average is split into: R
	// Cranley-Patterson shifts of the same Halton points 1..n/R (or, with MonteCarlo, R
	// independent batches of n/R pseudo-random draws). The channel average is the mean of the R
	// replicate means m_r and its covariance is estimated without bias by
	// sum_r (m_r - m)(m_r - m)^T / (R (R - 1)): this is where Point.QErr comes from. R = 1 is a
	// single shift and leaves the error unknown (NaN).
	Replicates int
	// MCError, when positive, is the target standard error of every free Q_ll at the fixed
	// point (Point.QErr). The SE is solved at Samples draws; while the achieved error is above
	// MCError, the draws grow by the power of two (at least 2) that the 1/sqrt(n) law says is
	// enough, up to MaxSamples, and the iteration continues from the current fixed point. A
	// point that misses the target at MaxSamples has Point.ErrorMissed set. 0: Samples draws,
	// fixed.
	MCError    float64
	MaxSamples int // the cap on the draws with MCError (64000)
	// Newton makes the solves at more draws (MCError's, after the first) take Newton steps from
	// the last fixed point (engine/fixedpoint's Newton mode, with the Jacobian of linearise:
	// 1 + 2 P evaluations a step) instead of damped ones. Where the map is flat (a layer rising
	// behind a sharp one, L = 3 and 4) damped iteration needs tens of evaluations at each
	// count and Newton one to three steps; Newton keeps an unstable fixed point it starts at
	// (a layer at 0 above its threshold), which the first, damped solve has left.
	Newton bool
	// Damping theta in [0, 1) is the weight on the old iterate, Q <- (1 - theta) Q_new +
	// theta Q (engine/fixedpoint's convention; the authors write rho = 1 - theta).
	// DefaultOptions(L) sets the authors' choice, AuthorsDamping(L).
	Damping float64
	// Epsilon regularises V = I - Q + Epsilon I, as the authors do (1e-3).
	Epsilon float64
	Init    float64 // Q starts at Init I (0.05) from the Uninformed start
	// Start is where the iteration starts: Uninformed (the zero value) at Init I, the authors'
	// start; Informed at QInformed I, next to the planted weights; Both solves from both (twice
	// the cost) and reports the fixed point of larger free entropy where they differ
	// (Branches).
	Start   Start
	MaxIter int // iteration cap (per solve: with MCError, each sample count has its own)
	// Tol stops the iteration when every layer's estimated distance to the fixed point,
	// |G(Q) - Q| / (1 - slope) (engine/fixedpoint), is below it. With Draws (and Replicates >
	// 1) a layer whose iterates jitter within half the map's standard error has also settled
	// (fixedpoint's noise rule; Point.NoiseLimited).
	Tol float64
	// Frozen layers keep Q_ll = 0: the SE restricted to the other layers (the conditional
	// thresholds of docs/SMI.md 2.3 and the "one layer" curves).
	Frozen  []bool
	Workers int // goroutines for the channel quadrature; 0 is GOMAXPROCS
	// QuadTol and QuadMaxEval override the channel quadrature's tolerance and evaluation
	// budget (smi.DefaultDeepTol, DefaultDeepMaxEval) when positive.
	QuadTol     float64
	QuadMaxEval int
	// Draws, when positive, replaces the cubature in q-hat and psi_out at L >= 3 by importance
	// sampling (smi.DeepSampler) with Draws draws per channel integral, split into two
	// independent halves whose posterior means multiply: E[m_a m_b] = m m^T, so the sampling
	// noise adds variance to the average (counted in Point.QErr) but no bias, where the
	// cubature's budget-capped error is a bias. DefaultOptions(L >= 3) sets DefaultDraws; 0 is the
	// cubature. The stability coefficients (Stability) take the halves' covariances the same
	// way. L = 4 has no cubature and needs Draws.
	Draws int
	// Device runs the sampled integrals (Draws), all of one SE map evaluation in one batch
	// (smi.SampleBatch): its sampler (device.DeepSampler; the GPU's kernel or the CPU
	// backend's twin). nil runs the CPU twin in this process on Workers goroutines; the
	// estimates are the same to rounding.
	Device device.Device
	// start, when set, is the initial diagonal (continuation along a curve); free overlaps
	// below Init start at Init.
	start []float64
	// noError skips the standard errors of the fixed point (their 2 P map evaluations), where
	// nothing reads them (the conditional thresholds' restricted SE).
	noError bool
}

// DefaultOptions returns, for L layers, 4000 samples in 8 replicates, seed 1, a fixed sample
// count (MCError 0, with a cap of 64000 when it is set), the authors' damping
// (AuthorsDamping), epsilon 1e-3, Q0 = 0.05 I, at most 200 iterations and a tolerance of 1e-5.
func DefaultOptions(L int) Options {
	o := Options{Samples: 4000, Seed: 1, Replicates: 8, MaxSamples: 64000, Damping: AuthorsDamping(L),
		Epsilon: 1e-3, Init: 0.05, MaxIter: 200, Tol: 1e-5}
	if L >= 3 {
		o.Draws = DefaultDraws
	}
	return o
}

// DefaultDraws is the number of importance-sampling draws per channel integral of the L = 3
// SE (Options.Draws): two halves of 2000. The ratio estimator's bias is O(1/n) to first order
// and corrected, but the weights' tails leave some: at the alpha = 1.5 fixed point,
// Q = (0.606, 0.519, 0.9948), F_1 over 4000 samples is 1.0214, 1.0256, 1.0342, 1.0341 and
// 1.0368 at 1000, 2000, 4000, 8000 and 16 000 draws (noise 0.0016), so from 4000 draws on
// the bias is below the noise, and at 2000 it is 1%.
const DefaultDraws = 4000

// MaxDraws bounds Options.Draws: each half reads at most stream.SMISEDrawNormals normals, 2(L-1)
// per draw (the bound is the deepest sampled L's).
const MaxDraws = 2 * (stream.SMISEDrawNormals / (2 * (smi.MaxSampledLayers - 1)))

// Start is where the SE iteration starts (engine/fixedpoint.Start, shared with the AIM's SE).
type Start = fixedpoint.Start

// The starts of the SMI SE.
const (
	Uninformed = fixedpoint.Uninformed // Q = Init I (0.05 I), the authors' start
	Informed   = fixedpoint.Informed   // Q = QInformed I, next to the teacher
	Both       = fixedpoint.Both       // both; the fixed point of larger free entropy
)

// ParseStart parses "uninformed", "informed" or "both" (fixedpoint.ParseStart).
func ParseStart(s string) (Start, error) { return fixedpoint.ParseStart(s) }

// QInformed is the overlap of every free layer at the informed start, Q = (1 - 1e-4) Q0 with
// Q0 = E[w*_l^2] = 1 the prior's second moment: inside the basin of a fixed point of nearly
// perfect recovery, and far enough from 1 that V = 1 - Q + epsilon stays well resolved by the
// channel quadrature (epsilon = 1e-3 dominates it).
const QInformed = 1 - 1e-4

// MaxReplicates bounds Options.Replicates: the shifts take 2 P M normals each from the seed's
// SMISEShift range (engine/stream), which holds 2^20.
const MaxReplicates = 1024

// AuthorsDamping returns the damping theta (weight on the old iterate) of the authors' SE code:
// 1 - 0.8 for L = 2 and 1 - 0.6 for L = 3.
func AuthorsDamping(L int) float64 {
	if L >= 3 {
		return 1 - 0.6
	}
	return 1 - 0.8
}

func (o Options) validate(ch *smi.Deep) error {
	if ch.L > smi.MaxDeepLayers && ch.M == 2 && o.Draws == 0 {
		return fmt.Errorf("SMI SE: L = %d layers: the cubature stops at L = %d; deeper channels need the sampled integrals (draws > 0)", ch.L, smi.MaxDeepLayers)
	}
	if err := ch.CheckPosterior(o.Draws > 0 && ch.L >= 3); err != nil {
		return err
	}
	switch {
	case o.Samples < 1:
		return fmt.Errorf("SMI SE: samples = %d: need >= 1", o.Samples)
	case o.Replicates < 1 || o.Replicates > MaxReplicates:
		return fmt.Errorf("SMI SE: replicates = %d: need 1 <= replicates <= %d", o.Replicates, MaxReplicates)
	case !(o.MCError >= 0) || math.IsInf(o.MCError, 0):
		return fmt.Errorf("SMI SE: MC error target = %g: need >= 0 (0: a fixed sample count)", o.MCError)
	case o.MCError > 0 && o.Replicates < 2:
		return fmt.Errorf("SMI SE: an MC error target needs at least 2 replicates (the error is their spread), got %d", o.Replicates)
	case o.Newton && o.MCError == 0:
		return fmt.Errorf("SMI SE: Newton refines the solves at more draws of an MC error target: set MCError")
	case o.MCError > 0 && o.MaxSamples < o.Samples:
		return fmt.Errorf("SMI SE: max samples = %d is below samples = %d", o.MaxSamples, o.Samples)
	case !(o.Epsilon >= 0) || o.Epsilon >= 1:
		return fmt.Errorf("SMI SE: epsilon = %g: need 0 <= epsilon < 1", o.Epsilon)
	case !(o.Init > 0 && o.Init < 1):
		return fmt.Errorf("SMI SE: init = %g: need 0 < init < 1", o.Init)
	case o.Draws < 0 || o.Draws > MaxDraws:
		return fmt.Errorf("SMI SE: draws = %d: need 0 (the cubature) or 4 <= draws <= %d", o.Draws, MaxDraws)
	case o.Draws > 0 && o.Draws < 4:
		return fmt.Errorf("SMI SE: draws = %d: need at least 4 (two halves of 2)", o.Draws)
	case o.Draws > 0 && ch.L < 3:
		return fmt.Errorf("SMI SE: draws = %d: importance sampling is for L >= 3 (L = %d uses the cubature; set draws to 0)", o.Draws, ch.L)
	case o.Start < Uninformed || o.Start > Both:
		return fmt.Errorf("SMI SE: start = %v: want uninformed, informed or both", o.Start)
	}
	if err := o.solver().Validate(ch.P()); err != nil {
		return fmt.Errorf("SMI SE: %w", err)
	}
	return nil
}

// perReplicate returns the draws per replicate for n draws in all, ceil(n / Replicates).
func (o Options) perReplicate(n int) int { return (n + o.Replicates - 1) / o.Replicates }

// solver returns the fixed-point options of the SE on the diagonal overlaps Q in
// [o.floor(), 1).
func (o Options) solver() fixedpoint.Options {
	return fixedpoint.Options{Damping: o.Damping, Tol: o.Tol, MaxIter: o.MaxIter,
		Accelerate: true, Lower: o.floor(), Upper: 1 - 1e-9, Frozen: o.Frozen}
}

// SampledFloor is the smallest overlap of a free layer when the SE samples its channel
// integrals (Options.Draws). Q_ll = 0 is a fixed point of the exact map for every alpha (the
// sign symmetry makes E[z_l | y] = 0 there), unstable beyond the layer's threshold. The
// sampled map's noise near it is as often negative as positive (at L = 3, Q_ll = 1e-3 and a
// learned last layer, about 2e-3 in F_l per 1000 samples, as large as the signal), so without
// a floor an iterate that reached 0 would stay there even where 0 is unstable. From the floor
// an unstable layer grows and a stable one stays; a layer that ends at the floor is at the
// trivial fixed point and is reported as Q_ll = 0 (Point.Q, Point.QHat).
const SampledFloor = 0.01

// floor is the lower bound of the free overlaps: SampledFloor with Draws, else 0.
func (o Options) floor() float64 {
	if o.Draws > 0 {
		return SampledFloor
	}
	return 0
}

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

// ErrDiverged is wrapped by the errors of an SMI state evolution that produced NaN.
var ErrDiverged = errors.New("SMI state evolution diverged")

// Solve iterates the state evolution of docs/SMI.md 2.2 for the deep attention channel at
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

// frozen reports whether layer l is held at Q_ll = 0.
func (o Options) frozen(l int) bool { return o.Frozen != nil && o.Frozen[l] }

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

// Fisher returns, for each layer l, E[ sum_tokens g_out,l^2 ] over the SE's Monte Carlo
// draws at the diagonal overlaps Q (the average that q-hat = alpha times), and the number of
// channel integrals that stopped at their evaluation budget.
func Fisher(ch *smi.Deep, Q []float64, o Options) ([]float64, int, error) {
	f, err := fisher(ch, Q, o)
	return f.F.mean, f.F.inexact, err
}

// PsiOut returns the output part of the free entropy at the diagonal overlaps Q,
// psi_out(Q) = E_{xi, eta} log Z_out(y; omega, V) (Point.PsiOut), over the SE's Monte Carlo
// draws, with its standard error over the replicates (NaN with one). It is the same average
// as Fisher's, on the same channel integrals.
func PsiOut(ch *smi.Deep, Q []float64, o Options) (psi, stderr float64, err error) {
	if err := o.validate(ch); err != nil {
		return math.NaN(), math.NaN(), err
	}
	f, err := fisher(ch, Q, o)
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	return f.psi, f.psiErr, nil
}

// mapAverage is the SE map's channel average at Q: F (P entries, with the covariance of the
// average) and psi_out with its standard error.
type mapAverage struct {
	F           average
	psi, psiErr float64
}

// fisher is Fisher with the covariance of the average over the replicates, and psi_out from
// the same integrals (smi.DeepMoments.LogZ).
func fisher(ch *smi.Deep, Q []float64, o Options) (mapAverage, error) {
	P, M := ch.P(), ch.M
	V := make([]float64, P*P)
	for l := 0; l < P; l++ {
		V[l*P+l] = 1 - Q[l] + o.Epsilon
	}
	var batch *smi.SampleBatch
	if o.Draws > 0 {
		var err error
		if batch, err = sampleAll(ch, Q, V, o); err != nil {
			return mapAverage{}, err
		}
	}
	a, err := smiAverage(ch, o, P+1, func(acc []float64, w *smiWorker, xi, eta []float64) error {
		if batch != nil {
			return w.sampled(acc, batch, V, o.Draws/2)
		}
		if err := w.posterior(ch, Q, V, xi, eta); err != nil {
			return err
		}
		for k := 0; k < P; k++ {
			for l := 0; l < M; l++ {
				g := w.m.Mean[k*M+l] / V[k*P+k]
				acc[k] += g * g
			}
		}
		acc[P] += w.m.LogZ
		return nil
	})
	if err != nil {
		return mapAverage{}, err
	}
	n := P + 1
	f := mapAverage{F: average{mean: a.mean[:P], cov: make([]float64, P*P), inexact: a.inexact},
		psi: a.mean[P], psiErr: math.Sqrt(math.Max(a.cov[P*n+P], 0))}
	for k := 0; k < P; k++ {
		copy(f.F.cov[k*P:(k+1)*P], a.cov[k*n:k*n+P])
	}
	return f, nil
}

// smiWorker is one goroutine's work space.
type smiWorker struct {
	post        *smi.DeepPosterior
	m           *smi.DeepMoments
	half        [2]*smi.SampleMoments // the two halves' estimates, with Options.Draws
	sample      int                   // the current sample's index i R + r (its draws' stream offset)
	s           *smi.DeepScratch
	omega, z, u []float64
	xi          []float64
	cov, cov2   []float64 // (P M) x (P M) posterior covariances (cov2: the second half's)
}

// posterior draws one SE sample, omega = Q^{1/2} xi and Z = omega + V^{1/2} eta (Q and V
// diagonal), runs the forward map and takes the channel's posterior moments into w.m.
func (w *smiWorker) posterior(ch *smi.Deep, Q, V, xi, eta []float64) error {
	w.draw(ch, Q, V, xi, eta)
	return w.post.Moments(w.m, w.u, w.omega, V)
}

// draw sets omega = Q^{1/2} xi and Z = omega + V^{1/2} eta (Q and V diagonal) and the output's
// pre-activation u = v_L(Z).
func (w *smiWorker) draw(ch *smi.Deep, Q, V, xi, eta []float64) {
	P, M := ch.P(), ch.M
	for k := 0; k < P; k++ {
		for l := 0; l < M; l++ {
			w.omega[k*M+l] = math.Sqrt(Q[k]) * xi[k*M+l]
			w.z[k*M+l] = w.omega[k*M+l] + math.Sqrt(V[k*P+k])*eta[k*M+l]
		}
	}
	ch.Forward(w.u, w.z, nil, w.s)
}

// sampleAll runs the sampled channel integrals of every SE sample of smiAverage at once: a
// first pass of smiAverage's draws gives each sample's omega and u, then one
// smi.SampleBatch runs on o.Device (nil: the CPU twin). Task 2 i + h is half h (of o.Draws/2
// draws) of sample i = w.sample, with slot 2 i + h: its draws come from stream.SMISEDraw(i, h).
func sampleAll(ch *smi.Deep, Q, V []float64, o Options) (*smi.SampleBatch, error) {
	total := o.Replicates * o.perReplicate(o.Samples)
	b, err := ch.NewSampleBatch(2 * total)
	if err != nil {
		return nil, err
	}
	if _, err := smiAverage(ch, o, 0, func(_ []float64, w *smiWorker, xi, eta []float64) error {
		w.draw(ch, Q, V, xi, eta)
		for h := 0; h < 2; h++ {
			b.Set(2*w.sample+h, uint64(2*w.sample+h), w.u, w.omega, V)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := b.Run(o.Device, o.Draws/2, o.Seed, stream.SMISEDraws, stream.SMISEDrawNormals, o.Workers); err != nil {
		return nil, fmt.Errorf("smi se: %w", err)
	}
	return b, nil
}

// sampled adds one SE sample's terms of fisher from its two halves in b (sampleAll), each of
// draws draws: independent posterior means m_a, m_b, and acc[k] gets sum_tokens
// m_a m_b / V_kk^2 (E[m_a m_b] = E[m]^2 up to the O(1/n^2) bias left by the sampler), acc[P]
// the mean of the halves' log Z_out.
func (w *smiWorker) sampled(acc []float64, b *smi.SampleBatch, V []float64, draws int) error {
	P, M := len(acc)-1, len(w.u)
	if err := w.halves(b, draws); err != nil {
		return err
	}
	for k := 0; k < P; k++ {
		vk := V[k*P+k]
		for l := 0; l < M; l++ {
			acc[k] += w.half[0].Mean[k*M+l] * w.half[1].Mean[k*M+l] / (vk * vk)
		}
	}
	acc[P] += (w.half[0].LogZ + w.half[1].LogZ) / 2
	return nil
}

// halves takes the current sample's two halves (of draws draws each) from b into w.half; the
// sample is exact where both are.
func (w *smiWorker) halves(b *smi.SampleBatch, draws int) error {
	for h, m := range w.half {
		if err := b.Moments(m, 2*w.sample+h, draws); err != nil {
			return err
		}
	}
	w.m.Exact = w.half[0].Exact && w.half[1].Exact
	return nil
}

// smiChunk is the number of samples per deterministic reduction chunk.
const smiChunk = 64

// average is a Monte Carlo average of nOut values over the SE's draws.
type average struct {
	mean []float64 // the mean of the Replicates replicate means m_r
	// cov (nOut x nOut) estimates the covariance of mean without bias,
	// sum_r (m_r - mean)(m_r - mean)^T / (R (R - 1)); NaN for R = 1.
	cov     []float64
	inexact int // channel integrals that stopped at their budget, plus the dropped samples
}

// smiAverage averages f over o.Samples draws (xi, eta), each P x M iid N(0, 1), split into
// R = o.Replicates replicates of n = ceil(Samples / R) draws. Draw i of replicate r is the
// shifted Halton point i+1 with the r-th shift (the shifts are the consecutive blocks of 2 P M
// normals from the SMISEShift offset of o.Seed's stream), or with o.MonteCarlo the normals
// 2 s P M .. 2 (s+1) P M - 1 of the stream of o.Seed, s = i R + r: growing n keeps the draws
// already made, and R = 1 is the single shift. f adds its nOut values to acc. Chunks of
// smiChunk samples are summed in order (par.MapReduce), so the result does not depend on
// Workers. A sample whose f fails is dropped and its replicate's mean is over the others; the
// count returned adds the dropped samples to the inexact integrals, and more than 1% dropped is
// an error.
func smiAverage(ch *smi.Deep, o Options, nOut int, f func(acc []float64, w *smiWorker, xi, eta []float64) error) (average, error) {
	P, M := ch.P(), ch.M
	pm := P * M
	R := o.Replicates
	per := o.perReplicate(o.Samples)
	total := R * per
	shifts := make([]float64, R*2*pm)
	if !o.MonteCarlo {
		device.FillNormals(shifts, o.Seed, stream.SMISEShift)
		for i, v := range shifts {
			shifts[i] = 0.5 * math.Erfc(-v/math.Sqrt2) // uniform on (0, 1)
		}
	}
	// chunkResult is one chunk's sums per replicate (R x nOut) and counts.
	type chunkResult struct {
		sum             []float64
		n               []int // samples kept per replicate
		inexact, failed int
		lastErr         error
	}
	newWorker := func() (*smiWorker, error) {
		var post *smi.DeepPosterior // the cubature, where the channel has one (L <= 3)
		if ch.CheckInvertible() == nil {
			var err error
			if post, err = ch.NewPosterior(); err != nil {
				return nil, err
			}
			if o.QuadTol > 0 {
				post.Tol = o.QuadTol
			}
			if o.QuadMaxEval > 0 {
				post.MaxEval = o.QuadMaxEval
			}
		}
		w := &smiWorker{post: post, m: ch.NewMoments(), s: ch.NewScratch(), omega: make([]float64, pm),
			z: make([]float64, pm), u: make([]float64, M), xi: make([]float64, 2*pm), cov: make([]float64, pm*pm), cov2: make([]float64, pm*pm)}
		if o.Draws > 0 {
			w.half = [2]*smi.SampleMoments{ch.NewSampleMoments(), ch.NewSampleMoments()}
		}
		return w, nil
	}
	acc := chunkResult{sum: make([]float64, R*nOut), n: make([]int, R)}
	acc, err := par.MapReduce(o.Workers, par.Chunks(total, smiChunk), newWorker, func(w *smiWorker, c int) (chunkResult, error) {
		res := chunkResult{sum: make([]float64, R*nOut), n: make([]int, R)}
		lo, hi := par.Span(c, total, smiChunk)
		for s := lo; s < hi; s++ {
			r, i := s/per, s%per
			w.sample = i*R + r
			if o.MonteCarlo {
				device.FillNormals(w.xi, o.Seed, stream.SMISESample(i*R+r, 2*pm))
			} else {
				haltonNormals(w.xi, uint64(i)+1, shifts[r*2*pm:(r+1)*2*pm])
			}
			if err := f(res.sum[r*nOut:(r+1)*nOut], w, w.xi[:pm], w.xi[pm:]); err != nil {
				// A channel integral that fails (smi.DeepPosterior's errors) drops its
				// sample; more than 1% dropped is an error.
				res.failed++
				res.lastErr = fmt.Errorf("sample %d of replicate %d: %w", i, r, err)
				continue
			}
			res.n[r]++
			if !w.m.Exact {
				res.inexact++
			}
		}
		return res, nil
	}, acc, func(acc, res chunkResult) chunkResult {
		for k, v := range res.sum {
			acc.sum[k] += v
		}
		for r, k := range res.n {
			acc.n[r] += k
		}
		acc.inexact += res.inexact
		acc.failed += res.failed
		if res.lastErr != nil {
			acc.lastErr = res.lastErr
		}
		return acc
	})
	if err != nil {
		return average{}, err
	}
	if acc.failed > total/100 || slices.Contains(acc.n, 0) {
		return average{}, fmt.Errorf("%d of %d channel integrals failed (more than 1%%, or a whole replicate), e.g. %w", acc.failed, total, acc.lastErr)
	}
	out := average{mean: make([]float64, nOut), cov: make([]float64, nOut*nOut), inexact: acc.inexact + acc.failed}
	means := acc.sum // replicate means, in place
	for r := 0; r < R; r++ {
		for k := 0; k < nOut; k++ {
			means[r*nOut+k] /= float64(acc.n[r])
			out.mean[k] += means[r*nOut+k] / float64(R)
		}
	}
	for a := 0; a < nOut; a++ {
		for b := 0; b < nOut; b++ {
			if R < 2 {
				out.cov[a*nOut+b] = math.NaN()
				continue
			}
			var c float64
			for r := 0; r < R; r++ {
				c += (means[r*nOut+a] - out.mean[a]) * (means[r*nOut+b] - out.mean[b])
			}
			out.cov[a*nOut+b] = c / float64(R*(R-1))
		}
	}
	return out, nil
}

// Stability returns, for each layer l, the linear-stability coefficient
//
//	F_l = E_y || Cov(z_l | y, omega, V) V_ll^{-1} - I_M ||_F^2 / V_ll^2
//
// (docs/SMI.md 2.3: Cov is the M x M covariance of layer l's pre-activations across tokens),
// at the diagonal overlaps Q with omega = Q^{1/2} xi, V = I - Q + epsilon I and the data drawn
// from the channel. Around Q_ll = 0 the SE is q-hat_ll ~ alpha F_l Q_ll, so layer l's overlap
// grows from 0 when alpha F_l > 1: at Q = 0 this is the weak-recovery threshold
// alpha_l = 1/F_l, and with the later layers at their fixed point it is the conditional
// (grand-staircase) threshold of an earlier layer. Only the layers with Q_ll = 0 are
// meaningful. With o.Draws (L >= 3) the covariances come from the two independent halves of
// each sample's importance sampling, Cov_a and Cov_b, and the average of
// tr((Cov_a/V - I)(Cov_b/V - I)^T) has no bias from their noise (the square of one estimate
// would be biased up by its variance); what is left is the O(1/n) bias of each
// self-normalised covariance.
func Stability(ch *smi.Deep, Q []float64, o Options) ([]float64, error) {
	if err := o.validate(ch); err != nil {
		return nil, err
	}
	F, err := stability(ch, Q, o)
	return F.mean, err
}

// stability is Stability with the covariance of the average over the replicates.
func stability(ch *smi.Deep, Q []float64, o Options) (average, error) {
	P, M := ch.P(), ch.M
	pm := P * M
	V := make([]float64, P*P)
	for l := 0; l < P; l++ {
		V[l*P+l] = 1 - Q[l] + o.Epsilon
	}
	var batch *smi.SampleBatch
	if o.Draws > 0 {
		var err error
		if batch, err = sampleAll(ch, Q, V, o); err != nil {
			return average{}, err
		}
	}
	return smiAverage(ch, o, P, func(acc []float64, w *smiWorker, xi, eta []float64) error {
		// Cov/v - I of layer k's tokens from ca and cb: the same matrix (the cubature), or two
		// independent halves' (sampled), whose product has the mean ||E[Cov]/v - I||_F^2.
		ca, cb := w.cov, w.cov
		if batch != nil {
			if err := w.halves(batch, o.Draws/2); err != nil {
				return err
			}
			cb = w.cov2
			w.half[0].Cov(ca)
			w.half[1].Cov(cb)
		} else {
			if err := w.posterior(ch, Q, V, xi, eta); err != nil {
				return err
			}
			w.m.Cov(ca)
		}
		for k := 0; k < P; k++ {
			v := V[k*P+k]
			var s float64
			for a := 0; a < M; a++ {
				for b := 0; b < M; b++ {
					i := (k*M+a)*pm + k*M + b
					x, y := ca[i]/v, cb[i]/v
					if a == b {
						x--
						y--
					}
					s += x * y
				}
			}
			acc[k] += s / (v * v)
		}
		return nil
	})
}

// SolveCurve solves the SMI state evolution at each alpha in increasing order, starting each
// point from the previous fixed point (with every free overlap at least o.Init, so that a
// layer below its threshold can still turn on): continuation saves most iterations along a
// curve. The points come back in the order of alphas. With o.MCError every point starts again
// at o.Samples draws. With o.Start = Informed every point starts at QInformed I (continuation
// cannot raise it); with Both the uninformed solve is continued along the uninformed branch.
func SolveCurve(ch *smi.Deep, alphas []float64, o Options, progress func(Point)) ([]Point, error) {
	order := make([]int, len(alphas))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(alphas[a], alphas[b]) })
	out := make([]Point, len(alphas))
	var start []float64
	for _, i := range order {
		oi := o
		oi.start = start
		pt, err := Solve(ch, alphas[i], oi)
		if err != nil {
			return nil, err
		}
		out[i] = pt
		// Continue the uninformed branch (the reported point may be the informed one).
		cont := pt
		if pt.Start == Informed && pt.Other != nil {
			cont = *pt.Other
		}
		start = append([]float64(nil), cont.Q...)
		if progress != nil {
			progress(pt)
		}
	}
	return out, nil
}

// Onsets reads the onset of each layer's overlap off an SE curve: the first alpha where
// Q_ll exceeds level, extrapolated linearly to Q_ll = 0 with the next grid point (the
// continuous transitions of docs/SMI.md 2.4 grow linearly from their threshold). NaN where the
// overlap never exceeds level.
func Onsets(points []Point, level float64) []float64 {
	if len(points) == 0 {
		return nil
	}
	P := len(points[0].Q)
	idx := make([]int, len(points))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(points[a].Alpha, points[b].Alpha) })
	out := make([]float64, P)
	for l := 0; l < P; l++ {
		out[l] = math.NaN()
		for k, i := range idx {
			if points[i].Q[l] <= level {
				continue
			}
			a, q := points[i].Alpha, points[i].Q[l]
			switch {
			case k+1 < len(idx) && points[idx[k+1]].Q[l] > q:
				a2, q2 := points[idx[k+1]].Alpha, points[idx[k+1]].Q[l]
				out[l] = a - q*(a2-a)/(q2-q)
			case k > 0:
				out[l] = points[idx[k-1]].Alpha
			default:
				out[l] = a
			}
			if k > 0 && out[l] < points[idx[k-1]].Alpha {
				out[l] = points[idx[k-1]].Alpha // a jump: the onset lies between the two points
			}
			break
		}
	}
	return out
}

// Thresholds are the weak-recovery thresholds of docs/SMI.md 2.3 for each layer.
type Thresholds struct {
	// Stability[l] = 1/F_l(Q = 0): where Q_ll = 0 stops being stable with every overlap at 0.
	Stability []float64
	// Conditional[l], for l < L-1: where Q_ll = 0 stops being stable with the later layers
	// l+1..L at their fixed point (the SE restricted to them) — the grand staircase. NaN for the
	// last layer (its conditional threshold is its Stability).
	Conditional []float64
}

// ConditionalThreshold returns the alpha in [lo, hi] where layer l (0-based, l < L-1) turns
// unstable with layers l+1..L at the fixed point Q*(alpha) of the SE restricted to them:
// alpha F_l(Q*(alpha)) = 1 (Stability), found by engine/root (the Illinois variant of regula falsi) to
// relative tolerance relTol. It is an error if the root is not bracketed by [lo, hi]. The
// restricted SE and F use o.Samples draws (o.MCError does not apply) and skip the fixed point's
// standard errors.
func ConditionalThreshold(ch *smi.Deep, l int, lo, hi, relTol float64, o Options) (float64, error) {
	P := ch.P()
	if l < 0 || l >= P-1 {
		return 0, fmt.Errorf("SMI conditional threshold: layer %d: need 1 <= layer < L = %d", l+1, P)
	}
	frozen := make([]bool, P)
	for k := 0; k <= l; k++ {
		frozen[k] = true
	}
	var start []float64
	h := func(alpha float64) (float64, error) {
		oo := o
		oo.Frozen = frozen
		oo.start = start
		oo.noError, oo.MCError = true, 0
		pt, err := Solve(ch, alpha, oo)
		if err != nil {
			return 0, err
		}
		if !pt.Converged {
			return 0, fmt.Errorf("SMI conditional threshold of layer %d: the restricted SE did not converge at alpha = %g in %d iterations", l+1, alpha, pt.Iterations)
		}
		start = pt.Q
		F, err := Stability(ch, pt.Q, o)
		if err != nil {
			return 0, err
		}
		return alpha*F[l] - 1, nil
	}
	flo, err := h(lo)
	if err != nil {
		return 0, err
	}
	fhi, err := h(hi)
	if err != nil {
		return 0, err
	}
	a, err := root.Find(h, lo, hi, flo, fhi, relTol, 40)
	if errors.Is(err, root.ErrNotBracketed) {
		return 0, fmt.Errorf("SMI conditional threshold of layer %d: alpha F - 1: %w", l+1, err)
	}
	if err != nil && !math.IsNaN(a) {
		return a, nil // 40 evaluations: the bracket's midpoint, as before
	}
	return a, err
}

// haltonPrimes are the bases of the Halton sequence, one per coordinate (up to L = 3, M = 2:
// 12 coordinates).
var haltonPrimes = []uint64{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53}

// haltonNormals writes Phi^{-1}(frac(h_d(i) + shift_d)) for d = 0..len(dst)-1, h_d(i) the
// radical inverse of i in base haltonPrimes[d].
func haltonNormals(dst []float64, i uint64, shift []float64) {
	for d := range dst {
		b := haltonPrimes[d]
		f, x := 1.0, 0.0
		for k := i; k > 0; k /= b {
			f /= float64(b)
			x += f * float64(k%b)
		}
		x += shift[d]
		if x >= 1 {
			x--
		}
		if x <= 0 {
			x = 0.5 / float64(1<<53)
		}
		dst[d] = -math.Sqrt2 * math.Erfcinv(2*x)
	}
}
