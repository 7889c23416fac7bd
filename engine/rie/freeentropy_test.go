package rie

import (
	"math"
	"testing"
)

// As rho -> inf the centred MP(rho) tends to the semicircle of variance 1, whose denoising error
// is Delta/(1 + Delta), so i -> (1/4) log(1 + snr) in closed form; the distance shrinks like
// 1/rho (the third free cumulant of MP is rho^{-1/2}, entering mmse squared).
func TestMutualInformationGaussianLimit(t *testing.T) {
	for _, snr := range []float64{1e-3, 0.5, 1, 10, 1e3, 1e6, 1e12} {
		want := 0.25 * math.Log1p(snr)
		var dev [2]float64
		for k, rho := range []float64{1e4, 1e5} {
			got, err := MutualInformation(snr, rho)
			if err != nil {
				t.Fatal(err)
			}
			dev[k] = want - got
			if tol := 2 / rho; math.Abs(got-want) > tol {
				t.Errorf("snr=%g rho=%g: i = %.12g, semicircle (1/4)log(1+snr) = %.12g (tol %.1e)", snr, rho, got, want, tol)
			}
		}
		t.Logf("snr=%g: rho=1e4 deviation %.3e, rho=1e5 %.3e (ratio %.2f, 1/rho scaling gives 10)", snr, dev[0], dev[1], dev[0]/dev[1])
		if snr >= 1 && math.Abs(dev[0]/dev[1]-10) > 1 {
			t.Errorf("snr=%g: the distance to the Gaussian limit does not scale like 1/rho: ratio %.3f", snr, dev[0]/dev[1])
		}
	}
}

// Small snr: mmse(1/t) = 1 - t + (1 - 1/rho) t^2 + O(t^3) (TestMMSELargeDelta), so
// i = (1/4)(snr - snr^2/2 + (1 - 1/rho) snr^3/3) + O(snr^4).
func TestMutualInformationSmallSNR(t *testing.T) {
	for _, rho := range []float64{0.1, 0.5, 1, 2, 10} {
		for _, snr := range []float64{1e-4, 1e-3, 1e-2} {
			got, err := MutualInformation(snr, rho)
			if err != nil {
				t.Fatal(err)
			}
			want := 0.25 * (snr - snr*snr/2 + (1-1/rho)*snr*snr*snr/3)
			if tol := 0.25*4*(1+1/(rho*rho))*math.Pow(snr, 4) + 1e-15; math.Abs(got-want) > tol {
				t.Errorf("rho=%g snr=%g: i = %.15g, series %.15g (diff %.2e > %.2e)", rho, snr, got, want, got-want, tol)
			}
		}
	}
}

// Large snr: di/d(log snr) = snr mmse(1/snr)/4 -> c/4, c = 2 rho - rho^2 (rho < 1) or 1: the
// log growth of a rank-deficient (or full-rank) S. Checked on i(1e12) - i(1e9) (across the
// analytic continuation at 1e10) and i(1e9) - i(1e8) (pure quadrature).
func TestMutualInformationLargeSNR(t *testing.T) {
	for _, rho := range []float64{0.1, 0.5, 0.9, 2, 10} {
		c := MMSESlope(rho)
		for _, r := range [][2]float64{{1e8, 1e9}, {1e9, 1e12}} {
			a, err1 := MutualInformation(r[0], rho)
			b, err2 := MutualInformation(r[1], rho)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			slope := (b - a) / math.Log(r[1]/r[0])
			// mmse/Delta - c = O(Delta) (rho != 1): relative 1e-7 at snr = 1e8 for these rho.
			if math.Abs(slope-c/4) > 1e-6*c {
				t.Errorf("rho=%g [%g, %g]: di/dlog(snr) = %.10g, want c/4 = %.10g", rho, r[0], r[1], slope, c/4)
			}
		}
	}
}

// The I-MMSE relation back: a central difference of i in snr equals mmse(1/snr)/4 (the
// quadrature's pieces join at snr = 1 and 1e10; both are crossed).
func TestMutualInformationDerivative(t *testing.T) {
	for _, rho := range []float64{0.1, 0.5, 1, 3} {
		for _, snr := range []float64{0.3, 1, 7, 300, 1e5, 1e10} {
			h := 1e-4 * snr
			a, _ := MutualInformation(snr-h, rho)
			b, _ := MutualInformation(snr+h, rho)
			fd := (b - a) / (2 * h)
			m, _ := MMSE(1/snr, rho)
			// Central-difference truncation (h/snr)^2 ~ 1e-8 of the curvature, plus the
			// quadrature's ~1e-12 absolute over h.
			tol := 1e-7*m/4 + 1e-11/h
			if math.Abs(fd-m/4) > tol {
				t.Errorf("rho=%g snr=%g: (i(snr+h)-i(snr-h))/2h = %.12g, mmse/4 = %.12g (tol %.1e)", rho, snr, fd, m/4, tol)
			}
		}
	}
}

