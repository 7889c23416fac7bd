package rie

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// cdf returns ∫_{-inf}^x mu(t) dt.
func (sp *Spectrum) cdf(x float64) float64 {
	F := 0.0
	for k := 0; k < sp.nb; k++ {
		a, b := sp.edges[2*k], sp.edges[2*k+1]
		if x >= b {
			m, _ := sp.bulkIntegral(k, func(_, mu float64) float64 { return mu }, 1e-12)
			F += m
			continue
		}
		if x > a {
			// θ(x) for x = a + (b - a) sin^2(θ/2)
			th := 2 * math.Asin(math.Sqrt((x-a)/(b-a)))
			w := b - a
			m, _ := adapt(func(t float64) float64 {
				sh, ch := math.Sincos(0.5 * t)
				xx := a + w*sh*sh
				if !(xx > a && xx < b) {
					return 0
				}
				return sp.Density(xx) * w * sh * ch
			}, 0, th, 1e-12, 1e-300)
			F += m
		}
		break
	}
	return F
}

// Monte Carlo check at D = 400: sample S = W W^T/sqrt(R D), Y = S + sqrt(Delta) Z with Z GOE,
// and compare (i) the eigenvalue distribution of Y with mu_Delta in Kolmogorov distance and
// (ii) the error (1/D)||S_hat - S||_F^2 of the RIE S_hat = O diag(Denoise(λ)) O^T with
// mmse(Delta; rho).
//
// Tolerances. Eigenvalues of Wigner/Wishart-type matrices are rigid: their empirical CDF deviates
// from the limit by O(log D / D) (a few 1e-3 at D = 400), so a Kolmogorov distance of 0.02 has a
// wide margin while any error in the density or the edges of order 1e-2 would be caught. The
// RIE error is an average of D^2/2 weakly dependent squared entries; its fluctuations and its
// finite-D bias (the RIE uses the asymptotic g at finite D) are both O(1/D) ~ 2.5e-3 times O(1)
// constants (observed: |diff| < 5e-3), so 0.03 is a wide bound that still separates mmse from
// the error of the trivial estimate S_hat = Y (which is ~Delta: 1.00 and 0.25 here, against
// mmse 0.40 and 0.19).
func TestMonteCarlo(t *testing.T) {
	if testing.Short() {
		t.Skip("Monte Carlo check skipped in -short mode")
	}
	const D = 400
	cases := []struct{ rho, delta float64 }{{0.5, 1}, {2, 0.25}}
	rng := rand.New(rand.NewPCG(20250601, 1582))
	for _, c := range cases {
		R := int(c.rho * D)
		W := mat.NewDense(D, R, nil)
		for i := 0; i < D; i++ {
			for j := 0; j < R; j++ {
				W.Set(i, j, rng.NormFloat64())
			}
		}
		S := mat.NewSymDense(D, nil)
		S.SymOuterK(1/math.Sqrt(float64(R)*D), W)
		Y := mat.NewSymDense(D, nil)
		sd := math.Sqrt(c.delta)
		for i := 0; i < D; i++ {
			for j := i; j < D; j++ {
				// GOE: off-diagonal variance 1/D, diagonal 2/D
				z := rng.NormFloat64() / math.Sqrt(D)
				if i == j {
					z *= math.Sqrt2
				}
				Y.SetSym(i, j, S.At(i, j)+sd*z)
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(Y, true) {
			t.Fatal("EigenSym failed")
		}
		lam := eig.Values(nil) // ascending
		var O mat.Dense
		eig.VectorsTo(&O)

		sp, err := New(c.rho, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		// (i) Kolmogorov distance between the empirical CDF and ∫ mu.
		ks := 0.0
		for i, l := range lam {
			F := sp.cdf(l)
			ks = math.Max(ks, math.Max(math.Abs(F-float64(i)/D), math.Abs(F-float64(i+1)/D)))
		}
		// (ii) RIE error.
		f := make([]float64, D)
		for i, l := range lam {
			f[i] = sp.Denoise(l)
		}
		OF := mat.NewDense(D, D, nil)
		OF.Copy(&O)
		for j := 0; j < D; j++ {
			for i := 0; i < D; i++ {
				OF.Set(i, j, OF.At(i, j)*f[j])
			}
		}
		var Sh mat.Dense
		Sh.Mul(OF, O.T())
		errRIE, errY := 0.0, 0.0
		mean := math.Sqrt(c.rho)
		for i := 0; i < D; i++ {
			for j := 0; j < D; j++ {
				d := Sh.At(i, j) - S.At(i, j)
				errRIE += d * d
				dy := Y.At(i, j) - S.At(i, j)
				errY += dy * dy
			}
		}
		errRIE /= D
		errY /= D
		mm := sp.MMSE()
		// Trace check: the RIE keeps the mean, (1/D) Tr S_hat ≈ sqrt(rho).
		tr := 0.0
		for _, v := range f {
			tr += v
		}
		tr /= D
		t.Logf("rho=%g Delta=%g D=%d: Kolmogorov distance %.4f; RIE error %.4f vs mmse %.4f (diff %+.4f); "+
			"error of Y itself %.4f; (1/D)Tr S_hat = %.4f vs sqrt(rho) = %.4f",
			c.rho, c.delta, D, ks, errRIE, mm, errRIE-mm, errY, tr, mean)
		if ks > 0.02 {
			t.Errorf("rho=%g Delta=%g: Kolmogorov distance %.4f > 0.02", c.rho, c.delta, ks)
		}
		if math.Abs(errRIE-mm) > 0.03 {
			t.Errorf("rho=%g Delta=%g: RIE error %.4f, mmse %.4f: |diff| > 0.03", c.rho, c.delta, errRIE, mm)
		}
		if math.Abs(tr-mean) > 0.03 {
			t.Errorf("rho=%g Delta=%g: (1/D) Tr S_hat = %.4f, want about %.4f", c.rho, c.delta, tr, mean)
		}
	}
}
