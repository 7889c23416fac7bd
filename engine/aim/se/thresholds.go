package se

import (
	"errors"
	"fmt"
	"math"

	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/root"
)

// mStable is the estimation error at which AlphaPR probes the SE map for the stability of
// perfect recovery: small enough that the map is linear there to about 1e-9 relative, large
// enough for the RIE prior (Delta ~ 1e-13) to be computed accurately.
const mStable = 1e-13

// directionCounter is implemented by channels that observe K/2 directions of the fields exactly
// (softmax: K = T^2 + T - 2). Only they reach perfect recovery at a finite alpha.
type directionCounter interface{ Directions() int }

// AlphaPRCounting returns the counting bound for perfect recovery, alpha_PR = dof(S) / (N K/2)
// per D^2: (2 rho - rho^2)/K for rho < 1 and 1/K for rho >= 1 (docs/theory/aim.md 2.2, 2.8), K = T^2 + T - 2
// for softmax and 2 for the noiseless linear channel.
func AlphaPRCounting(rho float64, K int) float64 {
	if rho < 1 {
		return (2*rho - rho*rho) / float64(K)
	}
	return 1 / float64(K)
}

// AlphaPR returns the perfect-recovery threshold of the single-layer SE: the smallest alpha at
// which the perfect-recovery fixed point m = 0 of the SE map G(m) = mmse_S(1/q-hat(m); rho) is
// stable, i.e. G(m) < m for m -> 0+. For softmax G'(0) = mmse_S'(0)/(K alpha), so this is the
// counting bound of AlphaPRCounting; the function finds it from the map itself, as the root of
// G(m) - m at m -> 0+ in alpha (engine/root), to relative precision relTol. Channels that do
// not observe directions exactly (hardmax) have no finite threshold: q-hat grows like V^(-1/2), not V^(-1), and AlphaPR returns +Inf for them.
func AlphaPR(ch aim.Channel, rho, relTol float64, o Options) (float64, error) {
	if _, ok := ch.(directionCounter); !ok {
		return math.Inf(1), nil
	}
	if err := checkRhoAlpha(rho, 1); err != nil {
		return math.NaN(), err
	}
	Q0 := 1 + rho
	// f(alpha) = G(mStable) - mStable: positive while perfect recovery is unstable.
	f := func(alpha float64) (float64, error) {
		if alpha == 0 {
			return 1 - mStable, nil // q-hat = 0: G = mmse_S(inf) = 1
		}
		qh, err := qHat(ch, alpha, Q0, mStable)
		if err != nil {
			return math.NaN(), err
		}
		g, err := priorMMSE(1/qh, rho)
		return g - mStable, err
	}
	lo, hi, flo, fhi, err := root.Expand(f, 0, 1-mStable, 1e-3, 2, 1e6)
	if errors.Is(err, root.ErrNotBracketed) {
		return math.Inf(1), nil
	}
	if err != nil {
		return math.NaN(), fmt.Errorf("alpha_PR: %w", err)
	}
	a, err := root.Find(f, lo, hi, flo, fhi, relTol, 200)
	if err != nil {
		return math.NaN(), fmt.Errorf("alpha_PR: %w", err)
	}
	return a, nil
}

// AlphaBarC returns the weak-recovery threshold of the rho -> 0 rescaled SE, in alpha-bar_r =
// N/(D R): the fixed point q = 0 loses stability when q-hat_r(q = 0) = 1, so
// alpha-bar_c = 1 / (2 FisherSum(0, 1)) (docs/theory/aim.md 2.3). Softmax gives 1/K.
func AlphaBarC(ch aim.Channel) (float64, error) {
	f, err := ch.FisherSum(0, 1)
	if err != nil {
		return math.NaN(), err
	}
	return 1 / (2 * f), nil
}
