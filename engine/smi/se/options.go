package se

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/stream"
)

// Options control the state evolution of the sequence multi-index model (docs/theory/smi.md 2.2).
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
	// thresholds of docs/theory/smi.md 2.3 and the "one layer" curves).
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

// frozen reports whether layer l is held at Q_ll = 0.
func (o Options) frozen(l int) bool { return o.Frozen != nil && o.Frozen[l] }
