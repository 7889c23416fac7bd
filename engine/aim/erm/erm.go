// Package erm solves the state evolution of empirical risk minimisation (ERM) with weight decay
// in the extensive-width quadratic network, the attention-indexed model's linear channel at
// T = 1 (docs/theory/aim.md 2.8 and 4.1), and in the softmax AIM (softmax.go). The estimator of
// the linear channel is the minimiser
//
//	S-hat = argmin_{S PSD} (1/D) sum_mu (h_mu(S) - y_mu)^2 + lambda Tr S,
//	h_mu(S) = (x_mu^T S x_mu - Tr S)/sqrt(D),   y_mu = h_mu(S*) + sqrt(Delta) xi_mu,
//
// which is what gradient descent on W with S = W^T W / sqrt(R D) and the weight decay
// lambda Tr S = lambda ||W||_F^2 / sqrt(R D) converges to when the student is wide enough
// (R at least the rank of S-hat): the penalty on W is the nuclear norm of S, and the problem in
// S is convex (Erba, Troiani, Zdeborova, Krzakala, arXiv 2505.17958).
//
// State evolution. With E = ||S-hat - S*||_F^2 / D the test error, the channel side (the square
// loss, whose proximal map is linear) and the prior side (the proximal map of lambda Tr S on PSD
// matrices, a soft threshold of the eigenvalues) reduce to
//
//	Delta_eff = (E + Delta/2) / (2 alpha),
//	Y = S* + sqrt(Delta_eff) Z,  Z GOE,  with spectrum mu = MP(rho) ⊞ SC(Delta_eff),
//	S-hat = r(Y),  r(y) = max(y - tau, 0) eigenvalue by eigenvalue,
//	tau (2 alpha - I) = lambda/2,   I = ∫∫ (r(x) - r(y))/(x - y) dmu(x) dmu(y) = 2 ∫ r h dmu,
//	E = Q0 - 2 m + q,  q = ∫ r^2 dmu,  m = ∫ r(y) (y - 2 Delta_eff h(y)) dmu(y),  Q0 = 1 + rho,
//
// with h the Hilbert transform of mu (package rie): y - 2 Delta_eff h(y) is the overlap of S*
// with an eigenvector of Y of eigenvalue y, so m = Tr(S* S-hat)/D. I/(2 alpha) is the share of
// the data's degrees of freedom the estimator spends; at lambda = 0 without the PSD constraint
// (r(y) = y, I = 1) this is ordinary least squares, E = Delta/(2 (2 alpha - 1)) above
// alpha = 1/2. The training error is E_train = (2E + Delta)(1 - I/(2 alpha))^2 per sample, zero
// when I = 2 alpha: the estimator interpolates. Lambda = 0 is the limit lambda -> 0+: tau = 0
// while I < 2 alpha at tau = 0, else the root of I(tau) = 2 alpha (the minimal nuclear norm
// interpolator).
//
// The state evolution is solved as a fixed point E = G(E) with engine/fixedpoint (the same
// solver, damping and stopping rule as the Bayes-optimal state evolution, package se), and tau
// at each step with engine/root.
//
// Ridge (Penalty Ridge: lambda ||S||_F^2 over symmetric S, what weight decay becomes when S is
// trained directly) has a linear proximal map and a closed form (solveRidge). The teacher is the
// paper's MP(rho) unless Problem.Prior gives another rotationally invariant one (rie.Eigenvalues:
// a power law w_k ~ k^-gamma), with mu its spectrum ⊞ SC(Delta_eff) and Q0 its (1/D) Tr S*^2.
// Point.Spectrum is the limiting spectrum of S-hat; PerfectRecovery, PerfectRecoverySoftmax and
// Interpolation are the thresholds of lambda -> 0+ (MP teachers).
package erm

import (
	"errors"
	"fmt"
	"math"

	"github.com/aimtheory/aim/engine/aim/se"
	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/rie"
	"github.com/aimtheory/aim/engine/root"
)

