package rie

import (
	"fmt"
	"math"
)

// Mutual information of matrix denoising (the prior part of the AIM free entropy).
//
// Normalisation. Y = S + sqrt(Delta) Z with Z GOE (off-diagonal variance 1/D, diagonal 2/D) and
// snr = 1/Delta. Off the diagonal, sqrt(D snr) S_ij + z_ij is a scalar Gaussian channel of
// signal-to-noise ratio D snr; on the diagonal the ratio is D snr/2. The I-MMSE relation of a
// scalar channel, dI/d(snr) = mmse/2, summed over the D(D-1)/2 pairs i < j and the D diagonal
// entries, gives
//
//	dI/d(snr) = (D/2) [ sum_{i<j} E(S_ij - S_hat_ij)^2 + (1/2) sum_i E(S_ii - S_hat_ii)^2 ]
//	          = (D/4) E||S - S_hat||_F^2 = (D^2/4) mmse(1/snr; rho),
//
// with mmse = E||S - S_hat||_F^2 / D as in MMSE. Per D^2 (the AIM's scale, N = alpha D^2):
//
//	i(snr; rho) = lim I(S; Y)/D^2 = (1/4) ∫_0^snr mmse(1/t; rho) dt.
//
// Limits: i ~ snr/4 as snr -> 0 (mmse -> 1, the variance of S once its mean sqrt(rho) I is
// known); i ~ (c/4) log snr as snr -> inf with c = 2 rho - rho^2 for rho < 1 and c = 1 for
// rho >= 1 (mmse ~ c Delta: the rank-deficient S has (2 rho - rho^2) D^2/2 degrees of freedom);
// as rho -> inf, MP(rho) (centred) tends to the semicircle and i -> (1/4) log(1 + snr).

// miSNRMax is the signal-to-noise ratio above which MutualInformation continues analytically:
// i(snr) = i(miSNRMax) + (c/4) log(snr/miSNRMax). The neglected tail (1/4) ∫ (mmse(1/t) - c/t) dt
// beyond miSNRMax is O(1/miSNRMax) (O(miSNRMax^{-2/3}) at rho = 1, where mmse/Delta - 1 decays
// like Delta^{2/3}): below 1e-6 absolute.
const miSNRMax = 1e10

// Quadrature tolerances of MutualInformation.
const (
	miRelTol = 1e-11
	miAbsTol = 1e-14
)

// MMSESlope returns c = lim mmse(Delta; rho)/Delta as Delta -> 0: 2 rho - rho^2 for rho < 1 and
// 1 for rho >= 1 (docs/theory/aim.md 2.1), the share of the D^2/2 entries of S that are free.
func MMSESlope(rho float64) float64 {
	if rho < 1 {
		return 2*rho - rho*rho
	}
	return 1
}

// MutualInformation returns i(snr; rho) = lim I(S; Y)/D^2 for Y = S + snr^{-1/2} Z (S with law
// MP(rho), E S = sqrt(rho) I, Z GOE):
//
//	i(snr; rho) = (1/4) ∫_0^snr mmse(1/t; rho) dt,
//
// the I-MMSE relation in this normalisation (see the derivation above; dI/d(snr) = D^2 mmse/4).
// It is integrated with the adaptive Gauss-Kronrod rule of the package in t on [0, min(snr, 1)]
// (mmse(1/t) = 1 - t + O(t^2) is smooth at t = 0, where mmse = 1) and in log t on [1, snr], where
// the integrand t mmse(1/t) tends to the constant c = MMSESlope(rho); beyond snr = 1e10 it
// continues as (c/4) log snr. Accuracy: 1e-13 absolute against the independent log-energy
// formula i = (1/2)[Sigma(mu_Delta) - Sigma(SC_Delta)] at one and two bulks (tests); the
// distance to a semicircular prior's (1/4) log(1 + snr) at rho = 1e4 is 1/(12 rho) at large snr,
// and the I-MMSE derivative is recovered by central differences to 1e-7 relative. Cost: 0.4 to
// 20 ms (larger at small rho and large snr). It returns 0 at
// snr = 0, +Inf at snr = +Inf, and an error for snr < 0, NaN, or a rho that MMSE rejects.
func MutualInformation(snr, rho float64) (float64, error) {
	if math.IsNaN(snr) || snr < 0 {
		return math.NaN(), fmt.Errorf("rie: mutual information at snr = %g: need snr >= 0", snr)
	}
	if !(rho > 0) || math.IsInf(rho, 0) {
		return math.NaN(), fmt.Errorf("rie: mutual information: rho = %g, need 0 < rho < inf", rho)
	}
	switch {
	case snr == 0:
		return 0, nil
	case math.IsInf(snr, 1):
		return math.Inf(1), nil
	}
	var qerr error
	mmse := func(t float64) float64 {
		if t == 0 {
			return 1
		}
		m, err := MMSE(1/t, rho)
		if err != nil && qerr == nil {
			qerr = err
		}
		return m
	}
	hi := math.Min(snr, 1)
	lo, _ := adapt(mmse, 0, hi, miRelTol, miAbsTol)
	total := lo
	if snr > 1 {
		top := math.Min(snr, miSNRMax)
		f := func(u float64) float64 { t := math.Exp(u); return t * mmse(t) }
		v, _ := adapt(f, 0, math.Log(top), miRelTol, miAbsTol)
		total += v
		if snr > miSNRMax {
			total += MMSESlope(rho) * math.Log(snr/miSNRMax)
		}
	}
	if qerr != nil {
		return math.NaN(), fmt.Errorf("rie: mutual information at snr = %g, rho = %g: %w", snr, rho, qerr)
	}
	return total / 4, nil
}
