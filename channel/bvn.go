package channel

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"
)

// Bivariate normal probabilities (docs/theory/aim.md 2.3 needs Phi2 and its partial derivatives).
//
// BivariateNormalCDF follows Genz, "Numerical computation of rectangular bivariate and
// trivariate normal and t probabilities", Statistics and Computing 14 (2004) 251-260
// (the Drezner-Wesolowsky integral over asin r with 6/12/20-point Gauss-Legendre rules, and
// the tail expansion for |r| >= 0.925). Its absolute error is about 1e-15.
//
// For the channel, which needs ratios such as d1Phi2/Phi2 when Phi2 is tiny, BVNRatios works
// in logarithms: when min(h, k) < bvnTailCut it writes Phi2(h, k; r) = D1(h, k) * I with
// D1 = phi(h) Phi((k - r h)/sqrt(1 - r^2)) = dPhi2/dh and
//
//	I = int_0^inf exp(h t - t^2/2) Phi((k - r h + r t)/s) / Phi((k - r h)/s) dt,
//
// (x = h - t in Phi2 = int_{-inf}^h phi(x) Phi((k - r x)/s) dx, taking h <= k), a smooth
// log-concave integral of order 1/|h| that never underflows. Then D1/Phi2 = 1/I exactly
// and Phi2 has full relative accuracy far into the tails (h, k -> -inf).

// gl6, gl12, gl20 are Gauss-Legendre rules on [-1, 1] (Genz's 6, 12 and 20 points);
// glTail is the rule used on each panel of the tail integral.
var (
	gl6x, gl6w       = GaussLegendre(6)
	gl12x, gl12w     = GaussLegendre(12)
	gl20x, gl20w     = GaussLegendre(20)
	glTailx, glTailw = GaussLegendre(12)
)

// GaussLegendre returns the n-point Gauss-Legendre nodes x and weights w on [-1, 1]
// (gonum's quad.Legendre): sum_i w_i f(x_i) integrates polynomials of degree 2n - 1 exactly.
func GaussLegendre(n int) (x, w []float64) {
	x = make([]float64, n)
	w = make([]float64, n)
	quad.Legendre{}.FixedLocations(x, w, -1, 1)
	return x, w
}

// HermiteNormal returns the n-point Gauss-Hermite rule for a standard normal variable: nodes
// x and probability weights w, sum_i w_i f(x_i) = E f(Z), Z ~ N(0, 1), exact for polynomials
// of degree 2n - 1 (gonum's quad.Hermite, rescaled from the weight exp(-x^2)).
func HermiteNormal(n int) (x, w []float64) {
	x, w = make([]float64, n), make([]float64, n)
	quad.Hermite{}.FixedLocations(x, w, math.Inf(-1), math.Inf(1))
	for i := range x {
		x[i] *= math.Sqrt2
		w[i] /= math.SqrtPi
	}
	return x, w
}

const (
	lnSqrt2Pi = 0.91893853320467274178032973640561763986139747363778 // log(sqrt(2 pi))
	ln2Pi     = 2 * lnSqrt2Pi
	// bvnTailCut: below this value of min(h, k) (or, for r < 0, where Phi2 < 1e-3), BVNRatios
	// uses the tail integral instead of log(BivariateNormalCDF), whose relative accuracy
	// degrades there (cancellation for r < 0, underflow for very negative arguments).
	bvnTailCut = -2.0
)

// normCDF is the standard normal CDF Phi(x).
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// LogNormPDF is log phi(x).
func LogNormPDF(x float64) float64 { return -0.5*x*x - lnSqrt2Pi }

// LogNormCDF is log Phi(x), accurate in relative terms for all x (Mills-ratio series for
// x < -30, where Phi underflows or loses precision in Erfc).
func LogNormCDF(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return math.NaN()
	case x > 0:
		return math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
	case x > -30:
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	case math.IsInf(x, -1):
		return math.Inf(-1)
	}
	return LogNormPDF(x) - math.Log(-x) + math.Log(millsSeries(-x))
}

// millsSeries is t Phi(-t)/phi(t) = 1 - 1/t^2 + 3/t^4 - 15/t^6 + ... for t >= 30: the terms
// decrease until order t^2/2 > 450, so 12 terms give full double precision.
func millsSeries(t float64) float64 {
	z := 1 / (t * t)
	sum, term := 1.0, 1.0
	for n := 1; n <= 12; n++ {
		term *= -float64(2*n-1) * z
		sum += term
	}
	return sum
}

