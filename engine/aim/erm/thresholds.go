package erm

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/engine/rie"
	"github.com/aimtheory/aim/engine/root"
)

// slopeAtZero returns G(eps)/eps for the noiseless map at lambda -> 0+: the rate at which the
// state evolution moves a small test error, capped at 10. E = 0 (perfect recovery) is stable
// where it is below 1.
func slopeAtZero(rho, alpha float64) (float64, error) {
	p := Problem{Rho: rho, Alpha: alpha}
	pr, err := side(p, minError)
	if err != nil {
		return math.NaN(), err
	}
	return math.Min((1+rho-2*pr.m+pr.q)/minError, 10), nil
}

// PerfectRecovery returns alpha_c(rho), the sample complexity above which the minimal nuclear
// norm interpolator of noiseless labels (lambda -> 0+) recovers S* exactly: the alpha at which
// E = 0 becomes a stable fixed point of the state evolution. For rho >= 1 S* has full rank, the
// PSD constraint is not active near it and alpha_c = 1/2, the count of the D^2/2 entries, as for
// the Bayes-optimal estimator. For rho < 1 it lies between the Bayes-optimal alpha_PR =
// rho - rho^2/2 and (1 + 2 rho - rho^2)/4, where the threshold tau of the state evolution
// reaches 0 (the estimator spends the rho D^2 - rho^2 D^2/2 degrees of freedom of the range
// of S* and half of the (1 - rho)^2 D^2/2 of its null space). It is found with engine/root on
// G(eps)/eps - 1 (eps = 1e-10), to a relative 1e-6.
func PerfectRecovery(rho float64) (float64, error) {
	if !(rho > 0) || math.IsInf(rho, 0) {
		return math.NaN(), fmt.Errorf("erm: rho = %g, need 0 < rho < inf", rho)
	}
	if rho >= 1 {
		return 0.5, nil
	}
	lo := rho - rho*rho/2
	top := (1 + 2*rho - rho*rho) / 4
	f := func(a float64) (float64, error) {
		s, err := slopeAtZero(rho, a)
		return s - 1, err
	}
	flo, err := f(lo)
	if err != nil {
		return math.NaN(), err
	}
	// Just below top the slope is below 1 by less and less as rho -> 1; look for it from 1e-3
	// below top up, and take top itself when the slope is not resolved below 1 (it is computed
	// to about 1e-6).
	hi, fhi := top, 0.0
	for k := 3; k <= 6; k++ {
		h := top * (1 - math.Pow(10, -float64(k)))
		fh, err := f(h)
		if err != nil {
			return math.NaN(), err
		}
		if fh < -1e-5 {
			hi, fhi = h, fh
			break
		}
	}
	if hi == top {
		return top, nil
	}
	a, err := root.Find(f, lo, hi, flo, fhi, 1e-6, 200)
	if err != nil {
		return math.NaN(), fmt.Errorf("erm: perfect recovery at rho = %g: %w", rho, err)
	}
	return a, nil
}

// Interpolation returns the interpolation threshold alpha_interp(rho, Delta) of noisy labels
// (Delta > 0) at lambda -> 0+: below it the estimator fits every label (the minimal nuclear
// norm interpolator, I = 2 alpha), above it the PSD least-squares fit leaves a residual
// (tau = 0, I < 2 alpha). At the threshold tau = 0 and I(0) = 2 alpha, so the state evolution
// is parametrised by Delta_eff = d alone: alpha(d) = I_0(d)/2 and E(d) = Q0 - 2 m_0 + q_0 (the
// integrals at tau = 0), and Delta_eff = (E + Delta/2)/(2 alpha) gives the label noise of that
// point, Delta(d) = 2 (d I_0(d) - E(d)), which tends to 0 with d (the noiseless end, alpha =
// (1 + 2 rho - rho^2)/4). The root of Delta(d) = Delta is found with engine/root to a relative
// 1e-10; no state evolution is iterated, so the critical slowing down at the threshold (where
// the map is tangent to the diagonal) costs nothing.
func Interpolation(rho, noise float64) (float64, error) {
	if !(rho > 0) || math.IsInf(rho, 0) {
		return math.NaN(), fmt.Errorf("erm: rho = %g, need 0 < rho < inf", rho)
	}
	if !(noise > 0) || math.IsInf(noise, 0) {
		return math.NaN(), fmt.Errorf("erm: the interpolation threshold needs label noise Delta > 0, got %g", noise)
	}
	at := func(d float64) (alpha, delta float64, err error) {
		sp, err := rie.New(rho, d)
		if err != nil {
			return math.NaN(), math.NaN(), err
		}
		i, q, m, _, _, _ := integrals(sp, 0)
		e := 1 + rho - 2*m + q
		return i / 2, 2 * (d*i - e), nil
	}
	f := func(d float64) (float64, error) {
		_, delta, err := at(d)
		return delta - noise, err
	}
	lo := 1e-8
	flo, err := f(lo)
	if err != nil {
		return math.NaN(), err
	}
	a, b, fa, fb, err := root.Expand(f, lo, flo, 1e-4, 2, 1e8)
	if err != nil {
		return math.NaN(), fmt.Errorf("erm: interpolation threshold at rho = %g, Delta = %g: %w", rho, noise, err)
	}
	d, err := root.Find(f, a, b, fa, fb, 1e-10, 300)
	if err != nil {
		return math.NaN(), fmt.Errorf("erm: interpolation threshold at rho = %g, Delta = %g: %w", rho, noise, err)
	}
	alpha, _, err := at(d)
	return alpha, err
}

// PerfectRecoverySoftmax returns alpha_c(rho) of the softmax channel at T tokens: the limit
// lambda -> 0+ of its noiseless ERM is the linear channel's at alpha K/2 (K = T^2 + T - 2),
// so alpha_c is 2/K times PerfectRecovery's.
func PerfectRecoverySoftmax(rho float64, T int) (float64, error) {
	if T < 2 {
		return math.NaN(), fmt.Errorf("erm: softmax with T = %d tokens, need T >= 2", T)
	}
	a, err := PerfectRecovery(rho)
	return a * 2 / float64(T*T+T-2), err
}
