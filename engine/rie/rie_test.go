package rie

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Reference values from docs/theory/aim.md section 2.1 (quoted to about 1e-5 there) and, as a regression
// pin, the values this package computes (expected to be accurate to ~1e-12).
func TestMMSEReference(t *testing.T) {
	cases := []struct {
		delta, rho float64
		doc        float64 // docs/theory/aim.md 2.1
		pin        float64 // this package, 12 digits
	}{
		{0.1, 0.5, 0.066541, 0.0665414932026},
		{1, 0.5, 0.396949, 0.396948635945},
		{10, 0.5, 0.893928, 0.893927689667},
		{1, 1, 0.443869, 0.443868735642},
		{1, 2, 0.470496, 0.470496408943},
		{0.01, 1, 0.0094845, 0.00948445171088},
	}
	for _, c := range cases {
		got, err := MMSE(c.delta, c.rho)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("mmse(%g; %g) = %.12f  doc %.7g  diff %.2e", c.delta, c.rho, got, c.doc, got-c.doc)
		if d := math.Abs(got - c.doc); d > 1e-5 {
			t.Errorf("mmse(%g; %g) = %.9f, docs/theory/aim.md %.7g, diff %.2e > 1e-5", c.delta, c.rho, got, c.doc, d)
		}
		if d := math.Abs(got - c.pin); d > 1e-11 {
			t.Errorf("mmse(%g; %g) = %.14f, pinned %.12g, diff %.2e > 1e-11", c.delta, c.rho, got, c.pin, d)
		}
		sp, _ := New(c.rho, c.delta)
		if m := sp.MMSE(); m != got {
			t.Errorf("Spectrum.MMSE %v != MMSE %v", m, got)
		}
	}
}

func TestNewErrors(t *testing.T) {
	bad := [][2]float64{{0, 1}, {-1, 1}, {1, 0}, {1, -1}, {math.NaN(), 1}, {1, math.NaN()},
		{math.Inf(1), 1}, {1, math.Inf(1)}}
	for _, b := range bad {
		if _, err := New(b[0], b[1]); err == nil {
			t.Errorf("New(%v, %v): no error", b[0], b[1])
		}
		if m, err := MMSE(b[1], b[0]); err == nil || !math.IsNaN(m) {
			t.Errorf("MMSE(%v, %v) = %v, %v: want NaN and an error", b[1], b[0], m, err)
		}
	}
}

// Delta -> 0: mmse/Delta -> 2 rho - rho^2 (rho < 1; the bump of mass 1 - rho near 0 is a
// semicircle of variance (1 - rho) Delta) or 1 (rho >= 1).
func TestMMSESmallDelta(t *testing.T) {
	cases := []struct {
		rho, tol float64 // tol: relative, at Delta = 1e-4
	}{
		{0.01, 1e-5}, {0.1, 1e-4}, {0.5, 5e-4}, {2, 1e-3}, {10, 1e-3},
		// rho = 1: MP has a 1/sqrt(x) hard edge at 0 and the correction decays only like
		// Delta^{2/3}.
		{1, 5e-3},
	}
	for _, c := range cases {
		want := 1.0
		if c.rho < 1 {
			want = 2*c.rho - c.rho*c.rho
		}
		prev := math.Inf(1)
		for _, d := range []float64{1e-2, 1e-3, 1e-4} {
			m, _ := MMSE(d, c.rho)
			rel := math.Abs(m/d-want) / want
			t.Logf("rho=%g Delta=%g mmse/Delta=%.10f limit %.6f rel %.2e", c.rho, d, m/d, want, rel)
			if !(rel < prev) {
				t.Errorf("rho=%g: |mmse/Delta - limit| does not decrease at Delta=%g", c.rho, d)
			}
			prev = rel
		}
		if prev > c.tol {
			t.Errorf("rho=%g Delta=1e-4: relative distance to the slope %g is %.2e > %.0e", c.rho, want, prev, c.tol)
		}
	}
}

