package channel

import (
	"math"
	"testing"
)

// bruteCDF is Phi2(h, k; r) = int_{-inf}^h phi(x) Phi((k - r x)/s) dx by composite 10-point
// Gauss-Legendre on panels of width <= 0.05 over [min(h, 0) - 40, h], Kahan-summed.
func bruteCDF(h, k, r float64) float64 {
	s := math.Sqrt(1 - r*r)
	x, w := GaussLegendre(10)
	lo := math.Min(h, 0) - 40
	const dt = 0.05
	np := int(math.Ceil((h - lo) / dt))
	dt2 := (h - lo) / float64(np)
	sum, c := 0.0, 0.0
	for p := 0; p < np; p++ {
		a := lo + float64(p)*dt2
		for i := range x {
			xx := a + dt2/2*(1+x[i])
			v := w[i] * dt2 / 2 * math.Exp(-xx*xx/2) / math.Sqrt(2*math.Pi) * normCDF((k-r*xx)/s)
			y := v - c
			tt := sum + y
			c = (tt - sum) - y
			sum = tt
		}
	}
	return sum
}

// bruteLogBVN is log Phi2(h, k; r) = log int_{-inf}^h phi(x) Phi((k - r x)/s) dx by composite
// 10-point Gauss-Legendre in t = h - x >= 0 on panels of width 0.05/(1 + |h| + |r a/s|),
// a = (k - r h)/s (the integrand's scale of variation), Kahan-summed in logarithms
// (log-sum-exp), so it keeps relative accuracy in the far tails. The log-integrand is concave,
// so the sum stops once it has fallen 80 below its maximum.
func bruteLogBVN(h, k, r float64) float64 {
	s := math.Sqrt(1 - r*r)
	x, w := GaussLegendre(10)
	dt := 0.05 / (1 + math.Abs(h) + math.Abs(r*(k-r*h)/(s*s)))
	var ls []float64
	mx := math.Inf(-1)
	for p := 0; ; p++ {
		t0 := float64(p) * dt
		last := math.Inf(-1)
		for i := range x {
			xx := h - (t0 + dt/2*(1+x[i]))
			l := math.Log(w[i]*dt/2) + LogNormPDF(xx) + LogNormCDF((k-r*xx)/s)
			ls = append(ls, l)
			mx = math.Max(mx, l)
			last = l
		}
		if last < mx-80 {
			break
		}
	}
	sum, c := 0.0, 0.0
	for _, l := range ls {
		y := math.Exp(l-mx) - c
		t := sum + y
		c = (t - sum) - y
		sum = t
	}
	return mx + math.Log(sum)
}

var bvnTestArgs = []float64{-40, -12, -5, -2.5, -2, -1.3, 0, 0.7, 2, 5}

func TestBivariateNormalCDFIdentities(t *testing.T) {
	worst := 0.0
	check := func(name string, got, want, tol float64) {
		t.Helper()
		d := math.Abs(got - want)
		worst = math.Max(worst, d)
		if !(d <= tol) {
			t.Errorf("%s: got %.17g, want %.17g (diff %.2e > %.0e)", name, got, want, d, tol)
		}
	}
	for _, r := range []float64{-0.999, -0.95, -0.9, -0.7, -0.5, -1.0 / 3, -0.2, 0, 0.2, 1.0 / 3, 0.5, 0.7, 0.9, 0.95, 0.999} {
		// Sheppard: Phi2(0, 0; r) = 1/4 + asin(r)/(2 pi).
		check("Phi2(0,0;r)", BivariateNormalCDF(0, 0, r), 0.25+math.Asin(r)/(2*math.Pi), 2e-16)
		for _, h := range bvnTestArgs[2:] {
			for _, k := range bvnTestArgs[2:] {
				p := BivariateNormalCDF(h, k, r)
				check("symmetry", BivariateNormalCDF(k, h, r), p, 1e-15)
				// P(X<h, Y<k) + P(X<h, Y>k) = Phi(h), and P(X<h, Y>k; r) = Phi2(h, -k; -r).
				check("complement", p+BivariateNormalCDF(h, -k, -r), normCDF(h), 2e-15)
				if r == 0 {
					check("product", p, normCDF(h)*normCDF(k), 1e-16)
				}
			}
		}
	}
	t.Logf("largest identity residual %.2e", worst)
	// Plackett: dPhi2/dr = phi2 (central difference, error ~1e-10).
	for _, c := range [][3]float64{{0.3, -0.7, 0.2}, {-1, 1.5, -1.0 / 3}, {1.2, 0.4, 0.8}, {0.1, 0.2, -0.94}} {
		const e = 1e-5
		fd := (BivariateNormalCDF(c[0], c[1], c[2]+e) - BivariateNormalCDF(c[0], c[1], c[2]-e)) / (2 * e)
		check("Plackett", fd, BivariateNormalPDF(c[0], c[1], c[2]), 1e-9)
	}
	if !math.IsNaN(BivariateNormalCDF(0, 0, 1.5)) || !math.IsNaN(BivariateNormalCDF(math.NaN(), 0, 0)) {
		t.Error("want NaN for |r| > 1 or NaN arguments")
	}
	if BivariateNormalCDF(math.Inf(1), 0.3, 0.5) != normCDF(0.3) || BivariateNormalCDF(math.Inf(-1), 0.3, 0.5) != 0 {
		t.Error("infinite arguments")
	}
}

