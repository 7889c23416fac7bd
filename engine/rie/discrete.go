package rie

import (
	"errors"
	"math"
	"slices"
	"sync"
)

// Discrete is nu ⊞ SC(Delta) for a teacher spectrum nu given by its eigenvalues (atoms of
// equal mass): the limiting spectrum of Y = S + sqrt(Delta) Z for a rotationally invariant S
// with those eigenvalues, Z GOE, for any spectrum (a power law, a few outliers over a bulk),
// where Spectrum is the Marchenko-Pastur case.
//
// Subordination. g(z) = G_nu(zeta) with G_nu(zeta) = sum_k c_k/(zeta - w_k) (c_k the masses of
// the distinct eigenvalues w_k) and zeta solving F(zeta) = zeta + Delta G_nu(zeta) = z (Pastur's
// equation; z = x - i0 and Im zeta < 0 on the support, so that Im g > 0 there, as in
// Spectrum). On the real line F'(zeta) = 1 - Delta S2(zeta), S2 = sum_k c_k/(zeta - w_k)^2: the
// support edges are F at the real critical points S2 = 1/Delta, one below the smallest w, one
// above the largest and, between two consecutive w, none or two (a gap of the support) as the
// minimum of the convex S2 there (the root of S3 = sum c_k/(zeta - w_k)^3) is above or below
// 1/Delta. Inside the support zeta is found by Newton's method in the complex plane from the
// semicircle's scale, kept in Im zeta < 0; off the support it is the real root of F = x in the
// interval where F is increasing (the physical branch, g ~ 1/x at infinity).
type Discrete struct {
	Delta float64
	w, c  []float64 // distinct eigenvalues, ascending, and their masses
	edges []float64 // support edges, ascending, in pairs
	zeta  []float64 // zeta at each edge
	// memo holds g(x - i0) at the points inside the support already solved: the integrals over
	// whole bulks use the same nodes every time (a threshold's root search integrates them
	// again and again), so each costs one Newton solve per node once.
	mu   sync.Mutex
	memo map[float64][2]float64
}

// NewDiscrete returns nu ⊞ SC(delta) for nu the empirical measure of eigenvalues (any order,
// repetitions allowed). It returns an error for an empty spectrum, a non-finite eigenvalue or
// delta not in (0, inf).
func NewDiscrete(eigenvalues []float64, delta float64) (*Discrete, error) {
	if len(eigenvalues) == 0 {
		return nil, errors.New("rie: an empty spectrum")
	}
	if !(delta > 0) || math.IsInf(delta, 0) {
		return nil, errors.New("rie: delta must be positive and finite")
	}
	v := slices.Clone(eigenvalues)
	slices.Sort(v)
	d := &Discrete{Delta: delta, memo: map[float64][2]float64{}}
	m := 1 / float64(len(v))
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("rie: a non-finite eigenvalue")
		}
		if i > 0 && x == v[i-1] {
			d.c[len(d.c)-1] += m
			continue
		}
		d.w, d.c = append(d.w, x), append(d.c, m)
	}
	d.findEdges()
	return d, nil
}

// s2 returns S2(zeta) = sum c/(zeta - w)^2 and s3 = sum c/(zeta - w)^3.
func (d *Discrete) s23(z float64) (s2, s3 float64) {
	for k, w := range d.w {
		u := 1 / (z - w)
		s2 += d.c[k] * u * u
		s3 += d.c[k] * u * u * u
	}
	return s2, s3
}

// gReal returns G_nu(zeta) for real zeta.
func (d *Discrete) gReal(z float64) float64 {
	g := 0.0
	for k, w := range d.w {
		g += d.c[k] / (z - w)
	}
	return g
}