// invMills is phi(x)/Phi(x), with full relative accuracy for all x (about -x as x -> -inf).
func invMills(x float64) float64 {
	if x > -30 {
		return math.Exp(LogNormPDF(x)) / normCDF(x)
	}
	return -x / millsSeries(-x)
}

// BivariateNormalPDF is the density phi2(h, k; r) of two standard normals with correlation r.
func BivariateNormalPDF(h, k, r float64) float64 {
	return math.Exp(logBivariateNormalPDF(h, k, r))
}

func logBivariateNormalPDF(h, k, r float64) float64 {
	om := (1 - r) * (1 + r)
	return -(h*h-2*r*h*k+k*k)/(2*om) - ln2Pi - 0.5*math.Log(om)
}

// BivariateNormalCDF returns P(X < h, Y < k) for standard normals X, Y with correlation r,
// |r| <= 1 (Genz's BVND; absolute error about 1e-15). For relative accuracy in the far lower
// tail, where the result underflows or is dominated by rounding, the channel uses BVNRatios.
func BivariateNormalCDF(h, k, r float64) float64 {
	if math.IsNaN(h) || math.IsNaN(k) || math.IsNaN(r) || r < -1 || r > 1 {
		return math.NaN()
	}
	return genzUpper(-h, -k, r)
}