// TestBivariateNormalCDFBrute compares Genz's CDF (absolute error) and BVNRatios (relative error,
// into the far tails) with the brute-force 1-D integral.
func TestBivariateNormalCDFBrute(t *testing.T) {
	rs := []float64{-0.9, -0.6, -1.0 / 3, -0.1, 0.1, 1.0 / 3, 0.6, 0.9}
	if testing.Short() {
		rs = []float64{-1.0 / 3, 1.0 / 3}
	}
	worstAbs, worstRel := 0.0, 0.0
	for _, r := range rs {
		for _, h := range bvnTestArgs {
			for _, k := range bvnTestArgs {
				if k < h {
					continue // symmetry is tested above
				}
				bf := bruteLogBVN(h, k, r)
				d := math.Abs(BivariateNormalCDF(h, k, r) - bruteCDF(h, k, r))
				worstAbs = math.Max(worstAbs, d)
				if d > 2e-15 {
					t.Errorf("CDF(%v, %v; %v): abs error %.2e", h, k, r, d)
				}
				lz, _, _, _ := BVNRatios(h, k, r)
				// |d log| is the relative error of Phi2, once the rounding of a log of size |bf|
				// (about 2e-16 |bf|) is allowed for.
				d = math.Abs(lz - bf)
				if math.Abs(bf) < 50 {
					worstRel = math.Max(worstRel, d)
				}
				if d > 1e-13+4e-16*math.Abs(bf) {
					t.Errorf("BVNRatios(%v, %v; %v) = %.17g, brute %.17g", h, k, r, lz, bf)
				}
			}
		}
	}
	t.Logf("CDF abs error <= %.1e; BVNRatios relative error <= %.1e where log Phi2 > -50 (brute force limits both)", worstAbs, worstRel)
}

func TestBivariateNormalDerivatives(t *testing.T) {
	for _, c := range [][3]float64{{0.3, -0.7, 1.0 / 3}, {-1, 1.5, -1.0 / 3}, {1.2, 0.4, 0.6}, {-1.9, -1.5, 1.0 / 3}} {
		lz, r1, r2, p := BVNRatios(c[0], c[1], c[2])
		z := math.Exp(lz)
		if d := math.Abs(z - BivariateNormalCDF(c[0], c[1], c[2])); d > 1e-16 {
			t.Errorf("BVNRatios vs CDF at %v: %.2e", c, d)
		}
		if d := math.Abs(p*z/BivariateNormalPDF(c[0], c[1], c[2]) - 1); d > 1e-14 {
			t.Errorf("phi2/Phi2 at %v: relative error %.2e", c, d)
		}
		const e = 1e-5
		d1 := (BivariateNormalCDF(c[0]+e, c[1], c[2]) - BivariateNormalCDF(c[0]-e, c[1], c[2])) / (2 * e)
		d2 := (BivariateNormalCDF(c[0], c[1]+e, c[2]) - BivariateNormalCDF(c[0], c[1]-e, c[2])) / (2 * e)
		if math.Abs(d1-r1*z) > 1e-9 || math.Abs(d2-r2*z) > 1e-9 {
			t.Errorf("derivatives at %v: fd (%v, %v), formula (%v, %v)", c, d1, d2, r1*z, r2*z)
		}
	}
	// The tail branch of BVNRatios against Genz where Genz is still relatively accurate (r > 0).
	for _, c := range [][2]float64{{-2.5, -2.1}, {-4, -3}, {-6, 1}, {-8, -7.5}, {-3, 10}} {
		lz, _, _, _ := BVNRatios(c[0], c[1], 1.0/3)
		z := BivariateNormalCDF(c[0], c[1], 1.0/3)
		if d := math.Abs(math.Exp(lz)/z - 1); d > 1e-13 {
			t.Errorf("tail branch at %v: relative difference %.2e", c, d)
		}
	}
}

func TestLogNormCDF(t *testing.T) {
	for _, x := range []float64{-37, -35, -32, -30.5, -30, -10, -1, 0, 1, 8, 30} {
		want := math.Log(normCDF(x))
		if d := math.Abs(LogNormCDF(x) - want); d > 2e-15*math.Max(1, math.Abs(want)) {
			t.Errorf("LogNormCDF(%v) = %.17g, want %.17g", x, LogNormCDF(x), want)
		}
	}
	// Below Erfc's range: Phi(x) ~ phi(x)/|x| (1 - 1/x^2 + 3/x^4).
	x := -1000.0
	want := LogNormPDF(x) - math.Log(-x) + math.Log1p(-1/(x*x)+3/(x*x*x*x))
	if d := math.Abs(LogNormCDF(x) - want); d > 1e-9 {
		t.Errorf("LogNormCDF(-1000) = %v, want %v", LogNormCDF(x), want)
	}
	if d := math.Abs(BivariateNormalPDF(0.3, -0.2, 0.5) - math.Exp(-(0.09+0.06+0.04)/(2*0.75))/(2*math.Pi*math.Sqrt(0.75))); d > 1e-16 {
		t.Errorf("pdf differs by %.2e", d)
	}
}

var bvnSink float64

func BenchmarkBivariateNormalCDF(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		bvnSink += BivariateNormalCDF(0.3+1e-9*float64(i&7), -0.7, 1.0/3)
	}
}

// BenchmarkBvnLogTail times the log-space evaluation in the tail branch (h < -2).
func BenchmarkBvnLogTail(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		lz, _, _, _ := BVNRatios(-4.5+1e-9*float64(i&7), 1.2, -1.0/3)
		bvnSink += lz
	}
}