// ErrNotConverged is wrapped by the error Solve returns when the iteration cap is reached; the
// Point beside it has Converged = false and must not be reported as a result.
var ErrNotConverged = errors.New("ERM state evolution did not converge")

// Penalty is the regulariser of the estimator: what weight decay becomes in S.
type Penalty int

const (
	// Nuclear is lambda Tr S over PSD S: weight decay on the factor W of S = W^T W / sqrt(R D),
	// since ||W||_F^2 = sqrt(R D) Tr S.
	Nuclear Penalty = iota
	// Ridge is lambda ||S||_F^2 over symmetric S: weight decay on S trained element by element.
	Ridge
)

// String returns "nuclear" or "ridge".
func (p Penalty) String() string {
	if p == Ridge {
		return "ridge"
	}
	return "nuclear"
}

// Problem is one ERM estimator on one data model.
type Problem struct {
	Rho     float64 // rank ratio R/D of the teacher S* = W W^T / sqrt(R D)
	Alpha   float64 // sample complexity N/D^2
	Noise   float64 // label noise Delta >= 0
	Lambda  float64 // weight decay lambda >= 0; 0 is the limit lambda -> 0+
	Penalty Penalty // Nuclear (the zero value) or Ridge
	// Prior is the teacher's law; nil is MP(Rho), S* = W W^T / sqrt(R D). The thresholds
	// (PerfectRecovery, Interpolation) are MP's.
	Prior rie.Prior
	// T is the number of tokens of the softmax channel (T >= 2, at inverse temperature Beta);
	// 0 (or 1) is the linear channel, the quadratic network.
	T    int
	Beta float64
	// Samples is the Monte Carlo size of the softmax channel's averages at lambda > 0 (0:
	// DefaultSamples); Workers the goroutines that compute them (0: all cores; the values do
	// not depend on it).
	Samples, Workers int
}

// prior returns p.Prior, or MP(Rho) when it is nil.
func (p Problem) prior() rie.Prior {
	if p.Prior == nil {
		return rie.MP{Rho: p.Rho}
	}
	return p.Prior
}

// Validate reports the first parameter out of range.
func (p Problem) Validate() error {
	switch {
	case p.Prior == nil && (!(p.Rho > 0) || math.IsInf(p.Rho, 0)):
		return fmt.Errorf("erm: rho = %g, need 0 < rho < inf", p.Rho)
	case p.Prior != nil && !(p.Prior.Q0() > 0):
		return fmt.Errorf("erm: a teacher with Q0 = %g", p.Prior.Q0())
	case !(p.Alpha > 0) || math.IsInf(p.Alpha, 0):
		return fmt.Errorf("erm: alpha = %g, need 0 < alpha < inf", p.Alpha)
	case !(p.Noise >= 0) || math.IsInf(p.Noise, 0):
		return fmt.Errorf("erm: noise Delta = %g, need 0 <= Delta < inf", p.Noise)
	case !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0):
		return fmt.Errorf("erm: weight decay lambda = %g, need 0 <= lambda < inf", p.Lambda)
	case p.Penalty != Nuclear && p.Penalty != Ridge:
		return fmt.Errorf("erm: unknown penalty %d", int(p.Penalty))
	case p.T < 0:
		return fmt.Errorf("erm: T = %d tokens", p.T)
	case p.T >= 2 && (!(p.Beta > 0) || math.IsInf(p.Beta, 0)):
		return fmt.Errorf("erm: softmax beta = %g, need 0 < beta < inf", p.Beta)
	case p.T >= 2 && p.Lambda == 0 && p.Noise > 0:
		return fmt.Errorf("erm: the softmax channel at lambda = 0 with label noise Delta = %g: its limit lambda -> 0+ is not implemented (give lambda > 0)", p.Noise)
	case p.Samples < 0 || p.T >= 2 && p.Samples > 0 && p.Samples < MinSamples:
		return fmt.Errorf("erm: %d Monte Carlo samples, need 0 (the default) or at least %d", p.Samples, MinSamples)
	}
	return nil
}

