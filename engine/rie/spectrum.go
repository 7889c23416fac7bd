package rie

import (
	"errors"
	"math"
)

const eps = 0x1p-52

// Spectrum is mu_Delta = MP(rho) ⊞ SC(Delta), the limiting eigenvalue density of
// Y = S + sqrt(Delta) Z (S Marchenko-Pastur with E S = sqrt(rho) I and (1/D) Tr S^2 = 1 + rho, Z GOE),
// together with its support. Create it with New; it is immutable and safe for concurrent use.
type Spectrum struct {
	// Rho is the rank ratio rho = R/D of S = W W^T/sqrt(R D).
	Rho float64
	// Delta is the variance of the semicircular (GOE) noise.
	Delta float64

	s      float64    // sqrt(rho)
	nb     int        // number of bulks (1 or 2)
	edges  [4]float64 // sorted support edges, first 2*nb used
	gedge  [4]float64 // g at each edge: the real critical point g_c with edges[i] = z(g_c)
	far    float64    // |x - s| beyond which the 1/x series is used as a starting point off the support
	invd   float64    // 1/Delta
	c1, d0 float64    // (1 - rho)/Delta and -sqrt(rho)/Delta
	m2, m3 float64    // second and third moments of mu_Delta
}

// New returns the spectrum MP(rho) ⊞ SC(delta) and its support edges. It returns an error if
// rho <= 0, delta <= 0, or either is NaN or infinite.
func New(rho, delta float64) (*Spectrum, error) {
	sp := new(Spectrum)
	if err := sp.init(rho, delta); err != nil {
		return nil, err
	}
	return sp, nil
}

func (sp *Spectrum) init(rho, delta float64) error {
	if !(rho > 0) || math.IsInf(rho, 0) {
		return errors.New("rie: rho must be positive and finite")
	}
	if !(delta > 0) || math.IsInf(delta, 0) {
		return errors.New("rie: delta must be positive and finite")
	}
	*sp = Spectrum{Rho: rho, Delta: delta, s: math.Sqrt(rho)}
	s := sp.s
	sp.invd = 1 / delta
	sp.c1 = (1 - rho) / delta
	sp.d0 = -s / delta
	// Critical points of z(g): roots of q(u) = Delta u^2 (u-s)^2 - (u-s)^2 + rho u^2.
	// q(0) = -rho < 0, q(s) = rho^2 > 0, q(u) >= rho/Delta > 0 for |u| >= 1/sqrt(Delta).
	big := 1 / math.Sqrt(delta)
	g1 := sp.critRoot(-big, 0)
	g2 := sp.critRoot(0, s)
	sp.nb = 1
	if rho < 1 {
		// q has a second sign change in (s, inf) iff q(u*) < 0, u* = s/(1 - rho^{1/3}) the
		// unique real critical point of 1/u^2 - rho/(u-s)^2; equivalently Delta < (rho^{-1/3}-1)^3.
		ustar := s / (1 - math.Cbrt(rho))
		if ustar < big && sp.q(ustar) < 0 {
			g3 := sp.critRoot(s, ustar)
			g4 := sp.critRoot(ustar, big)
			sp.nb = 2
			sp.gedge = [4]float64{g1, g4, g3, g2}
		}
	}
	if sp.nb == 1 {
		sp.gedge = [4]float64{g1, g2, 0, 0}
	}
	for i := 0; i < 2*sp.nb; i++ {
		sp.edges[i] = sp.zOf(sp.gedge[i])
	}
	sp.m2 = 1 + rho + delta
	// Third moment from free cumulants: k1 = s, k2 = 1 + Delta, k3 = 1/s.
	sp.m3 = 1/s + 3*s*(1+delta) + s*rho
	w := 0.0
	for i := 0; i < 2*sp.nb; i++ {
		w = math.Max(w, math.Abs(sp.edges[i]-s))
	}
	sp.far = 1e4 * w
	return nil
}

// q is the critical-point quartic Delta u^2 (u-s)^2 - (u-s)^2 + rho u^2 and dq its derivative.
func (sp *Spectrum) q(u float64) float64 {
	v := u - sp.s
	return sp.Delta*u*u*v*v - v*v + sp.Rho*u*u
}

func (sp *Spectrum) dq(u float64) float64 {
	v := u - sp.s
	return 2*sp.Delta*u*v*(u+v) - 2*v + 2*sp.Rho*u
}

// critRoot finds the unique root of q in (lo, hi), where q changes sign, by Newton's method
// safeguarded with bisection.
func (sp *Spectrum) critRoot(lo, hi float64) float64 {
	flo := sp.q(lo)
	if flo == 0 {
		return lo
	}
	if sp.q(hi) == 0 {
		return hi
	}
	neg := flo < 0 // q(lo) < 0: q increases through the root
	u := 0.5 * (lo + hi)
	for it := 0; it < 200; it++ {
		f := sp.q(u)
		if f == 0 {
			return u
		}
		if (f < 0) == neg {
			lo = u
		} else {
			hi = u
		}
		d := sp.dq(u)
		un := u - f/d
		if !(un > lo && un < hi) {
			un = 0.5 * (lo + hi)
		}
		if math.Abs(un-u) <= 2*eps*math.Abs(un) || hi-lo <= 2*eps*math.Max(math.Abs(lo), math.Abs(hi)) {
			return un
		}
		u = un
	}
	return u
}

