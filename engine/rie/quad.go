package rie

import "math"

// Gauss-Kronrod 10/21 nodes and weights on [-1, 1] (QUADPACK qk21). xgk[1], xgk[3], ..., xgk[9]
// are the 10-point Gauss nodes (with weights wg); xgk[10] = 0 is the centre.
var (
	xgk = [11]float64{
		0.995657163025808080735527280689003,
		0.973906528517171720077964012084452,
		0.930157491355708226001207180059508,
		0.865063366688984510732096688423493,
		0.780817726586416897063717578345042,
		0.679409568299024406234327365114874,
		0.562757134668604683339000099272694,
		0.433395394129247190799265943165784,
		0.294392862701460198131126603103866,
		0.148874338981631210884826001129720,
		0,
	}
	wgk = [11]float64{
		0.011694638867371874278064396062192,
		0.032558162307964727478818972459390,
		0.054755896574351996031381300244580,
		0.075039674810919952767043140916190,
		0.093125454583697605535065465083366,
		0.109387158802297641899210590325805,
		0.123491976262065851077208031742816,
		0.134709217311473325928054001771707,
		0.142775938577060080797094273138717,
		0.147739104901338491374841515972068,
		0.149445554002916905664936468389821,
	}
	wg = [5]float64{
		0.066671344308688137593568809893332,
		0.149451349150580593145776339657697,
		0.219086362515982043995534934228163,
		0.269266719309996355091226921569469,
		0.295524224714752870173892994651338,
	}
)

// gk21 applies the 21-point Kronrod rule to f on [a, b] and returns the Kronrod value and the
// QUADPACK error estimate.
func gk21(f func(float64) float64, a, b float64) (val, err float64) {
	c := 0.5 * (a + b)
	h := 0.5 * (b - a)
	var fv1, fv2 [10]float64
	fc := f(c)
	resk := wgk[10] * fc
	resg := 0.0
	resabs := math.Abs(resk)
	for j := 0; j < 10; j++ {
		dx := h * xgk[j]
		f1, f2 := f(c-dx), f(c+dx)
		fv1[j], fv2[j] = f1, f2
		resk += wgk[j] * (f1 + f2)
		resabs += wgk[j] * (math.Abs(f1) + math.Abs(f2))
		if j&1 == 1 {
			resg += wg[j/2] * (f1 + f2)
		}
	}
	reskh := 0.5 * resk
	resasc := wgk[10] * math.Abs(fc-reskh)
	for j := 0; j < 10; j++ {
		resasc += wgk[j] * (math.Abs(fv1[j]-reskh) + math.Abs(fv2[j]-reskh))
	}
	ah := math.Abs(h)
	val = resk * h
	resabs *= ah
	resasc *= ah
	err = math.Abs((resk - resg) * h)
	if resasc != 0 && err != 0 {
		err = resasc * math.Min(1, math.Pow(200*err/resasc, 1.5))
	}
	if resabs > math.SmallestNonzeroFloat64/(50*eps) {
		err = math.Max(50*eps*resabs, err)
	}
	return val, err
}

const maxIntervals = 128

// nInit is the number of equal initial subintervals (two: the whole-interval rule is almost always
// split anyway, and starting from halves avoids rare underestimates of the error).
const nInit = 2

// adapt integrates f over [a, b] by globally adaptive bisection with gk21 until the summed error
// estimate is below max(absTol, relTol |I|) or no interval can be split. It does not allocate.
func adapt(f func(float64) float64, a, b, relTol, absTol float64) (val, err float64) {
	var lo, hi, v, e [maxIntervals]float64
	n := nInit
	for i := 0; i < n; i++ {
		lo[i] = a + (b-a)*float64(i)/float64(n)
		hi[i] = a + (b-a)*float64(i+1)/float64(n)
		if i == n-1 {
			hi[i] = b
		}
		v[i], e[i] = gk21(f, lo[i], hi[i])
		val += v[i]
		err += e[i]
	}
	for err > math.Max(absTol, relTol*math.Abs(val)) && n < maxIntervals {
		k := 0
		for i := 1; i < n; i++ {
			if e[i] > e[k] {
				k = i
			}
		}
		m := 0.5 * (lo[k] + hi[k])
		if !(m > lo[k] && m < hi[k]) {
			break
		}
		v1, e1 := gk21(f, lo[k], m)
		v2, e2 := gk21(f, m, hi[k])
		lo[n], hi[n], v[n], e[n] = m, hi[k], v2, e2
		hi[k], v[k], e[k] = m, v1, e1
		n++
		val, err = 0, 0
		for i := 0; i < n; i++ {
			val += v[i]
			err += e[i]
		}
	}
	return val, err
}