// Delta -> inf: mmse = 1 - 1/Delta + c2/Delta^2 + O(1/Delta^3).
// The 1/Delta term is -Var(S)^2 = -1 as for any prior with unit variance (a semicircular prior
// gives exactly Delta/(1+Delta) = 1 - 1/Delta + 1/Delta^2 - ...). The 1/Delta^2 coefficient
// c2 = 1 - 1/rho = k2^3 - k3^2 (free cumulants of MP(rho): k2 = 1, k3 = 1/sqrt(rho)) was
// identified numerically from this package and is pinned here.
func TestMMSELargeDelta(t *testing.T) {
	for _, rho := range []float64{0.1, 0.5, 1, 2, 10} {
		c2 := 1 - 1/rho
		for _, d := range []float64{1e3, 1e4} {
			m, _ := MMSE(d, rho)
			first := (1 - m) * d // -> 1
			second := d * d * (m - 1 + 1/d)
			t.Logf("rho=%g Delta=%g mmse=%.14f (1-mmse)Delta=%.10f Delta^2(mmse-1+1/Delta)=%.6f c2=%.4f",
				rho, d, m, first, second, c2)
			if math.Abs(first-1) > 2*math.Max(1, math.Abs(c2))/d {
				t.Errorf("rho=%g Delta=%g: (1-mmse)Delta = %.10f, want 1 + O(1/Delta)", rho, d, first)
			}
			// third-order term ~ 1/rho^2 / Delta; numerical noise Delta^2 * 1e-10 relative.
			tol := 3*(1+1/(rho*rho))/d + d*d*1e-14*d
			if math.Abs(second-c2) > tol {
				t.Errorf("rho=%g Delta=%g: Delta^2(mmse-1+1/Delta) = %.6f, want %.6f (tol %.2e)", rho, d, second, c2, tol)
			}
		}
	}
}

// grid of (rho, Delta) including the stiff corners.
var grid = [][2]float64{
	{0.01, 1e-4}, {0.01, 1e-2}, {0.01, 1}, {0.01, 100}, {0.01, 1e4},
	{0.1, 1e-4}, {0.1, 1}, {0.1, 1e4},
	{0.5, 1e-4}, {0.5, 1e-2}, {0.5, 0.1}, {0.5, 1}, {0.5, 10}, {0.5, 1e4},
	{0.9, 1e-4}, {0.99, 1e-4},
	{1, 1e-4}, {1, 1e-2}, {1, 1}, {1, 1e4},
	{2, 1e-4}, {2, 1}, {2, 1e4},
	{10, 1e-4}, {10, 1}, {10, 1e4},
	// near the merging of the two bulks, Delta_c(0.5) = (2^{1/3} - 1)^3
	{0.5, deltaC(0.5) * (1 - 1e-6)}, {0.5, deltaC(0.5) * (1 + 1e-6)},
	{0.5, deltaC(0.5) * (1 - 1e-2)}, {0.5, deltaC(0.5) * (1 + 1e-2)},
}

func deltaC(rho float64) float64 {
	c := math.Cbrt(1/rho) - 1
	return c * c * c
}

// Mass 1, mean sqrt(rho), second moment 1 + rho + Delta, to 1e-9.
func TestMoments(t *testing.T) {
	worst := 0.0
	for _, p := range grid {
		rho, d := p[0], p[1]
		sp, err := New(rho, d)
		if err != nil {
			t.Fatal(err)
		}
		m0, _ := sp.integrate(func(x, mu float64) float64 { return mu }, 1e-13)
		m1, _ := sp.integrate(func(x, mu float64) float64 { return x * mu }, 1e-13)
		m2, _ := sp.integrate(func(x, mu float64) float64 { return x * x * mu }, 1e-13)
		e0 := math.Abs(m0 - 1)
		e1 := math.Abs(m1-math.Sqrt(rho)) / math.Sqrt(rho)
		e2 := math.Abs(m2-(1+rho+d)) / (1 + rho + d)
		worst = math.Max(worst, math.Max(e0, math.Max(e1, e2)))
		if e0 > 1e-9 || e1 > 1e-9 || e2 > 1e-9 {
			t.Errorf("rho=%g Delta=%g bulks=%d: mass err %.1e, mean rel err %.1e, m2 rel err %.1e",
				rho, d, len(sp.Edges())/2, e0, e1, e2)
		}
	}
	t.Logf("worst moment error over %d (rho, Delta): %.2e", len(grid), worst)
}