// zOf is the functional inverse of g: z(g) = Delta g + ((1-rho) g - s)/(g (g - s)).
func (sp *Spectrum) zOf(g float64) float64 {
	return sp.Delta*g + ((1-sp.Rho)*g-sp.s)/(g*(g-sp.s))
}

// dzOf is z'(g) = Delta - 1/g^2 + rho/(g - s)^2.
func (sp *Spectrum) dzOf(g float64) float64 {
	v := g - sp.s
	return sp.Delta - 1/(g*g) + sp.Rho/(v*v)
}

// Edges returns the support edges of mu_Delta in increasing order: [a, b] for one bulk or
// [a1, b1, a2, b2] for two bulks (rho < 1 and Delta < (rho^{-1/3} - 1)^3). The slice is a copy.
func (sp *Spectrum) Edges() []float64 {
	e := make([]float64, 2*sp.nb)
	copy(e, sp.edges[:2*sp.nb])
	return e
}

// Stieltjes returns g(x - i0) = ∫ mu(t)/(x - i0 - t) dt on the physical branch: the real part is
// the Hilbert transform (principal value ∫ mu(t)/(x - t) dt) and the imaginary part is pi mu(x).
// Off the support g is real, strictly decreasing on each component and continuous across the
// edges, with g ~ 1/x at infinity. It returns 0 for x = ±Inf and NaN for NaN.
func (sp *Spectrum) Stieltjes(x float64) complex128 {
	re, im := sp.stieltjes(x)
	return complex(re, im)
}

// Density returns mu_Delta(x) = Im g(x - i0)/pi, and 0 off the support.
func (sp *Spectrum) Density(x float64) float64 {
	_, im := sp.stieltjes(x)
	return im / math.Pi
}

// Denoise is the RIE spectral map f(λ) = λ - 2 Delta Re g_Delta(λ - i0): the Bayes-optimal
// rotationally invariant estimate of S from Y = S + sqrt(Delta) Z replaces each eigenvalue λ of Y
// by f(λ). It is defined and continuous for every real λ, including values outside the
// asymptotic support, where g is the real physical branch.
func (sp *Spectrum) Denoise(lambda float64) float64 {
	re, _ := sp.stieltjes(lambda)
	return lambda - 2*sp.Delta*re
}

// stieltjes returns (Re g, Im g) at x - i0.
func (sp *Spectrum) stieltjes(x float64) (float64, float64) {
	if math.IsNaN(x) {
		return x, x
	}
	if math.IsInf(x, 0) {
		return 0, 0
	}
	e := &sp.edges
	if x <= e[0] {
		return sp.outside(x, sp.gedge[0], 0), 0
	}
	if sp.nb == 1 {
		if x < e[1] {
			return sp.inside(x)
		}
		return sp.outside(x, 0, sp.gedge[1]), 0
	}
	switch {
	case x < e[1]:
		return sp.inside(x)
	case x <= e[2]:
		return sp.outside(x, sp.gedge[2], sp.gedge[1]), 0
	case x < e[3]:
		return sp.inside(x)
	}
	return sp.outside(x, 0, sp.gedge[3]), 0
}

// cubic returns the monic cubic g^3 + B g^2 + C g + D0 whose roots are the three preimages of x
// under z(g), and its depressed form t^3 + p t + q (g = t - B/3) through B3 = B/3, p3 = p/3,
// hq = q/2.
func (sp *Spectrum) cubic(x float64) (B, C, D0, B3, p3, hq float64) {
	s := sp.s
	B = -(x*sp.invd + s)
	C = s*x*sp.invd + sp.c1
	D0 = sp.d0
	B3 = B / 3
	p3 = (C - B*B3) / 3
	hq = 0.5 * (B3*(2*B3*B3-C) + D0)
	return
}

// realRoots3 returns the three real roots of t^3 + 3 p3 t + 2 hq (p3 < 0) shifted by -B3.
func realRoots3(B3, p3, hq float64) (r0, r1, r2 float64) {
	if p3 >= 0 {
		return -B3, -B3, -B3
	}
	sq := math.Sqrt(-p3)
	c := hq / (p3 * sq)
	c = math.Max(-1, math.Min(1, c))
	phi := math.Acos(c) / 3
	m := 2 * sq
	r0 = m*math.Cos(phi) - B3
	r1 = m*math.Cos(phi-2*math.Pi/3) - B3
	r2 = m*math.Cos(phi-4*math.Pi/3) - B3
	return
}