// genzUpper is Genz's BVNU: P(X > dh, Y > dk) with correlation r.
func genzUpper(dh, dk, r float64) float64 {
	switch {
	case math.IsInf(dh, 1) || math.IsInf(dk, 1):
		return 0
	case math.IsInf(dh, -1):
		if math.IsInf(dk, -1) {
			return 1
		}
		return normCDF(-dk)
	case math.IsInf(dk, -1):
		return normCDF(-dh)
	case r == 0:
		return normCDF(-dh) * normCDF(-dk)
	}
	const twoPi = 2 * math.Pi
	var xs, ws []float64
	switch ar := math.Abs(r); {
	case ar < 0.3:
		xs, ws = gl6x, gl6w
	case ar < 0.75:
		xs, ws = gl12x, gl12w
	default:
		xs, ws = gl20x, gl20w
	}
	h, k := dh, dk
	hk := h * k
	bvn := 0.0
	if math.Abs(r) < 0.925 {
		// Drezner-Wesolowsky: int_0^{asin r} exp(-(h^2+k^2-2hk sin t)/(2cos^2 t)) dt/(2 pi).
		hs := (h*h + k*k) / 2
		asr := math.Asin(r) / 2
		for i, x := range xs {
			sn := math.Sin(asr * (x + 1))
			bvn += ws[i] * math.Exp((sn*hk-hs)/(1-sn*sn))
		}
		return clamp01(bvn*asr/twoPi + normCDF(-h)*normCDF(-k))
	}
	if r < 0 {
		k = -k
		hk = -hk
	}
	if math.Abs(r) < 1 {
		as := (1 - r) * (1 + r)
		a := math.Sqrt(as)
		bs := (h - k) * (h - k)
		c := (4 - hk) / 8
		d := (12 - hk) / 16
		bvn = a * math.Exp(-(bs/as+hk)/2) * (1 - c*(bs-as)*(1-d*bs/5)/3 + c*d*as*as/5)
		if hk > -160 {
			b := math.Sqrt(bs)
			bvn -= math.Exp(-hk/2) * math.Sqrt(twoPi) * normCDF(-b/a) * b * (1 - c*bs*(1-d*bs/5)/3)
		}
		a /= 2
		for i, x := range xs {
			for _, xx := range [2]float64{a * (x + 1), a * (1 - x)} {
				xs2 := xx * xx
				rs := math.Sqrt(1 - xs2)
				asr := -(bs/xs2 + hk) / 2
				if asr > -100 {
					bvn += a * ws[i] / 2 * math.Exp(asr) *
						(math.Exp(-hk*xs2/(2*(1+rs)*(1+rs)))/rs - (1 + c*xs2*(1+d*xs2)))
				}
			}
		}
		bvn = -bvn / twoPi
	}
	if r > 0 {
		bvn += normCDF(-math.Max(h, k))
	} else {
		bvn = -bvn
		if k > h {
			if h < 0 {
				bvn += normCDF(k) - normCDF(h)
			} else {
				bvn += normCDF(-h) - normCDF(-k)
			}
		}
	}
	return clamp01(bvn)
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// BVNRatios returns log Phi2(h, k; r) together with the ratios R1 = D1/Phi2 and
// R2 = D2/Phi2, where D1 = dPhi2/dh = phi(h) Phi((k - r h)/s) and D2 = dPhi2/dk =
// phi(k) Phi((h - r k)/s), s = sqrt(1 - r^2), |r| < 1, and P = phi2(h, k; r)/Phi2. All keep
// full relative accuracy in the lower tails (tested to h, k = -40, where Phi2 underflows and
// R grows like |h|): in the tail branch R1 = 1/I exactly (see the comment at the top).
func BVNRatios(h, k, r float64) (lz, r1, r2, p float64) {
	s := math.Sqrt((1 - r) * (1 + r))
	a1 := (k - r*h) / s // D1 = phi(h) Phi(a1), phi2 = phi(h) phi(a1)/s
	a2 := (h - r*k) / s // D2 = phi(k) Phi(a2), phi2 = phi(k) phi(a2)/s
	ld1 := LogNormPDF(h) + LogNormCDF(a1)
	ld2 := LogNormPDF(k) + LogNormCDF(a2)
	if math.Min(h, k) >= bvnTailCut {
		// Genz's absolute error is about 1e-16 relative to Phi(h)Phi(k) (r < 0) or to 1, so
		// it is used only where Phi2 is not small; otherwise fall through to the tail integral.
		if z := BivariateNormalCDF(h, k, r); r >= 0 || z > 1e-3 {
			r1, r2 = math.Exp(ld1)/z, math.Exp(ld2)/z
			return math.Log(z), r1, r2, r1 * invMills(a1) / s
		}
	}
	if h <= k {
		I := bvnTailIntegral(h, k, r, s)
		r1 = 1 / I
		return ld1 + math.Log(I), r1, math.Exp(ld2-ld1) * r1, r1 * invMills(a1) / s
	}
	I := bvnTailIntegral(k, h, r, s)
	r2 = 1 / I
	return ld2 + math.Log(I), math.Exp(ld1-ld2) * r2, r2, r2 * invMills(a2) / s
}

// bvnTailIntegral returns I = Phi2(h, k; r)/D1 for h <= k, h < 0 (see the comment at the top):
//
//	I = int_0^inf exp(h t - t^2/2) Phi(a + beta t)/Phi(a) dt,  a = (k - r h)/s, beta = r/s.
//
// The integrand is log-concave, equals 1 at t = 0 and has log-slope -gamma there. It is
// integrated with 12-point Gauss-Legendre panels in u = gamma t whose widths grow like
// e^(u/24) (the error of a panel on e^-u is then about 1e-17), capped so that the curvature
// of the log-integrand, 1 + beta^2 in t, stays resolved; the sum stops when the rest is below
// 1e-17 of it.
func bvnTailIntegral(h, k, r, s float64) float64 {
	a := (k - r*h) / s
	beta := r / s
	la := LogNormCDF(a)
	gamma := -(h + beta*invMills(a))
	if gamma < 1 {
		gamma = 1
	}
	// ratio(t) = Phi(a + beta t)/Phi(a), directly while Phi does not underflow.
	direct := a > -30 && a+beta*40/gamma > -30 && a+beta*40/gamma < 30
	pa := normCDF(a)
	f := func(t float64) float64 {
		if direct {
			return math.Exp(h*t-t*t/2) * normCDF(a+beta*t) / pa
		}
		return math.Exp(h*t - t*t/2 + LogNormCDF(a+beta*t) - la)
	}
	capU := 1.5 * gamma / math.Sqrt(1+beta*beta)
	sum := 0.0
	for u0 := 0.0; u0 < 45; {
		w := math.Min(3*math.Exp(u0/24), capU)
		t0, t1 := u0/gamma, (u0+w)/gamma
		half, mid := (t1-t0)/2, (t1+t0)/2
		part := 0.0
		for i, x := range glTailx {
			part += glTailw[i] * f(mid+half*x)
		}
		sum += part * half
		u0 += w
		// The integrand is log-concave: past its maximum the rest is at most f(t1)/slope.
		if f(t1)*math.Max(1/gamma, 1) < 1e-17*sum {
			break
		}
	}
	return sum
}