// bisect returns the root of f in (lo, hi), where f(lo) and f(hi) have opposite signs, to
// rounding.
func bisect(f func(float64) float64, lo, hi float64) float64 {
	flo := f(lo)
	for it := 0; it < 200; it++ {
		m := 0.5 * (lo + hi)
		if !(m > lo && m < hi) {
			return m
		}
		fm := f(m)
		if (fm < 0) == (flo < 0) {
			lo, flo = m, fm
		} else {
			hi = m
		}
	}
	return 0.5 * (lo + hi)
}

func (d *Discrete) findEdges() {
	inv := 1 / d.Delta
	crit := func(z float64) float64 { s2, _ := d.s23(z); return s2 - inv }
	n := len(d.w)
	// S2 <= 1/dist^2 beyond the extreme eigenvalues, so the extreme critical points lie within
	// sqrt(Delta) of them.
	r := math.Sqrt(d.Delta)
	zl := bisect(crit, d.w[0]-r*(1+1e-12), d.w[0]-r*1e-9)
	zr := bisect(crit, d.w[n-1]+r*1e-9, d.w[n-1]+r*(1+1e-12))
	d.zeta = append(d.zeta, zl)
	for k := 0; k+1 < n; k++ {
		a, b := d.w[k], d.w[k+1]
		h := (b - a) * 1e-12
		s3 := func(z float64) float64 { _, t := d.s23(z); return t }
		zm := bisect(s3, a+h, b-h)
		if crit(zm) >= 0 {
			continue // no gap between w_k and w_k+1
		}
		d.zeta = append(d.zeta, bisect(crit, a+h, zm), bisect(crit, zm, b-h))
	}
	d.zeta = append(d.zeta, zr)
	for _, z := range d.zeta {
		d.edges = append(d.edges, z+d.Delta*d.gReal(z))
	}
}

// Edges returns the support edges of nu ⊞ SC(Delta) in increasing order, in pairs [a1, b1, a2,
// b2, ...] (a copy).
func (d *Discrete) Edges() []float64 { return slices.Clone(d.edges) }

// Stieltjes returns g(x - i0): the real part is the Hilbert transform, the imaginary part pi
// times the density.
func (d *Discrete) Stieltjes(x float64) complex128 {
	re, im := d.stieltjes(x)
	return complex(re, im)
}

// Density returns the density at x, 0 off the support.
func (d *Discrete) Density(x float64) float64 {
	_, im := d.stieltjes(x)
	return im / math.Pi
}

// Denoise is the RIE spectral map f(lambda) = lambda - 2 Delta Re g(lambda - i0) (as
// Spectrum.Denoise), defined for every real lambda.
func (d *Discrete) Denoise(lambda float64) float64 {
	re, _ := d.stieltjes(lambda)
	return lambda - 2*d.Delta*re
}

// MMSE returns Delta - (4 pi^2/3) Delta^2 ∫ mu^3: the error of the RIE of S from Y per D.
func (d *Discrete) MMSE() float64 {
	v, _ := d.Integrate(func(_, mu, _ float64) float64 { return mu * mu * mu }, math.Inf(-1), quadRelTol)
	return d.Delta - (4*math.Pi*math.Pi/3)*d.Delta*d.Delta*v
}

// piece returns the index p of the bulk (edges[2p], edges[2p+1]) holding x, or -1 off the
// support.
func (d *Discrete) piece(x float64) int {
	for p := 0; 2*p < len(d.edges); p++ {
		if x > d.edges[2*p] && x < d.edges[2*p+1] {
			return p
		}
	}
	return -1
}