// Two bulks exactly when rho < 1 and Delta < (rho^{-1/3} - 1)^3.
func TestBulkCount(t *testing.T) {
	cases := []struct {
		rho, delta float64
		nb         int
	}{
		{0.5, 1e-4, 2}, {0.5, 0.0175, 2}, {0.5, 0.0176, 1}, {0.5, 0.1, 1},
		{0.01, 48, 2}, {0.01, 49, 1}, {0.9, 1e-4, 1}, {0.9, 4e-5, 2}, {1, 1e-4, 1}, {10, 1e-4, 1},
		{0.5, deltaC(0.5) * (1 - 1e-9), 2}, {0.5, deltaC(0.5) * (1 + 1e-9), 1},
	}
	for _, c := range cases {
		sp, _ := New(c.rho, c.delta)
		e := sp.Edges()
		if len(e) != 2*c.nb {
			t.Errorf("rho=%g Delta=%g: %d edges %v, want %d bulks", c.rho, c.delta, len(e), e, c.nb)
		}
		for i := 1; i < len(e); i++ {
			if !(e[i] > e[i-1]) {
				t.Errorf("rho=%g Delta=%g: edges not increasing %v", c.rho, c.delta, e)
			}
		}
		e[0] = math.NaN() // Edges returns a copy
		if math.IsNaN(sp.Edges()[0]) {
			t.Error("Edges does not return a copy")
		}
	}
	// small Delta, rho < 1: the bump is a semicircle of mass 1-rho, variance (1-rho)Delta, near 0
	// and the main bulk tends to the MP edges (1 -+ sqrt(rho))^2/sqrt(rho).
	sp, _ := New(0.5, 1e-8)
	e := sp.Edges()
	r := 2 * math.Sqrt(0.5*1e-8)
	s := math.Sqrt(0.5)
	want := []float64{-r, r, (1 - s) * (1 - s) / s, (1 + s) * (1 + s) / s}
	for i := range e {
		if math.Abs(e[i]-want[i]) > 2e-3*math.Abs(want[i]) {
			t.Errorf("rho=.5 Delta=1e-8: edge %d = %.8g, want about %.8g", i, e[i], want[i])
		}
	}
}