func TestMutualInformationErrors(t *testing.T) {
	if v, err := MutualInformation(0, 0.5); err != nil || v != 0 {
		t.Errorf("i(0) = %g, %v; want 0", v, err)
	}
	if v, err := MutualInformation(math.Inf(1), 0.5); err != nil || !math.IsInf(v, 1) {
		t.Errorf("i(inf) = %g, %v; want +Inf", v, err)
	}
	for _, c := range [][2]float64{{-1, 0.5}, {math.NaN(), 0.5}, {1, 0}, {1, math.Inf(1)}} {
		if _, err := MutualInformation(c[0], c[1]); err == nil {
			t.Errorf("MutualInformation(%g, %g): no error", c[0], c[1])
		}
	}
}

// logEnergy returns Sigma(mu) = ∫∫ log|x - y| mu(x) mu(y) dx dy of mu_Delta, from the log
// potential U(x) = ∫ log|x - t| mu(t) dt, whose derivative is Re g(x - i0) on the whole real
// line: U(X) = log X - m1/X - m2/(2 X^2) - m3/(3 X^3) + O(X^-4) far right, then U is
// integrated back to the support along Re g, and Sigma = ∫ U mu. Every integral is adaptive
// Gauss-Kronrod in an edge-regularising variable (cos substitution on bulks and gaps,
// s = b + u^2 and log s beyond the right edge b).
func logEnergy(t *testing.T, rho, delta float64) float64 {
	sp, err := New(rho, delta)
	if err != nil {
		t.Fatal(err)
	}
	re := func(x float64) float64 { return real(sp.Stieltjes(x)) }
	e := sp.Edges()
	b := e[len(e)-1]
	const X = 1e4
	m1, m2 := math.Sqrt(rho), 1+rho+delta
	m3 := 1/math.Sqrt(rho) + 3*math.Sqrt(rho)*(1+delta) + rho*math.Sqrt(rho)
	near, _ := adapt(func(u float64) float64 { return re(b+u*u) * 2 * u }, 0, 1, 1e-13, 1e-15)
	far, _ := adapt(func(v float64) float64 { s := math.Exp(v); return re(s) * s }, math.Log(b+1), math.Log(X), 1e-13, 1e-15)
	uB := math.Log(X) - m1/X - m2/(2*X*X) - m3/(3*X*X*X) - near - far
	// cosInt integrates f over [lo, hi] in x = lo + (hi - lo)(1 - cos th)/2, from th0 to th1.
	cosInt := func(f func(float64) float64, lo, hi, th0, th1 float64) float64 {
		v, _ := adapt(func(th float64) float64 {
			return f(lo+(hi-lo)*(1-math.Cos(th))/2) * (hi - lo) * math.Sin(th) / 2
		}, th0, th1, 1e-13, 1e-15)
		return v
	}
	sigma := 0.0
	uRight := uB // U at the right edge of the current bulk
	for k := len(e)/2 - 1; k >= 0; k-- {
		lo, hi := e[2*k], e[2*k+1]
		// U(x(th)) = U(hi) - ∫_x^hi Re g.
		sigma += cosInt(func(x float64) float64 {
			th := math.Acos(1 - 2*(x-lo)/(hi-lo))
			u := uRight - cosInt(re, lo, hi, th, math.Pi)
			return u * sp.Density(x)
		}, lo, hi, 0, math.Pi)
		if k > 0 { // across the gap to the next bulk down
			uRight = uRight - cosInt(re, lo, hi, 0, math.Pi) - cosInt(re, e[2*k-1], lo, 0, math.Pi)
		}
	}
	return sigma
}

// The mutual information of a rotationally invariant denoising problem from the spectrum alone:
// Y and the noise sqrt(Delta) Z are both rotationally invariant, their entropies per D^2 are
// (1/2) Sigma of their limiting spectra plus one common constant, so
// i = h(Y) - h(sqrt(Delta) Z) = (1/2) [Sigma(mu_Delta) - Sigma(SC_Delta)], with
// Sigma(SC_Delta) = (1/2) log Delta - 1/4. This is independent of the I-MMSE route (no mmse,
// no integral over snr): it checks rie.MMSE and MutualInformation together, at one and at two
// bulks.
func TestMutualInformationLogEnergy(t *testing.T) {
	for _, c := range []struct{ rho, delta float64 }{{0.5, 1}, {0.1, 0.5}, {0.5, 0.01}, {2, 0.2}, {1, 3}} {
		want := 0.5 * (logEnergy(t, c.rho, c.delta) - (0.5*math.Log(c.delta) - 0.25))
		got, err := MutualInformation(1/c.delta, c.rho)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rho=%g Delta=%g: I-MMSE %.12f, log energy %.12f, difference %.1e", c.rho, c.delta, got, want, got-want)
		if math.Abs(got-want) > 1e-11 {
			t.Errorf("rho=%g Delta=%g: i = %.12g (I-MMSE), %.12g (log energy)", c.rho, c.delta, got, want)
		}
	}
}