func (d *Discrete) stieltjes(x float64) (float64, float64) {
	if math.IsNaN(x) {
		return x, x
	}
	if math.IsInf(x, 0) {
		return 0, 0
	}
	if d.piece(x) >= 0 {
		return d.inside(x)
	}
	// Off the support: the real zeta with F(zeta) = x on the increasing branch whose image
	// holds x: below the first edge, above the last, or in a gap between edges 2p+1, 2p+2.
	F := func(z float64) float64 { return z + d.Delta*d.gReal(z) - x }
	e, zt := d.edges, d.zeta
	var lo, hi float64
	switch {
	case x <= e[0]:
		lo, hi = x-d.Delta*2-math.Abs(x)-1, zt[0] // F(zeta) <= zeta below the spectrum
		for F(lo) > 0 {
			lo = 2*lo - hi
		}
	case x >= e[len(e)-1]:
		lo, hi = zt[len(zt)-1], x+d.Delta*2+math.Abs(x)+1
		for F(hi) < 0 {
			hi = 2*hi - lo
		}
	default:
		for k := 1; k+1 < len(e); k += 2 {
			if x >= e[k] && x <= e[k+1] {
				lo, hi = zt[k], zt[k+1]
				break
			}
		}
	}
	z := bisect(F, lo, hi)
	return d.gReal(z), 0
}

// inside returns g(x - i0) for x inside the support: Newton's method on F(zeta) = x in the complex
// plane, from zeta = x - i sqrt(Delta) (the semicircle's scale), each step shortened until it
// keeps Im zeta < 0 and does not increase |F - x|.
func (d *Discrete) inside(x float64) (float64, float64) {
	d.mu.Lock()
	v, ok := d.memo[x]
	d.mu.Unlock()
	if ok {
		return v[0], v[1]
	}
	re, im := d.solveInside(x)
	d.mu.Lock()
	d.memo[x] = [2]float64{re, im}
	d.mu.Unlock()
	return re, im
}

// solveInside is inside without the memo.
func (d *Discrete) solveInside(x float64) (float64, float64) {
	z := complex(x, -math.Sqrt(d.Delta))
	res := func(z complex128) (complex128, complex128) {
		g, g2 := d.g12(z)
		return z + complex(d.Delta, 0)*g - complex(x, 0), 1 - complex(d.Delta, 0)*g2
	}
	f, df := res(z)
	for it := 0; it < 200 && cmplxAbs(f) > 1e-15*(1+math.Abs(x)); it++ {
		step := f / df
		t := 1.0
		for k := 0; k < 60; k++ {
			zn := z - complex(t, 0)*step
			if imag(zn) < 0 {
				fn, dfn := res(zn)
				if cmplxAbs(fn) < cmplxAbs(f) || k == 59 {
					z, f, df = zn, fn, dfn
					break
				}
			}
			t /= 2
		}
	}
	g, _ := d.g12(z)
	if imag(g) < 0 {
		return real(g), 0
	}
	return real(g), imag(g)
}

func cmplxAbs(z complex128) float64 { return math.Hypot(real(z), imag(z)) }

// g12 returns G_nu(z) = sum c/(z - w) and sum c/(z - w)^2, in real arithmetic.
func (d *Discrete) g12(z complex128) (complex128, complex128) {
	zr, zi := real(z), imag(z)
	var gr, gi, g2r, g2i float64
	for k, w := range d.w {
		ar := zr - w
		inv := d.c[k] / (ar*ar + zi*zi)
		ur, ui := ar*inv, -zi*inv // c/(z - w)
		gr += ur
		gi += ui
		// c/(z - w)^2 = (c/(z - w)) (1/(z - w)), 1/(z - w) = (ar - i zi)/|z - w|^2
		s := inv / d.c[k]
		g2r += (ur*ar + ui*zi) * s
		g2i += (ui*ar - ur*zi) * s
	}
	return complex(gr, gi), complex(g2r, g2i)
}

// Integrate returns ∫ F(x, mu(x), h(x)) dx over the part of the support above from and the
// summed error estimate, bulk by bulk in the edge-regularising variable (as Spectrum.Integrate).
func (d *Discrete) Integrate(F Integrand, from, relTol float64) (val, err float64) {
	for p := 0; 2*p < len(d.edges); p++ {
		a, b := d.edges[2*p], d.edges[2*p+1]
		if from >= b {
			continue
		}
		v, e := edgeIntegral(math.Max(a, from), b, d.inside, F, relTol)
		val += v
		err += e
	}
	return val, err
}