// The edges are double roots of the cubic (critical points of z(g)) and roots of the quartic of
// docs/theory/aim.md 2.1 (a = 1/rho, R = Delta).
func TestEdgesQuartic(t *testing.T) {
	worst, worstQ, worstMove := 0.0, 0.0, 0.0
	for _, p := range grid {
		rho, R := p[0], p[1]
		sp, _ := New(rho, R)
		a := 1 / rho
		sa := math.Sqrt(a)
		a4 := a
		a3 := -2*sa - 2*a*sa - 2*sa*R
		a2 := 1 - 2*a + a*a + 8*R - 2*a*R + R*R
		a1 := -10*R/sa + 2*sa*R + 8*a*sa*R - 2*R*R/sa + 8*sa*R*R
		a0 := -12*R + 4*R/a + 12*a*R - 4*a*a*R - 20*R*R + R*R/a - 8*a*R*R - 4*R*R*R
		for i, x := range sp.Edges() {
			val := (((a4*x+a3)*x+a2)*x+a1)*x + a0
			scale := math.Abs(a4*x*x*x*x) + math.Abs(a3*x*x*x) + math.Abs(a2*x*x) + math.Abs(a1*x) + math.Abs(a0)
			rel := math.Abs(val) / scale
			// one Newton step on the quartic from our edge: relative move
			dval := ((4*a4*x+3*a3)*x+2*a2)*x + a1
			// (the quartic's own conditioning degrades like 1/separation when two edges are close)
			// (relative to max(|edge|, support width): the quartic's rounding is set by that scale)
			e := sp.Edges()
			move := math.Abs(val/dval) / math.Max(math.Abs(x), e[len(e)-1]-e[0])
			sep := math.Inf(1)
			for j := range e {
				if j != i {
					sep = math.Min(sep, math.Abs(e[j]-x))
				}
			}
			cond := math.Max(1, math.Abs(x)/sep)
			worstMove = math.Max(worstMove, move/cond)
			if move > 1e-13*cond {
				t.Errorf("rho=%g Delta=%g edge %d = %.16g: Newton on the doc quartic moves it by %.1e (relative)",
					rho, R, i, x, move)
			}
			worstQ = math.Max(worstQ, rel)
			// cubic P(g, x) and dP/dg at g = g_c
			g := sp.gedge[i]
			s := sp.s
			P := R*g*g*g - (x+s*R)*g*g + (s*x+1-rho)*g - s
			Ps := math.Abs(R*g*g*g) + math.Abs((x+s*R)*g*g) + math.Abs((s*x+1-rho)*g) + s
			dP := 3*R*g*g - 2*(x+s*R)*g + (s*x + 1 - rho)
			dPs := math.Abs(3*R*g*g) + math.Abs(2*(x+s*R)*g) + math.Abs(s*x+1-rho)
			relP, reldP := math.Abs(P)/Ps, math.Abs(dP)/dPs
			worst = math.Max(worst, math.Max(relP, reldP))
			if rel > 1e-10 || relP > 1e-13 || reldP > 1e-13 {
				t.Errorf("rho=%g Delta=%g edge %d = %.16g: quartic residual %.1e, cubic %.1e, dcubic %.1e",
					rho, R, i, x, rel, relP, reldP)
			}
		}
	}
	t.Logf("worst relative residuals at the edges: cubic/double root %.1e, doc quartic %.1e; "+
		"relative Newton move on the doc quartic %.1e (divided by max(1, |edge|/separation))", worst, worstQ, worstMove)
}

// Adaptive G10-K21 in the cosine variable against an independent brute rule: the trapezoid
// rule in θ with 2e4 and 4e4 panels (spectrally accurate here because the θ-integrand extends
// to an even, 2 pi-periodic analytic function).
func TestIntegralAccuracy(t *testing.T) {
	worst := 0.0
	for _, p := range grid {
		sp, _ := New(p[0], p[1])
		got := sp.IntegralMuCubed()
		// double the panels until two successive trapezoid sums agree to 1e-12 (near the
		// merging of the bulks the density has a near-cusp and needs many panels)
		n := 20000
		ref1, ref2 := trapezoidMuCubed(sp, n), trapezoidMuCubed(sp, 2*n)
		for math.Abs(ref1-ref2) > 1e-12*ref2 && n < 1<<21 {
			n *= 2
			ref1, ref2 = ref2, trapezoidMuCubed(sp, 2*n)
		}
		if math.Abs(ref1-ref2) > 1e-11*ref2 {
			t.Errorf("rho=%g Delta=%g: trapezoid not converged (%.1e)", p[0], p[1], (ref1-ref2)/ref2)
		}
		rel := math.Abs(got-ref2) / ref2
		worst = math.Max(worst, rel)
		if rel > 1e-9 {
			t.Errorf("rho=%g Delta=%g: ∫mu^3 = %.15g, brute %.15g, rel diff %.1e", p[0], p[1], got, ref2, rel)
		}
	}
	t.Logf("worst relative difference adaptive GK vs brute trapezoid: %.2e", worst)
}

func trapezoidMuCubed(sp *Spectrum, n int) float64 {
	tot := 0.0
	for k := 0; k < sp.nb; k++ {
		a, b := sp.edges[2*k], sp.edges[2*k+1]
		w := b - a
		h := math.Pi / float64(n)
		sum := 0.0
		for i := 1; i < n; i++ {
			th := h * float64(i)
			x := a + w*(1-math.Cos(th))/2
			mu := sp.Density(x)
			sum += mu * mu * mu * w * math.Sin(th) / 2
		}
		tot += sum * h
	}
	return tot
}