// Point is the solved state evolution of one Problem.
type Point struct {
	Problem
	TestError float64 // E = lim ||S-hat - S*||_F^2 / D
	// GenError is the mean (y-hat - y)^2 on a new sample's noiseless output, 2E, for the linear
	// channel; NaN for the softmax (not computed).
	GenError   float64
	TrainError float64 // (1/N) sum_mu sum_ab (y-hat_mu,ab - y_mu,ab)^2 at the minimiser
	Q          float64 // Tr S-hat^2 / D
	M          float64 // Tr(S* S-hat) / D
	TrS        float64 // Tr S-hat / D (the penalty is lambda D TrS)
	Rank       float64 // fraction of the eigenvalues of S-hat that are not 0
	Tau        float64 // the eigenvalue threshold of the prior side (Nuclear; 0 for Ridge)
	Shrink     float64 // the scale s of S-hat = s Y (Ridge) or s r(Y) (Nuclear; 1 for the linear channel)
	DeltaEff   float64 // Delta_eff = (E + Delta/2)/(2 alpha)
	I          float64 // the degrees of freedom spent, as a share of D^2/2 (interpolation at 2 alpha)
	// Interpolating: the training error is 0 (lambda = 0 with I = 2 alpha).
	Interpolating bool
	// QuadError bounds the quadrature error of E at the fixed point (Gauss-Kronrod estimates).
	QuadError float64
	// TestErr and TrainErr are the Monte Carlo standard errors of TestError and TrainError
	// (the softmax channel at lambda > 0; 0 where the channel's averages are exact).
	TestErr, TrainErr float64
	Iterations        int
	Converged         bool
}

// lossCurvature is c = 1/4, the curvature of the square loss (1/D)(h - y)^2 of one sample in the
// units of the state evolution's channel (the field u = h/sqrt(2) with the sum over N = alpha D^2
// samples scaled to D): the threshold equation is tau (2 alpha - I) = 2 c lambda.
const lossCurvature = 0.25

// minError is the smallest test error at which the noiseless map is evaluated (see Solve): E = 0
// itself has Delta_eff = 0 and no spectrum.
const minError = 1e-10

// quadTol is the relative error target of the spectral integrals.
const quadTol = 1e-11

// prior is the prior side at one Delta_eff: the spectrum, the threshold and the integrals.
type prior struct {
	sp                rie.Noisy
	tau, i, q, m, trS float64
	rank, err         float64
	interpolating     bool
}

// integrals returns I, q, m, Tr S-hat/D, the rank fraction and the summed quadrature error of
// r(y) = max(y - tau, 0) on sp.
func integrals(sp rie.Noisy, tau float64) (i, q, m, tr, rank, qerr float64) {
	d := sp.Noise()
	var e [5]float64
	i, e[0] = sp.Integrate(func(x, mu, h float64) float64 { return 2 * (x - tau) * h * mu }, tau, quadTol)
	q, e[1] = sp.Integrate(func(x, mu, h float64) float64 { return (x - tau) * (x - tau) * mu }, tau, quadTol)
	m, e[2] = sp.Integrate(func(x, mu, h float64) float64 { return (x - tau) * (x - 2*d*h) * mu }, tau, quadTol)
	tr, e[3] = sp.Integrate(func(x, mu, h float64) float64 { return (x - tau) * mu }, tau, quadTol)
	rank, e[4] = sp.Integrate(func(x, mu, h float64) float64 { return mu }, tau, quadTol)
	return i, q, m, tr, rank, e[1] + 2*e[2]
}

// spentI returns I(tau) = 2 ∫ r h dmu alone.
func spentI(sp rie.Noisy, tau float64) float64 {
	v, _ := sp.Integrate(func(x, mu, h float64) float64 { return 2 * (x - tau) * h * mu }, tau, quadTol)
	return v
}

