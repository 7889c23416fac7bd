package se

import (
	"errors"
	"fmt"
	"math"

	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/rie"
)

// The free entropy of the single-layer AIM state evolution.
//
// Per D^2 (N = alpha D^2 samples), with m = V = Q0 - q:
//
//	Phi(m, q-hat; alpha) = psi_in(q-hat) - q q-hat/4 + alpha psi_out(q, V)
//	                     = m q-hat/4 - i(q-hat; rho) + alpha psi_out(Q0 - m, m),
//
// psi_in(q-hat) = Q0 q-hat/4 - i(q-hat; rho), where i is the mutual information per D^2 of the
// denoising problem Y = S + q-hat^{-1/2} Z (rie.MutualInformation, di/dq-hat = mmse_S(1/q-hat)/4)
// and psi_out = E log Z_out (aim.Entropic). It is the GLM free entropy of the D^2/2 independent
// entries of S observed through N = 2 alpha (D^2/2) samples, divided by 2. Its stationarity
// conditions are the SE:
//
//	dPhi/dq-hat = m/4 - mmse_S(1/q-hat; rho)/4 = 0       <=>  q = Q0 - mmse_S(1/q-hat; rho),
//	dPhi/dm     = q-hat/4 - (alpha/2) FisherSum(q, V) = 0  <=>  q-hat = 2 alpha FisherSum(q, V),
//
// using d psi_out(Q0 - m, m)/dm = -FisherSum/2 (aim.Entropic). The tests check both by finite
// differences at solved fixed points, which pins every constant. The Bayes-optimal error is the
// fixed point of largest Phi; by the envelope theorem dPhi/dalpha along the curve of fixed
// points equals the explicit derivative psi_out(q, V) (tested). Phi carries the channel's
// q-independent constant times alpha (softmax: E log J(y), see aim.Softmax.OutputEntropy); it
// cancels between fixed points at one (rho, alpha). The mutual information of the model is
// -Phi up to that constant and the data's own entropy.

// MInformed is the estimation error m = Q0 - q of the informed start, the fixed point solver's
// m0 next to perfect recovery: small enough to lie inside the basin of a low-error branch,
// large enough that the SE map is evaluated accurately there (Delta = 1/q-hat ~ 1e-6).
const MInformed = 1e-6

// Start is where the SE iteration starts (engine/fixedpoint.Start, shared with the SMI):
// Uninformed at m = 1 (q = rho: only the known mean sqrt(rho) I of S), the published curves'
// start and the zero value; Informed at m = MInformed, next to the planted S; Both solves from
// both and, where the two fixed points differ (Coexist), reports the Bayes-optimal one, of
// largest free entropy.
type Start = fixedpoint.Start

// The starts of the single-layer SE (fixedpoint.Start).
const (
	Uninformed = fixedpoint.Uninformed
	Informed   = fixedpoint.Informed
	Both       = fixedpoint.Both
)

// ParseStart parses "uninformed", "informed" or "both" (fixedpoint.ParseStart).
func ParseStart(s string) (Start, error) { return fixedpoint.ParseStart(s) }

// m0 is the solver's starting estimation error from start s.
func m0(s Start) float64 {
	if s == Informed {
		return MInformed
	}
	return 1
}

// Coexist reports whether the estimation errors mu and mi reached from the two starts are two
// fixed points, not one reached twice: they must differ by more than CoexistGap, 1e4 times
// the solver tolerance (at least 1e-6), and by more than 1e-2 of the larger. Both starts stop
// within about Tol of the same stable fixed point where the SE map's slope is below 1; at a
// critical point (softmax at alpha_PR, slope 1) both crawl algebraically and can stop ~1e-7
// apart; the branches of a first-order transition differ by O(0.01) or more, relatively too.
func (o Options) Coexist(mu, mi float64) bool { return fixedpoint.Distinct(mu, mi, o.CoexistGap()) }

// CoexistGap is the absolute part of Coexist: max(1e-6, 1e4 Tol).
func (o Options) CoexistGap() float64 { return math.Max(1e-6, 1e4*o.Tol) }

// ErrNoEntropy is wrapped by the errors of the free-entropy functions for a channel that does
// not implement aim.Entropic (or refuses, aim.ErrNoEntropy).
var ErrNoEntropy = aim.ErrNoEntropy