func TestGK21Exactness(t *testing.T) {
	// K21 integrates polynomials of degree <= 31 exactly; G10 those of degree <= 19, so the
	// error estimate vanishes (up to rounding) for degree <= 19.
	for deg := 0; deg <= 31; deg++ {
		f := func(x float64) float64 { return math.Pow(x, float64(deg)) + 0.5 }
		v, e := gk21(f, -1, 1)
		want := 1.0
		if deg%2 == 0 {
			want += 2 / float64(deg+1)
		}
		if math.Abs(v-want) > 1e-14 {
			t.Errorf("K21 on x^%d: %.16g, want %.16g", deg, v, want)
		}
		if deg <= 19 && e > 1e-13 {
			t.Errorf("error estimate on x^%d = %.1e", deg, e)
		}
	}
}

// Off the support, Re g = ∫ mu(t)/(x - t) dt (no singularity) computed by quadrature.
func TestStieltjesOutside(t *testing.T) {
	worst := 0.0
	for _, p := range grid {
		sp, _ := New(p[0], p[1])
		e := sp.Edges()
		w := e[len(e)-1] - e[0]
		var xs []float64
		for _, del := range []float64{1e-3, 1e-2, 0.1, 1, 10, 1e3, 1e8} {
			xs = append(xs, e[0]-del*w, e[len(e)-1]+del*w)
		}
		if len(e) == 4 {
			gap := e[2] - e[1]
			for _, del := range []float64{1e-3, 1e-2, 0.1, 0.5} {
				xs = append(xs, e[1]+del*gap, e[2]-del*gap)
			}
		}
		for _, x := range xs {
			g := sp.Stieltjes(x)
			ref, _ := sp.integrate(func(t, mu float64) float64 { return mu / (x - t) }, 1e-13)
			rel := math.Abs(real(g)-ref) / math.Abs(ref)
			worst = math.Max(worst, rel)
			if rel > 1e-8 || imag(g) != 0 || sp.Density(x) != 0 {
				t.Errorf("rho=%g Delta=%g x=%.10g: g=%v, direct integral %.15g, rel %.1e",
					p[0], p[1], x, g, ref, rel)
			}
		}
	}
	t.Logf("worst relative error of g off the support: %.2e", worst)
}

// On the support, Re g is the principal value ∫ mu(t)/(x - t) dt, computed by subtracting the
// singularity: ∫_a^b (mu(t) - mu(x))/(x - t) dt + mu(x) log((x - a)/(b - x)) plus the regular
// integral over the other bulk.
func TestStieltjesInsideHilbert(t *testing.T) {
	worst := 0.0
	for _, p := range grid {
		sp, _ := New(p[0], p[1])
		for k := 0; k < sp.nb; k++ {
			a, b := sp.edges[2*k], sp.edges[2*k+1]
			for _, u := range []float64{0.013, 0.2, 0.5, 0.77, 0.991} {
				x := a + u*(b-a)
				g := sp.Stieltjes(x)
				mux := imag(g) / math.Pi
				ref := mux * math.Log((x-a)/(b-x))
				for j := 0; j < sp.nb; j++ {
					v, _ := sp.bulkIntegral(j, func(t, mu float64) float64 {
						if j != k {
							return mu / (x - t)
						}
						if t == x {
							return 0
						}
						return (mu - mux) / (x - t)
					}, 1e-13)
					ref += v
				}
				err := math.Abs(real(g)-ref) / math.Max(1, math.Abs(ref))
				worst = math.Max(worst, err)
				if err > 1e-8 {
					t.Errorf("rho=%g Delta=%g x=%.10g: Re g=%.15g, PV %.15g, err %.1e", p[0], p[1], x, real(g), ref, err)
				}
				if d := sp.Density(x); d != mux || !(d > 0) {
					t.Errorf("rho=%g Delta=%g x=%.10g: Density %v, Im g/pi %v", p[0], p[1], x, d, mux)
				}
			}
		}
	}
	t.Logf("worst error of Re g on the support vs principal value: %.2e", worst)
}