// threshold returns tau >= 0 solving tau (2 alpha - I(tau)) = 2 c lambda, and at lambda = 0 the
// limit: 0 when I(0) < 2 alpha, else the root of I(tau) = 2 alpha (interpolating).
func threshold(sp rie.Noisy, alpha, lambda float64) (tau float64, interpolating bool, err error) {
	edges := sp.Edges()
	top := edges[len(edges)-1]
	if lambda == 0 {
		i0 := spentI(sp, 0)
		if i0 < 2*alpha {
			return 0, false, nil
		}
		f := func(t float64) (float64, error) { return spentI(sp, t) - 2*alpha, nil }
		tau, err = root.Find(f, 0, top, i0-2*alpha, -2*alpha, 1e-13, 200)
		return tau, true, err
	}
	k := 2 * lossCurvature * lambda
	f := func(t float64) (float64, error) { return t*(2*alpha-spentI(sp, t)) - k, nil }
	// Above the top edge I = 0 and f = 2 alpha t - k.
	hi := math.Max(top, 0) + k/(2*alpha) + 1e-12
	tau, err = root.Find(f, 0, hi, -k, 2*alpha*hi-k, 1e-13, 200)
	return tau, false, err
}

// side evaluates the prior side at test error E.
func side(p Problem, e float64) (prior, error) {
	var pr prior
	d := (e + p.Noise/2) / (2 * p.Alpha)
	sp, err := p.prior().Noisy(d)
	if err != nil {
		return pr, fmt.Errorf("erm: Delta_eff = %g: %w", d, err)
	}
	pr.sp = sp
	if pr.tau, pr.interpolating, err = threshold(sp, p.Alpha, p.Lambda); err != nil {
		return pr, fmt.Errorf("erm: threshold at Delta_eff = %g: %w", d, err)
	}
	pr.i, pr.q, pr.m, pr.trS, pr.rank, pr.err = integrals(sp, pr.tau)
	return pr, nil
}

// Solve returns the fixed point of the ERM state evolution of p, iterated from E = Q0 (S-hat = 0)
// with the damping, tolerance and cap of o (se.Options; Start is not used: the problem is convex
// and the fixed point unique). On ErrNotConverged the Point is returned with Converged = false.
func Solve(p Problem, o se.Options) (Point, error) {
	if err := p.Validate(); err != nil {
		return Point{}, err
	}
	if p.T >= 2 {
		if p.Lambda == 0 {
			return solveSoftmaxLimit(p, o)
		}
		return solveSoftmax(p, o)
	}
	if p.Penalty == Ridge {
		return solveRidge(p)
	}
	Q0 := p.prior().Q0()
	lower := 0.0
	if p.Noise == 0 {
		// Without label noise E = 0 is a fixed point in the limit Delta_eff -> 0+, stable when
		// G(E)/E < 1 there: perfect recovery. Otherwise the iteration is kept above it.
		pr, err := side(p, minError)
		if err != nil {
			return Point{Problem: p}, err
		}
		if Q0-2*pr.m+pr.q < minError {
			// Perfect recovery: S-hat = S*. The limits of q, m, Tr and the rank are the
			// teacher's (at E -> 0+ half of the null space's vanishing eigenvalues would count).
			pt, err := finish(p, pr, 0, 1)
			pt.Q, pt.M, pt.TrS, pt.Rank = Q0, Q0, p.prior().Mean(), rankOf(p.prior())
			pt.Tau, pt.Interpolating, pt.TrainError = 0, true, 0
			return pt, err
		}
		lower = minError
	}
	G := func(dst, x []float64) error {
		pr, err := side(p, math.Max(x[0], lower))
		if err != nil {
			return err
		}
		dst[0] = math.Max(Q0-2*pr.m+pr.q, lower)
		return nil
	}
	fo := fixedpoint.Options{Damping: o.Damping, Tol: o.Tol, MaxIter: o.MaxIter, Accelerate: o.Accelerate, Lower: lower, Upper: 1e12}
	r, err := fixedpoint.Solve(G, []float64{Q0}, fo)
	if !r.Converged {
		pt := Point{Problem: p, Iterations: r.Evals, TestError: math.NaN()}
		if err == nil || errors.Is(err, fixedpoint.ErrNotConverged) {
			err = fmt.Errorf("%w: %v", ErrNotConverged, err)
		}
		return pt, fmt.Errorf("erm: rho = %g, alpha = %g, Delta = %g, lambda = %g: %w", p.Rho, p.Alpha, p.Noise, p.Lambda, err)
	}
	e := r.GX[0]
	pr, err := side(p, e)
	if err != nil {
		return Point{Problem: p}, err
	}
	pt, _ := finish(p, pr, Q0-2*pr.m+pr.q, r.Evals)
	pt.QuadError += math.Abs(pt.TestError - e)
	return pt, nil
}