// FreeEntropyAt returns Phi(m, q-hat; alpha) = m q-hat/4 - i(q-hat; rho) + alpha psi_out(Q0 - m, m),
// Q0 = 1 + rho, at any (m, q-hat), not only at a fixed point (see the comment above). At m = 0
// (perfect recovery, q-hat = inf) it is +Inf for a channel with a density (softmax) and an
// error otherwise.
func FreeEntropyAt(ch aim.Channel, rho, alpha, m, qHat float64) (float64, error) {
	e, ok := ch.(aim.Entropic)
	if !ok {
		return math.NaN(), fmt.Errorf("free entropy of %s: %w (the channel has no OutputEntropy)", ch.Name(), ErrNoEntropy)
	}
	if err := checkRhoAlpha(rho, alpha); err != nil {
		return math.NaN(), err
	}
	if !(m >= 0 && m <= 1+rho) || !(qHat >= 0) {
		return math.NaN(), fmt.Errorf("free entropy: need 0 <= m <= Q0 and q-hat >= 0, got m = %g, q-hat = %g", m, qHat)
	}
	Q0 := 1 + rho
	if m == 0 {
		if _, ok := ch.(directionCounter); ok {
			return math.Inf(1), nil
		}
		return math.NaN(), fmt.Errorf("free entropy of %s at m = 0: undefined", ch.Name())
	}
	i, err := rie.MutualInformation(qHat, rho)
	if err != nil {
		return math.NaN(), err
	}
	out, err := e.OutputEntropy(Q0-m, m)
	if err != nil {
		return math.NaN(), err
	}
	return m*qHat/4 - i + alpha*out, nil
}

// FreeEntropy returns Phi at a solved point p of the single-layer SE (Solve): FreeEntropyAt at
// (p.MMSE, p.QHat). It is +Inf at perfect recovery (softmax, alpha >= alpha_PR).
func FreeEntropy(ch aim.Channel, p Point) (float64, error) {
	if !p.Converged {
		return math.NaN(), fmt.Errorf("free entropy: the point at rho = %g, alpha = %g did not converge", p.Rho, p.Alpha)
	}
	return FreeEntropyAt(ch, p.Rho, p.Alpha, p.MMSE, p.QHat)
}

// Branches are the fixed points of the single-layer SE reached from both starts at one
// (rho, alpha), with their free entropies.
type Branches struct {
	Uninformed, Informed       Point
	PhiUninformed, PhiInformed float64 // Phi of each (FreeEntropy)
	// Coexist is true when the two fixed points are distinct (Options.Coexist): two stable
	// fixed points (the damped iteration converges only to stable ones).
	Coexist bool
}

// Optimal returns the Bayes-optimal fixed point, the one of largest free entropy, and its Phi.
// Where the branches do not coexist it is the uninformed one (the two agree to the solver's
// tolerance), so the published curves are reproduced unchanged.
func (b Branches) Optimal() (Point, float64) {
	if b.Coexist && b.PhiInformed > b.PhiUninformed {
		return b.Informed, b.PhiInformed
	}
	return b.Uninformed, b.PhiUninformed
}

// SolveBranches solves the single-layer SE from both starts (o.Start is ignored) and computes
// the free entropy of each fixed point. The channel must implement aim.Entropic.
func SolveBranches(ch aim.Channel, rho, alpha float64, o Options) (Branches, error) {
	var b Branches
	if _, ok := ch.(aim.Entropic); !ok {
		return b, fmt.Errorf("se %s: start both: %w (the fixed point of largest free entropy cannot be chosen)", ch.Name(), ErrNoEntropy)
	}
	var err error
	ou, oi := o, o
	ou.Start, oi.Start = Uninformed, Informed
	if b.Uninformed, err = Solve(ch, rho, alpha, ou); err != nil {
		return b, err
	}
	if b.Informed, err = Solve(ch, rho, alpha, oi); err != nil {
		return b, err
	}
	if b.PhiUninformed, err = FreeEntropy(ch, b.Uninformed); err != nil {
		return b, err
	}
	b.Coexist = o.Coexist(b.Uninformed.MMSE, b.Informed.MMSE)
	if b.Coexist {
		b.PhiInformed, err = FreeEntropy(ch, b.Informed)
	} else {
		b.PhiInformed = b.PhiUninformed
	}
	return b, err
}

// solveBoth is Solve with o.Start = Both: the Bayes-optimal point of SolveBranches.
func solveBoth(ch aim.Channel, rho, alpha float64, o Options) (Point, error) {
	b, err := SolveBranches(ch, rho, alpha, o)
	if err != nil {
		if errors.Is(err, ErrNotConverged) {
			return b.Uninformed, err
		}
		return Point{}, err
	}
	p, _ := b.Optimal()
	return p, nil
}