// Near an edge E = z(g_c): x - E ≈ z”(g_c)/2 (g - g_c)^2, so g is continuous, with
// |g(E ± h) - g_c| ≈ sqrt(2h/|z”(g_c)|): real (outside) on one side, imaginary (inside) on the
// other. Denoise therefore jumps by O(sqrt(h)), and by O(sqrt(eps)) at h = eps.
func TestEdgeContinuity(t *testing.T) {
	for _, p := range grid {
		sp, _ := New(p[0], p[1])
		e := sp.Edges()
		for i, E := range e {
			gc := sp.gedge[i]
			s := sp.s
			z2 := math.Abs(2/(gc*gc*gc) - 2*sp.Rho/((gc-s)*(gc-s)*(gc-s)))
			in := 1.0 // direction into the bulk
			if i%2 == 1 {
				in = -1
			}
			// local scale: the adjacent bulk and gap widths
			L := math.Inf(1)
			if i > 0 {
				L = e[i] - e[i-1]
			}
			if i < len(e)-1 {
				L = math.Min(L, e[i+1]-e[i])
			}
			// rounding of E itself moves the edge by ~eps|E|
			h0 := 4 * eps * math.Abs(E)
			fE := sp.Denoise(E)
			if g := sp.Stieltjes(E); math.Abs(real(g)-gc) > 2*math.Sqrt(2*h0/z2)+1e-14*math.Abs(gc) || imag(g) != 0 {
				t.Errorf("rho=%g Delta=%g: g(edge %d) = %v, want %.15g", p[0], p[1], i, g, gc)
			}
			for _, h := range []float64{1e-6 * L, 1e-8 * L, 1e-10 * L, eps * math.Abs(E)} {
				if h == 0 {
					continue
				}
				pred := math.Sqrt(2 * h / z2)
				gin := sp.Stieltjes(E + in*h)
				gout := sp.Stieltjes(E - in*h)
				jin := math.Abs(sp.Denoise(E+in*h) - fE)
				jout := math.Abs(sp.Denoise(E-in*h) - fE)
				bound := 2*sp.Delta*math.Sqrt(2*(h+h0)/z2)*1.2 + 2*h + 1e-12*math.Max(1, math.Abs(fE))
				if jin > bound || jout > bound {
					t.Errorf("rho=%g Delta=%g edge %d h=%.1e: Denoise jumps %.2e / %.2e > %.2e",
						p[0], p[1], i, h, jin, jout, bound)
				}
				if h == 1e-8*L && h > 1e6*h0 {
					// square-root law of the density and of the real branch (the next term is
					// O(sqrt(h)) relative: up to ~2e-2 at h = 1e-8 L near the merging of the bulks)
					if r := imag(gin) / pred; math.Abs(r-1) > 3e-2 {
						t.Errorf("rho=%g Delta=%g edge %d: Im g inside / sqrt law = %.4f", p[0], p[1], i, r)
					}
					if r := math.Abs(real(gout)-gc) / pred; math.Abs(r-1) > 3e-2 || imag(gout) != 0 {
						t.Errorf("rho=%g Delta=%g edge %d: |g_out - g_c| / sqrt law = %.4f", p[0], p[1], i, r)
					}
				}
			}
		}
	}
}

// g ~ 1/x + sqrt(rho)/x^2 + (1 + rho + Delta)/x^3 far away; special inputs.
func TestStieltjesFar(t *testing.T) {
	for _, p := range grid {
		sp, _ := New(p[0], p[1])
		for _, x := range []float64{1e12, -1e12, 1e300, -1e300} {
			g := real(sp.Stieltjes(x))
			want := 1/x + sp.s/(x*x)
			if math.Abs(g-want) > 1e-14*math.Abs(want) {
				t.Errorf("rho=%g Delta=%g: g(%g) = %.17g, want %.17g", p[0], p[1], x, g, want)
			}
			if f := sp.Denoise(x); f != x-2*sp.Delta*g {
				t.Errorf("Denoise(%g) = %v", x, f)
			}
		}
		if g := sp.Stieltjes(math.Inf(1)); g != 0 {
			t.Errorf("g(+Inf) = %v", g)
		}
		if f := sp.Denoise(math.Inf(-1)); !math.IsInf(f, -1) {
			t.Errorf("Denoise(-Inf) = %v", f)
		}
		if f := sp.Denoise(math.NaN()); !math.IsNaN(f) {
			t.Errorf("Denoise(NaN) = %v", f)
		}
	}
}