// rankOf returns the fraction of nonzero eigenvalues of a teacher with law pr.
func rankOf(pr rie.Prior) float64 {
	switch t := pr.(type) {
	case rie.MP:
		return math.Min(t.Rho, 1)
	case rie.Eigenvalues:
		n := 0
		for _, w := range t {
			if w != 0 {
				n++
			}
		}
		return float64(n) / float64(len(t))
	}
	return math.NaN()
}

// finish returns the converged Point of p with test error e and the prior side pr there.
func finish(p Problem, pr prior, e float64, evals int) (Point, error) {
	pt := Point{Problem: p, TestError: e, GenError: 2 * e, Iterations: evals, Converged: true,
		Q: pr.q, M: pr.m, TrS: pr.trS, Rank: pr.rank, Tau: pr.tau, Shrink: 1, I: pr.i,
		DeltaEff: pr.sp.Noise(), Interpolating: pr.interpolating, QuadError: pr.err}
	if !pr.interpolating {
		f := 1 - pr.i/(2*p.Alpha)
		pt.TrainError = (2*e + p.Noise) * f * f
	}
	return pt, nil
}

// solveRidge returns the Ridge point in closed form. The proximal map of lambda ||S||_F^2 is
// linear, S-hat = s Y, with divergence I = s; the threshold equation becomes
// s (2 alpha - s + lambda) = 2 alpha - s, i.e. s^2 - (2 alpha + lambda + 1) s + 2 alpha = 0 (the
// root in (0, 1]; s = min(2 alpha, 1) at lambda = 0: the minimal Frobenius-norm interpolator
// below alpha = 1/2, least squares above), and with q = s^2 (Q0 + Delta_eff), m = s Q0,
//
//	E = [Q0 (1 - s)^2 + s^2 Delta/(4 alpha)] / (1 - s^2/(2 alpha)).
func solveRidge(p Problem) (Point, error) {
	Q0 := p.prior().Q0()
	b := 2*p.Alpha + p.Lambda + 1
	s := 2 * 2 * p.Alpha / (b + math.Sqrt(b*b-8*p.Alpha)) // the smaller root, without cancellation
	den := 1 - s*s/(2*p.Alpha)
	pt := Point{Problem: p, Shrink: s, I: s, Rank: 1, Iterations: 1}
	if !(den > 0) {
		// lambda = 0 at alpha = 1/2: least squares with as many samples as unknowns.
		pt.TestError = math.Inf(1)
		return pt, fmt.Errorf("erm: ridge at rho = %g, alpha = %g, lambda = %g: the least-squares error is infinite at alpha = 1/2", p.Rho, p.Alpha, p.Lambda)
	}
	e := (Q0*(1-s)*(1-s) + s*s*p.Noise/(4*p.Alpha)) / den
	pt.TestError, pt.GenError, pt.Converged = e, 2*e, true
	pt.DeltaEff = (e + p.Noise/2) / (2 * p.Alpha)
	pt.Q, pt.M, pt.TrS = s*s*(Q0+pt.DeltaEff), s*Q0, s*p.prior().Mean()
	f := 1 - s/(2*p.Alpha)
	pt.TrainError = (2*e + p.Noise) * f * f
	pt.Interpolating = p.Lambda == 0 && p.Alpha < 0.5
	if pt.Interpolating {
		pt.TrainError = 0
	}
	return pt, nil
}