// cardanoReal returns the real root g = t - B3 of the cubic whose depressed form is
// t^3 + 3 p3 t + 2 hq = 0, when it has one real root (disc = hq^2 + p3^3 > 0), by Cardano's
// formula with the cube root taken on the side that avoids cancellation.
func cardanoReal(B3, p3, hq, disc float64) float64 {
	sq := math.Sqrt(disc)
	var a float64
	if hq > 0 {
		a = -math.Cbrt(hq + sq)
	} else {
		a = math.Cbrt(sq - hq)
	}
	t := a
	if a != 0 {
		t = a - p3/a
	}
	return t - B3
}

// inside returns g(x - i0) for x strictly inside a bulk: the root with Im g > 0. It isolates the
// real root r of the cubic (Cardano, or the trigonometric form when rounding makes all roots look
// real), polishes it by one Newton step, deflates stably and polishes the complex root by one Newton step.
func (sp *Spectrum) inside(x float64) (float64, float64) {
	B, C, D0, B3, p3, hq := sp.cubic(x)
	disc := hq*hq + p3*p3*p3
	var r float64
	if disc > 0 {
		r = cardanoReal(B3, p3, hq, disc)
	} else {
		// Near an edge: take the root farthest from the other two (the near-double pair is
		// the physical one).
		r0, r1, r2 := realRoots3(B3, p3, hq)
		d01, d02, d12 := math.Abs(r0-r1), math.Abs(r0-r2), math.Abs(r1-r2)
		switch {
		case d12 <= d01 && d12 <= d02:
			r = r0
		case d02 <= d01:
			r = r1
		default:
			r = r2
		}
	}
	if f, df := ((r+B)*r+C)*r+D0, (3*r+2*B)*r+C; df != 0 {
		r -= f / df
	}
	// (g - r)(g^2 + beta g + gamma): backward deflation when r is the largest root, forward
	// otherwise.
	var beta, gamma float64
	if r != 0 && r*r*math.Abs(r) > math.Abs(D0) {
		ir := 1 / r
		gamma = -D0 * ir
		beta = (gamma - C) * ir
	} else {
		beta = B + r
		gamma = C + r*beta
	}
	dd := 4*gamma - beta*beta
	if !(dd > 0) {
		return -0.5 * beta, 0
	}
	gr, gi := -0.5*beta, 0.5*math.Sqrt(dd)
	// One Newton step on the monic cubic in complex arithmetic, written out in reals:
	// f = ((g + B) g + C) g + D0, f' = (3g + 2B) g + C.
	ar, ai := gr+B, gi
	br, bi := ar*gr-ai*gi+C, ar*gi+ai*gr
	fr, fi := br*gr-bi*gi+D0, br*gi+bi*gr
	cr, ci := 3*gr+2*B, 3*gi
	dr, di := cr*gr-ci*gi+C, cr*gi+ci*gr
	den := dr*dr + di*di
	if den > 0 {
		// (f/f') = f conj(f') / |f'|^2
		iden := 1 / den
		sr := (fr*dr + fi*di) * iden
		si := (fi*dr - fr*di) * iden
		if ni := gi - si; ni > 0 && !math.IsNaN(sr) {
			gr, gi = gr-sr, ni
		}
	}
	return gr, gi
}

// outside returns the real physical root of z(g) = x in the bracket (lo, hi) on which z is
// strictly decreasing, with z(lo+) > x > z(hi-) (lo or hi may be the pole g = 0).
func (sp *Spectrum) outside(x, lo, hi float64) float64 {
	var g float64
	if math.Abs(x-sp.s) > sp.far {
		// g = sum_k m_k / x^{k+1}
		y := 1 / x
		g = y * (1 + y*(sp.s+y*(sp.m2+y*sp.m3)))
	} else {
		B, _, _, B3, p3, hq := sp.cubic(x)
		disc := hq*hq + p3*p3*p3
		if disc > 0 {
			// Rounding near an edge: one real root and a nearly real pair; the pair's real
			// part approximates the physical root.
			g = -0.5 * (B + cardanoReal(B3, p3, hq, disc))
		} else {
			r0, r1, r2 := realRoots3(B3, p3, hq)
			g = r0
			dist := bracketDist(r0, lo, hi)
			if d := bracketDist(r1, lo, hi); d < dist {
				g, dist = r1, d
			}
			if d := bracketDist(r2, lo, hi); d < dist {
				g = r2
			}
		}
	}
	if !(g > lo && g < hi) {
		g = 0.5 * (lo + hi)
	}
	// Safeguarded Newton on F(g) = z(g) - x, decreasing on (lo, hi).
	for it := 0; it < 200; it++ {
		f := sp.zOf(g) - x
		if f > 0 {
			lo = g
		} else if f < 0 {
			hi = g
		} else {
			return g
		}
		gn := g - f/sp.dzOf(g)
		if !(gn > lo && gn < hi) {
			gn = 0.5 * (lo + hi)
		}
		if math.Abs(gn-g) <= 2*eps*math.Abs(gn) {
			return gn
		}
		g = gn
	}
	return g
}

func bracketDist(r, lo, hi float64) float64 {
	switch {
	case r < lo:
		return lo - r
	case r > hi:
		return r - hi
	}
	return 0
}