// Quadrature tolerances for integrals over the spectrum.
const (
	quadRelTol = 1e-12
	quadAbsTol = 1e-300
)

// bulkIntegral returns ∫_{bulk k} F(x, mu(x)) dx (edgeIntegral).
func (sp *Spectrum) bulkIntegral(k int, F func(x, mu float64) float64, relTol float64) (float64, float64) {
	return edgeIntegral(sp.edges[2*k], sp.edges[2*k+1], sp.inside, func(x, mu, _ float64) float64 { return F(x, mu) }, relTol)
}

// edgeIntegral returns ∫_a^b F(x, mu(x), h(x)) dx and its error estimate for (h, pi mu) =
// inside(x), computed with adapt in the variable x = a + (b - a)(1 - cos θ)/2, θ in [0, pi],
// which makes integrands with square-root edge behaviour analytic in θ. Each of Spectrum's and
// Discrete's integrals over a bulk, or its part above a threshold, is one call.
func edgeIntegral(a, b float64, inside func(x float64) (float64, float64), F Integrand, relTol float64) (float64, float64) {
	w := b - a
	f := func(th float64) float64 {
		sh, ch := math.Sincos(0.5 * th)
		var x float64
		if th < 0.5*math.Pi {
			x = a + w*sh*sh
		} else {
			x = b - w*ch*ch
		}
		if !(x > a && x < b) {
			return 0
		}
		re, im := inside(x)
		return F(x, im/math.Pi, re) * (w * sh * ch)
	}
	return adapt(f, 0, math.Pi, relTol, quadAbsTol)
}

// integrate returns ∫ F(x, mu(x)) dx over the whole support and the summed error estimate.
func (sp *Spectrum) integrate(F func(x, mu float64) float64, relTol float64) (val, err float64) {
	for k := 0; k < sp.nb; k++ {
		v, e := sp.bulkIntegral(k, F, relTol)
		val += v
		err += e
	}
	return val, err
}

func cube(_, mu float64) float64 { return mu * mu * mu }

// IntegralMuCubed returns ∫ mu_Delta(x)^3 dx, integrated bulk by bulk with adaptive
// Gauss-Kronrod (G10-K21) in the edge-regularising variable x = a + (b - a)(1 - cos θ)/2, to a
// relative error target of 1e-12 (the achieved error is typically ~1e-14).
func (sp *Spectrum) IntegralMuCubed() float64 {
	v, _ := sp.integrate(cube, quadRelTol)
	return v
}

// MMSE returns mmse(Delta; rho) = Delta - (4 pi^2/3) Delta^2 ∫ mu_Delta^3 dx, the asymptotic
// per-entry MSE (1/D) E||S_hat - S||_F^2 of the Bayes-optimal (RIE) estimate of S from
// Y = S + sqrt(Delta) Z with the mean sqrt(rho) I known (so mmse -> 1 as Delta -> inf).
func (sp *Spectrum) MMSE() float64 {
	d := sp.Delta
	return d - (4*math.Pi*math.Pi/3)*d*d*sp.IntegralMuCubed()
}

// MMSE returns mmse(delta; rho) = delta - (4 pi^2/3) delta^2 ∫ mu_delta^3 dx for
// mu_delta = MP(rho) ⊞ SC(delta) (see Spectrum.MMSE). It does not allocate. It returns an error
// for the parameters New rejects.
func MMSE(delta, rho float64) (float64, error) {
	var sp Spectrum
	if err := sp.init(rho, delta); err != nil {
		return math.NaN(), err
	}
	return sp.MMSE(), nil
}

// Integrand is a function of a point x of the support, the density mu(x) there and the Hilbert
// part h(x) = Re g(x - i0) = PV ∫ mu(t)/(x - t) dt.
type Integrand func(x, mu, h float64) float64

// Integrate returns ∫ F(x, mu(x), h(x)) dx over the part of the support above from, and the
// summed Gauss-Kronrod error estimate. Each bulk, or its part above from, is integrated with the
// adaptive G10-K21 rule in the variable x = a + (b - a)(1 - cos θ)/2, which makes integrands with
// square-root edge behaviour analytic; a kink of F at from (a threshold) is an end point, so it
// costs no accuracy. relTol is the relative error target (1e-10 is typical).
func (sp *Spectrum) Integrate(F Integrand, from, relTol float64) (val, err float64) {
	for k := 0; k < sp.nb; k++ {
		a, b := sp.edges[2*k], sp.edges[2*k+1]
		if from >= b {
			continue
		}
		v, e := edgeIntegral(math.Max(a, from), b, sp.inside, F, relTol)
		val += v
		err += e
	}
	return val, err
}