// Spectrum is the limiting eigenvalue distribution of S-hat at a solved Point, a map of the
// spectrum mu = MP(rho) ⊞ SC(Delta_eff) of Y = S* + sqrt(Delta_eff) Z. Nuclear: the eigenvalues
// below tau become 0 (an atom of mass 1 - Rank) and those above move down by tau and are
// scaled by s (1 for the linear channel, kappa = m-hat/Sigma-hat for the softmax), so the
// density at x > 0 is mu(x/s + tau)/s. Ridge: every eigenvalue is scaled by s, the density is
// mu(x/s)/s and there is no atom. The teacher's spectrum MP(rho) has no outliers, so neither
// has S-hat's.
type Spectrum struct {
	Atom  float64 // the mass at 0
	Tau   float64 // the shift (Nuclear)
	Scale float64 // the scale s
	psd   bool    // Nuclear: S-hat is PSD, its spectrum lies in [0, inf)
	y     rie.Noisy
}

// Spectrum returns the limiting spectrum of S-hat at p (which must be converged).
func (p Point) Spectrum() (*Spectrum, error) {
	if !p.Converged {
		return nil, errors.New("erm: the spectrum of an unconverged point")
	}
	sp, err := p.prior().Noisy(p.DeltaEff)
	if err != nil {
		return nil, fmt.Errorf("erm: %w", err)
	}
	if p.Penalty == Ridge {
		return &Spectrum{Scale: p.Shrink, y: sp}, nil
	}
	scale := p.Shrink
	if scale == 0 {
		scale = 1
	}
	if p.TestError == 0 {
		// Perfect recovery: the teacher's spectrum MP(rho). Delta_eff is the tiny value the
		// map was evaluated at; the shift 2.5 sqrt(Delta_eff) moves the null space's small
		// semicircle (radius 2 sqrt(Delta_eff (1 - rho))) into the atom.
		return &Spectrum{Atom: 1 - p.Rank, Tau: 2.5 * math.Sqrt(p.DeltaEff), Scale: 1, psd: true, y: sp}, nil
	}
	return &Spectrum{Atom: 1 - p.Rank, Tau: p.Tau, Scale: scale, psd: true, y: sp}, nil
}

// Density returns the density of the continuous part of the spectrum of S-hat at x (the atom
// at 0 aside).
func (s *Spectrum) Density(x float64) float64 {
	if s.psd {
		if !(x > 0) {
			return 0
		}
		return s.y.Density(x/s.Scale+s.Tau) / s.Scale
	}
	return s.y.Density(x/s.Scale) / s.Scale
}

// CDF returns the fraction of the eigenvalues of S-hat at or below x.
func (s *Spectrum) CDF(x float64) float64 {
	from := x/s.Scale + s.Tau
	if s.psd {
		if x < 0 {
			return 0
		}
		from = x/s.Scale + s.Tau
	}
	above, _ := s.y.Integrate(func(_, mu, _ float64) float64 { return mu }, from, quadTol)
	return 1 - above
}

// Edges returns the support of the continuous part: the edges of mu mapped to S-hat's
// eigenvalues (Nuclear: the edges above tau, shifted down by tau, the lowest clipped at 0 when
// tau lies inside a bulk).
func (s *Spectrum) Edges() []float64 {
	var out []float64
	e := s.y.Edges()
	for k := 0; k < len(e); k += 2 {
		a, b := (e[k]-s.Tau)*s.Scale, (e[k+1]-s.Tau)*s.Scale
		if s.psd {
			if b <= 0 {
				continue
			}
			a = math.Max(a, 0)
		}
		out = append(out, a, b)
	}
	return out
}
