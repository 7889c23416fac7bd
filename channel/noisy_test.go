package channel

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// TestNoisyLogZMonteCarlo compares Z_out and G = d log Z_out/d m of the noisy softmax (the
// factorised quadrature) with a plain Monte Carlo over d ~ N(m, V C3), C3 = [[3, 1], [1, 3]]:
// Z = E prod_a N(y~_a; sigma(beta d_a), Delta/2), dZ/dm = E[(V C3)^-1 (d - m) prod_a N(..)].
func TestNoisyLogZMonteCarlo(t *testing.T) {
	cases := []struct{ beta, delta, y1, y2, m1, m2, V float64 }{
		{1, 0.05, 0.6, 0.3, 0.5, -0.4, 1.0},
		{1, 0.01, 0.8, 0.45, 1.2, 0.1, 0.3},
		{2, 0.1, 0.1, 0.95, -1, 1.5, 0.5},
		{1, 0.02, 0.5, 0.5, 0, 0, 0.05},
	}
	r := rand.New(rand.NewPCG(17, 2))
	const n = 400000
	for _, c := range cases {
		ch, err := NewNoisySoftmax(2, c.beta, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		lz, g1, g2 := ch.LogZ(c.y1, c.y2, c.m1, c.m2, c.V)
		d2 := c.delta / 2
		lik := func(y, d float64) float64 {
			e := y - Logistic(c.beta*d)
			return math.Exp(-e*e/(2*d2)) / math.Sqrt(2*math.Pi*d2)
		}
		var z, z2, n1, n2 float64
		sv := math.Sqrt(c.V)
		for i := 0; i < n; i++ {
			g0, a1, a2 := r.NormFloat64(), r.NormFloat64(), r.NormFloat64()
			e1 := sv * (g0 + math.Sqrt2*a1) // d - m, covariance V C3
			e2 := sv * (g0 + math.Sqrt2*a2)
			w := lik(c.y1, c.m1+e1) * lik(c.y2, c.m2+e2)
			z += w
			z2 += w * w
			// (V C3)^-1 = [[3, -1], [-1, 3]]/(8 V)
			n1 += w * (3*e1 - e2) / (8 * c.V)
			n2 += w * (3*e2 - e1) / (8 * c.V)
		}
		z /= n
		se := math.Sqrt((z2/n - z*z) / n)
		if got := math.Exp(lz); math.Abs(got-z) > 4*se+1e-9 {
			t.Errorf("%+v: Z = %.6g, Monte Carlo %.6g +- %.2g", c, got, z, se)
		}
		mg1, mg2 := n1/n/z, n2/n/z
		tol := 0.02 * (1 + math.Abs(mg1) + math.Abs(mg2))
		if math.Abs(g1-mg1) > tol || math.Abs(g2-mg2) > tol {
			t.Errorf("%+v: G = (%.5g, %.5g), Monte Carlo (%.5g, %.5g)", c, g1, g2, mg1, mg2)
		}
	}
}

// TestNoisyRowRule checks the window rule of K and dlog K/dmu against a fine composite
// Gauss-Legendre rule over x in [mu - 12 sqrt(v), mu + 12 sqrt(v)] (4000 panels of 8 points),
// down to Delta = 1e-5: 1e-5 relative (measured: 3.4e-6 for an output within sqrt(Delta) of
// 0 or 1, 1e-9 or better elsewhere).
func TestNoisyRowRule(t *testing.T) {
	glx, glw := GaussLegendre(8)
	for _, c := range []struct{ delta, y, mu, v float64 }{
		{1e-2, 0.3, 0.2, 2}, {1e-3, 0.7, 0.5, 1}, {1e-5, 0.55, -0.3, 3}, {1e-3, 0.02, -2, 0.5},
		{1e-2, -0.05, 0.5, 1}, {1e-3, 0.5, 4, 1e-3}, {1e-1, 1.2, 1, 0.2}, {1e-4, 0.999, 3, 2},
	} {
		ch, _ := NewNoisySoftmax(2, 1, c.delta)
		lk, dk := ch.RowLog(c.y, c.mu, c.v)
		d2 := c.delta / 2
		a, b := c.mu-12*math.Sqrt(c.v), c.mu+12*math.Sqrt(c.v)
		const panels = 4000
		var s, m float64
		for p := 0; p < panels; p++ {
			lo := a + (b-a)*float64(p)/panels
			h := (b - a) / panels / 2
			for i, u := range glx {
				x := lo + h + h*u
				e := c.y - Logistic(x)
				f := math.Exp(-e*e/(2*d2)-(x-c.mu)*(x-c.mu)/(2*c.v)) / (2 * math.Pi * math.Sqrt(d2*c.v))
				s += h * glw[i] * f
				m += h * glw[i] * f * (x - c.mu) / c.v
			}
		}
		t.Logf("%+v: relative error of K %.1e, of dlog K %.1e", c, math.Abs(math.Exp(lk)-s)/s, math.Abs(dk-m/s)/(1+math.Abs(m/s)))
		if math.Abs(math.Exp(lk)-s) > 1e-5*s || math.Abs(dk-m/s) > 1e-5*(1+math.Abs(m/s)) {
			t.Errorf("%+v: K = %.12g, dlogK = %.10g; fine rule %.12g, %.10g", c, math.Exp(lk), dk, s, m/s)
		}
	}
}

// TestNoisySoftmaxArgs: T != 2, beta <= 0 and Delta <= 0 are refused.
func TestNoisySoftmaxArgs(t *testing.T) {
	for _, c := range []struct {
		T           int
		beta, delta float64
	}{{3, 1, 0.1}, {2, 0, 0.1}, {2, 1, 0}, {2, 1, -1}, {2, 1, math.NaN()}, {2, 1, math.Inf(1)}} {
		if _, err := NewNoisySoftmax(c.T, c.beta, c.delta); err == nil {
			t.Errorf("NewNoisySoftmax(%d, %g, %g): no error", c.T, c.beta, c.delta)
		}
	}
}

// TestNoisyLogZSmallNoise checks log Z_out and G = d log Z_out/d m (what GOut returns, through
// g11 = sqrt2 G1, g12 = -(G1 + G2), g22 = sqrt2 G2) from Delta = 1e-8 to 1e-2 against a brute
// force: g_0 by a composite Gauss-Legendre rule on [-10, 10] (100 panels of 8 points) and each K
// by a composite rule in x on mu +- 12 sqrt(v) (4000 panels) plus, where y~ lies in (0, 1), one
// on the likelihood's window logit(y~)/beta +- 40 sqrt(Delta/2)/(beta sigma') (400 panels),
// the two pieces not overlapping. Relative 1e-6 on Z and 1e-6 (1 + |G|) on G.
func TestNoisyLogZSmallNoise(t *testing.T) {
	if testing.Short() || os.Getenv("AIM_LONG_TESTS") != "1" {
		t.Skip("brute-force integrals, 15 s of CPU: set AIM_LONG_TESTS=1")
	}
	glx, glw := GaussLegendre(8)
	composite := func(a, b float64, panels int, f func(x float64) (float64, float64)) (s, m float64) {
		h := (b - a) / float64(panels) / 2
		for p := 0; p < panels; p++ {
			c := a + h*float64(2*p+1)
			for i, u := range glx {
				v, w := f(c + h*u)
				s += h * glw[i] * v
				m += h * glw[i] * w
			}
		}
		return s, m
	}
	for _, c := range []struct{ delta, y1, y2, m1, m2, V float64 }{
		{1e-8, 0.6, 0.3, 0.5, -0.4, 1.0}, {1e-8, 0.999, 0.2, 2, -1, 0.5}, {1e-6, 0.8, 0.45, 1.2, 0.1, 0.3},
		{1e-6, 1e-4, 0.5, -3, 0, 1}, {1e-4, 0.05, 0.95, -1, 1.5, 0.5}, {1e-2, 0.5, 0.5, 0, 0, 0.05},
	} {
		ch, _ := NewNoisySoftmax(2, 1, c.delta)
		lz, g1, g2 := ch.LogZ(c.y1, c.y2, c.m1, c.m2, c.V)
		d2 := c.delta / 2
		// K(y; mu, 2V) and dK/dmu by brute force.
		row := func(y, mu float64) (k, dk float64) {
			v := 2 * c.V
			f := func(x float64) (float64, float64) {
				e := y - Logistic(x)
				p := math.Exp(-e*e/(2*d2)-(x-mu)*(x-mu)/(2*v)) / (2 * math.Pi * math.Sqrt(d2*v))
				return p, p * (x - mu) / v
			}
			a, b := mu-12*math.Sqrt(v), mu+12*math.Sqrt(v)
			if y <= 0 || y >= 1 {
				return composite(a, b, 4000, f)
			}
			xs := math.Log(y) - math.Log1p(-y)
			w := 40 * math.Sqrt(d2) / (y * (1 - y))
			la, lb := math.Max(a, xs-w), math.Min(b, xs+w)
			if la >= lb {
				return composite(a, b, 4000, f)
			}
			k1, d1 := composite(a, la, 2000, f)
			k2, d2 := composite(la, lb, 400, f)
			k3, d3 := composite(lb, b, 2000, f)
			return k1 + k2 + k3, d1 + d2 + d3
		}
		sv := math.Sqrt(c.V)
		z, n1, n2 := 0.0, 0.0, 0.0
		h := 20.0 / 100 / 2
		for p := 0; p < 100; p++ {
			cc := -10 + h*float64(2*p+1)
			for i, u := range glx {
				g0 := cc + h*u
				w := h * glw[i] * math.Exp(-g0*g0/2) / math.Sqrt(2*math.Pi)
				k1, dk1 := row(c.y1, c.m1+sv*g0)
				k2, dk2 := row(c.y2, c.m2+sv*g0)
				z += w * k1 * k2
				n1 += w * dk1 * k2
				n2 += w * k1 * dk2
			}
		}
		bg1, bg2 := n1/z, n2/z
		t.Logf("%+v: Z %.10g (brute %.10g), G (%.8g, %.8g) (brute %.8g, %.8g)", c, math.Exp(lz), z, g1, g2, bg1, bg2)
		if math.Abs(math.Exp(lz)-z) > 1e-6*z || math.Abs(g1-bg1) > 1e-6*(1+math.Abs(bg1)) || math.Abs(g2-bg2) > 1e-6*(1+math.Abs(bg2)) {
			t.Errorf("%+v: Z = %.10g, G = (%.8g, %.8g); brute force %.10g, (%.8g, %.8g)", c, math.Exp(lz), g1, g2, z, bg1, bg2)
		}
	}
}