// Off the support the physical branch is real and strictly decreasing (g' = -∫mu/(x-t)^2 < 0):
// check on a fine grid over each outside component.
func TestOutsideMonotone(t *testing.T) {
	for _, p := range grid {
		sp, _ := New(p[0], p[1])
		e := sp.Edges()
		w := e[len(e)-1] - e[0]
		check := func(lo, hi float64) {
			prev := math.Inf(1)
			for i := 0; i <= 2000; i++ {
				x := lo + (hi-lo)*float64(i)/2000
				if i == 2000 {
					x = hi
				}
				g := sp.Stieltjes(x)
				if imag(g) != 0 || !(real(g) <= prev) {
					t.Errorf("rho=%g Delta=%g: g not real decreasing at x=%.12g (%v, prev %v)", p[0], p[1], x, g, prev)
					return
				}
				prev = real(g)
			}
		}
		check(e[0]-3*w, e[0])
		check(e[len(e)-1], e[len(e)-1]+3*w)
		if len(e) == 4 {
			check(e[1], e[2])
		}
	}
}

func TestNoAllocs(t *testing.T) {
	sp, _ := New(0.5, 0.01)
	if n := testing.AllocsPerRun(20, func() { _, _ = MMSE(0.3, 0.7) }); n != 0 {
		t.Errorf("MMSE allocates %v times", n)
	}
	if n := testing.AllocsPerRun(20, func() { _ = sp.Denoise(0.37) + sp.Denoise(-2) + sp.Denoise(0.05) }); n != 0 {
		t.Errorf("Denoise allocates %v times", n)
	}
	if n := testing.AllocsPerRun(20, func() { _ = sp.IntegralMuCubed() }); n != 0 {
		t.Errorf("IntegralMuCubed allocates %v times", n)
	}
}

// Random (rho, Delta) over the whole range [0.01, 10] x [1e-4, 1e4]: mass and second moment to
// 1e-9, and 0 < mmse <= Delta/(1 + Delta), the error of the best linear estimator
// sqrt(rho) I + (Y - sqrt(rho) I)/(1 + Delta) (valid for any prior of unit variance).
// mmse is increasing in Delta.
func TestSweep(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	worst := 0.0
	for k := 0; k < 400; k++ {
		rho := 0.01 * math.Pow(1000, rng.Float64())
		d := 1e-4 * math.Pow(1e8, rng.Float64())
		sp, _ := New(rho, d)
		m0, _ := sp.integrate(func(x, mu float64) float64 { return mu }, quadRelTol)
		m2, _ := sp.integrate(func(x, mu float64) float64 { return x * x * mu }, quadRelTol)
		e := math.Max(math.Abs(m0-1), math.Abs(m2-sp.m2)/sp.m2)
		worst = math.Max(worst, e)
		if e > 1e-9 {
			t.Errorf("rho=%g Delta=%g: mass %.15g, m2 %.15g (want %.15g)", rho, d, m0, m2, sp.m2)
		}
		m := sp.MMSE()
		if !(m > 0 && m <= d/(1+d)*(1+1e-12)) {
			t.Errorf("rho=%g Delta=%g: mmse %.15g not in (0, Delta/(1+Delta) = %.15g]", rho, d, m, d/(1+d))
		}
	}
	t.Logf("worst mass/second-moment error over 400 random (rho, Delta): %.2e", worst)
	for _, rho := range []float64{0.01, 0.3, 1, 3, 10} {
		prev := 0.0
		for j := 0; j <= 80; j++ {
			d := 1e-4 * math.Pow(1e8, float64(j)/80)
			m, _ := MMSE(d, rho)
			if !(m > prev) {
				t.Errorf("rho=%g: mmse not increasing at Delta=%g (%.15g <= %.15g)", rho, d, m, prev)
			}
			prev = m
		}
	}
}
