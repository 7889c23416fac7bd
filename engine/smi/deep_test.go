package smi

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCubatureExactness: the Genz-Malik rule integrates every monomial of degree <= 7 exactly
// on a box, and the adaptive scheme converges on a narrow off-centre Gaussian peak.
func TestCubatureExactness(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		c := newCubature(n, 1)
		r := rand.New(rand.NewPCG(1, uint64(n)))
		centre, half := make([]float64, n), make([]float64, n)
		for i := range centre {
			centre[i] = r.Float64() - 0.5
			half[i] = 0.5 + r.Float64()
		}
		for trial := 0; trial < 20; trial++ {
			pow := make([]int, n)
			deg := 0
			for deg == 0 || deg > 7 {
				deg = 0
				for i := range pow {
					pow[i] = r.IntN(5)
					deg += pow[i]
				}
			}
			f := func(fx, x []float64) {
				v := 1.0
				for i, p := range pow {
					v *= math.Pow(x[i], float64(p))
				}
				fx[0] = v
			}
			want := 1.0
			for i, p := range pow {
				a, b := centre[i]-half[i], centre[i]+half[i]
				want *= (math.Pow(b, float64(p+1)) - math.Pow(a, float64(p+1))) / float64(p+1)
			}
			reg := c.newRegion()
			copy(reg.c, centre)
			copy(reg.h, half)
			c.rule(reg, f, []float64{1})
			if math.Abs(reg.val[0]-want) > 1e-12*(1+math.Abs(want)) {
				t.Errorf("n = %d, powers %v: rule gives %.15g, exact %.15g", n, pow, reg.val[0], want)
			}
		}
		// A peak of width 0.05 (0.2 in 4-D) at an off-centre point of [-6, 6]^n, seeded.
		s := 0.05
		if n == 4 {
			s = 0.2
		}
		f := func(fx, x []float64) {
			var r2 float64
			for i, v := range x {
				d := v - 0.3*float64(i+1)
				r2 += d * d
			}
			fx[0] = math.Exp(-r2 / (2 * s * s))
		}
		val, err := make([]float64, 1), make([]float64, 1)
		lo, hi := make([]float64, n), make([]float64, n)
		for i := range hi {
			hi[i] = 6
		}
		at, width := make([]float64, n), make([]float64, n)
		for i := range at {
			at[i], width[i] = 0.3*float64(i+1), s
		}
		ok, ev := c.integrate(val, err, f, lo, hi, 1e-5, 2000000, []float64{1}, []peak{{at, width}})
		want := math.Pow(2*math.Pi*s*s, float64(n)/2)
		if !ok || math.Abs(val[0]/want-1) > 1e-5 {
			t.Errorf("n = %d: peak integral %.10g, exact %.10g (converged %v, %d evaluations)", n, val[0], want, ok, ev)
		}
	}
}

// TestCubaturePositive: the fallback rule (3-point Gauss-Legendre per region, positive
// weights) integrates a product of degree-5 monomials exactly over a refined partition, and a
// nonnegative integrand to a nonnegative value.
func TestCubaturePositive(t *testing.T) {
	for _, n := range []int{2, 4} {
		c := newCubature(n, 2)
		f := func(fx, x []float64) {
			v := 1.0
			for i, xi := range x {
				v *= math.Pow(xi, float64(i%2*4+1)) // x_0 x_1^5 x_2 x_3^5 ...
			}
			fx[0] = math.Exp(-4 * x[0] * x[0]) // forces refinement
			fx[1] = v
		}
		lo, hi := make([]float64, n), make([]float64, n)
		for i := range lo {
			lo[i], hi[i] = 0.5, 1
		}
		val, err := make([]float64, 2), make([]float64, 2)
		c.integrate(val, err, f, lo, hi, 1e-8, 20000, []float64{1, 0}, nil)
		if len(c.regions) < 2 {
			t.Fatalf("n = %d: the test needs a refined partition, got %d regions", n, len(c.regions))
		}
		c.positive(val, f)
		want := 1.0
		for i := 0; i < n; i++ {
			p := float64(i%2*4 + 1)
			want *= (math.Pow(1.5, p+1) - math.Pow(-0.5, p+1)) / (p + 1)
		}
		if math.Abs(val[1]-want) > 1e-12*math.Abs(want) || !(val[0] > 0) {
			t.Errorf("n = %d: positive rule gives %.15g (weight %g), exact %.15g", n, val[1], val[0], want)
		}
	}
}

// TestDeepForward checks the recursion against the closed forms of docs/theory/smi.md 1.2 for L = 2 and
// L = 3, written out with explicit 2 x 2 algebra, and InvertM2 against the teacher's u,
// including saturated outputs.
func TestDeepForward(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	for _, c := range []float64{0, 0.5, 1, 3} {
		for _, beta := range []float64{1, 2.5} {
			for L := 1; L <= 3; L++ {
				d, err := NewDeep(L, 2, c, beta)
				if err != nil {
					t.Fatal(err)
				}
				s := d.NewScratch()
				for trial := 0; trial < 50; trial++ {
					z := make([]float64, 2*L)
					for i := range z {
						z[i] = 2 * r.NormFloat64()
					}
					u := make([]float64, 2)
					d.Forward(u, z, nil, s)
					att := func(v []float64) [4]float64 {
						s0 := 1 / (1 + math.Exp(beta*v[0]*(v[1]-v[0])))
						s1 := 1 / (1 + math.Exp(beta*v[1]*(v[0]-v[1])))
						return [4]float64{s0 + c, 1 - s0, 1 - s1, s1 + c}
					}
					mv := func(a [4]float64, v []float64) []float64 {
						return []float64{a[0]*v[0] + a[1]*v[1], a[2]*v[0] + a[3]*v[1]}
					}
					var want []float64
					switch L {
					case 1:
						want = z[:2]
					case 2:
						want = mv(att(z[:2]), z[2:4])
					case 3:
						a1 := att(z[:2])
						a2 := att(mv(a1, z[2:4]))
						want = mv(a2, mv(a1, z[4:6]))
					}
					for i := range u {
						if math.Abs(u[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
							t.Fatalf("L = %d c = %g: u = %v, closed form %v", L, c, u, want)
						}
					}
				}
			}
		}
	}
	for _, u := range [][2]float64{{0.3, -1.2}, {2, 1.5}, {6, -6}, {-9, 8}, {12, -11}} {
		for _, beta := range []float64{1, 2} {
			d, _ := NewDeep(1, 2, 1, beta)
			y := make([]float64, 4)
			d.OutputU(y, u[:])
			got, err := InvertM2(y, beta)
			if err != nil {
				t.Fatal(err)
			}
			want := u
			if want[0] < want[1] {
				want = [2]float64{-u[0], -u[1]}
			}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
					t.Errorf("u = %v beta = %g: inverted %v, want %v", u, beta, got, want)
				}
			}
		}
	}
	if _, err := InvertM2([]float64{0.5, 0.5, 0.5, 0.5}, 1); err == nil {
		t.Error("InvertM2 of a uniform output (u_0 = u_1) gave no error")
	}
}

// TestDeepTriangular checks Attention (M = 2) against its form in the token basis
// e_+ = (1, 1)/sqrt 2, e_- = (1, -1)/sqrt 2: A(v) = [[1 + c, tau_0 - tau_1], [0, tau_0 + tau_1 - 1 + c]]
// with tau_0 = sigma(beta (P + Y)/2), tau_1 = sigma(beta (P - Y)/2), P = 2 (v^-)^2 and
// Y = 2 v^+ v^- (v^+- = v . e_+-), so that det A = (1 + c)(tau_0 + tau_1 - 1 + c) >= c (1 + c):
// every product of attentions is upper triangular in that basis and 1/|det B| is bounded for
// c > 0 (docs/validation/smi-channel.md).
func TestDeepTriangular(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	sigma := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	a := make([]float64, 4)
	for _, c := range []float64{0.01, 0.5, 1, 3} {
		for _, beta := range []float64{1, 2.5} {
			d, err := NewDeep(2, 2, c, beta)
			if err != nil {
				t.Fatal(err)
			}
			for trial := 0; trial < 20000; trial++ {
				v := []float64{2 * r.NormFloat64(), 2 * r.NormFloat64()}
				d.Attention(a, v)
				vp, vm := (v[0]+v[1])/math.Sqrt2, (v[0]-v[1])/math.Sqrt2
				P, Y := 2*vm*vm, 2*vp*vm
				t0, t1 := sigma(beta*(P+Y)/2), sigma(beta*(P-Y)/2)
				// Entries of e_i^T A e_j.
				pp := (a[0] + a[1] + a[2] + a[3]) / 2
				pm := (a[0] - a[1] + a[2] - a[3]) / 2
				mp := (a[0] + a[1] - a[2] - a[3]) / 2
				mm := (a[0] - a[1] - a[2] + a[3]) / 2
				for _, e := range []struct {
					name      string
					got, want float64
				}{{"(+,+)", pp, 1 + c}, {"(+,-)", pm, t0 - t1}, {"(-,+)", mp, 0}, {"(-,-)", mm, t0 + t1 - 1 + c}} {
					if math.Abs(e.got-e.want) > 1e-14*(1+c) {
						t.Fatalf("c = %g beta = %g v = %v: entry %s = %.17g, want %.17g", c, beta, v, e.name, e.got, e.want)
					}
				}
				if det := a[0]*a[3] - a[1]*a[2]; det < c*(1+c)*(1-1e-12) {
					t.Fatalf("c = %g beta = %g v = %v: det A = %g below c (1 + c) = %g", c, beta, v, det, c*(1+c))
				}
			}
		}
	}
}

// TestDeepBadInput: the parameters and the posterior's limits are checked.
func TestDeepBadInput(t *testing.T) {
	for _, tc := range []struct {
		L, M    int
		c, beta float64
	}{{0, 2, 1, 1}, {2, 1, 1, 1}, {2, 2, -0.1, 1}, {2, 2, math.Inf(1), 1}, {2, 2, 1, 0}, {2, 2, math.NaN(), 1}} {
		if _, err := NewDeep(tc.L, tc.M, tc.c, tc.beta); err == nil {
			t.Errorf("NewDeep(%d, %d, %g, %g) gave no error", tc.L, tc.M, tc.c, tc.beta)
		}
	}
	for _, tc := range []struct{ L, M int }{{2, 3}, {4, 2}} {
		d, err := NewDeep(tc.L, tc.M, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.NewPosterior(); err == nil {
			t.Errorf("NewPosterior for L = %d, M = %d gave no error", tc.L, tc.M)
		}
	}
}

// TestDeepMomentsL1: for one layer the posterior is two points z_1 = +-u weighted by
// N(+-u; omega, V); the moments have a closed form.
func TestDeepMomentsL1(t *testing.T) {
	d, _ := NewDeep(1, 2, 1, 1)
	q, err := d.NewPosterior()
	if err != nil {
		t.Fatal(err)
	}
	m := d.NewMoments()
	u, omega, v := []float64{0.7, -0.4}, []float64{0.3, 0.1}, 0.6
	if err := q.Moments(m, u, omega, []float64{v}); err != nil {
		t.Fatal(err)
	}
	lw := func(s float64) float64 {
		var r float64
		for l := range u {
			r += (s*u[l] - omega[l]) * (s*u[l] - omega[l])
		}
		return -r/(2*v) - math.Log(2*math.Pi*v)
	}
	wp, wm := math.Exp(lw(1)), math.Exp(lw(-1))
	for l := range u {
		want := (wp*(u[l]-omega[l]) + wm*(-u[l]-omega[l])) / (wp + wm)
		if math.Abs(m.Mean[l]-want) > 1e-14 {
			t.Errorf("mean[%d] = %.16g, want %.16g", l, m.Mean[l], want)
		}
	}
	if want := math.Log(wp + wm); math.Abs(m.LogZ-want) > 1e-13 {
		t.Errorf("log Z = %.16g, want %.16g", m.LogZ, want)
	}
}

// TestDeepMomentsMonteCarlo compares the quadrature's posterior moments and Z_out (the density
// of +-u) with a brute-force Monte Carlo that knows nothing of the inversion or the Jacobian:
// draw Z ~ N(omega, V) column by column, run the forward map and keep the draws whose v_L lands
// within delta of u or of -u (approximate Bayesian computation). The kept fraction divided by
// the two balls' area estimates Z_out, and the kept draws' mean and covariance estimate the
// posterior's. Tolerance: 4.5 standard errors plus the O(delta^2) bias.
func TestDeepMomentsMonteCarlo(t *testing.T) {
	if testing.Short() {
		t.Skip("Monte Carlo reference: skipped in -short mode")
	}
	type tc struct {
		L     int
		c     float64
		V     []float64
		omega []float64
		z     []float64 // the draw that defines u
		delta float64   // the ABC radius; 0: 0.06
	}
	cases := []tc{
		{2, 1, []float64{1, 0, 0, 1}, []float64{0, 0, 0, 0}, []float64{0.8, -0.5, 1.1, 0.3}, 0},
		{2, 1, []float64{0.7, 0.2, 0.2, 0.5}, []float64{0.4, -0.6, 0.5, 0.2}, []float64{0.9, -0.5, 0.8, 0.6}, 0},
		{2, 0.5, []float64{0.9, 0, 0, 0.3}, []float64{-0.2, 0.3, -0.7, 0.4}, []float64{-0.5, 0.1, -1.0, 0.2}, 0},
		// The last layer learned (V_22 = 0.05), as along the SE curve beyond alpha ~ 0.5.
		{2, 1, []float64{0.95, 0, 0, 0.05}, []float64{0.1, -0.2, 0.8, -0.5}, []float64{0.9, -0.5, 0.85, -0.45}, 0},
		{3, 1, []float64{1, 0, 0, 0, 0.8, 0.1, 0, 0.1, 0.6}, []float64{0, 0, 0.3, -0.2, 0.4, -0.3}, []float64{0.5, -0.8, 0.6, 0.1, 0.9, -0.4}, 0},
		// L = 3 at the alpha = 2 fixed point, Q = (0.951, 0.933, 0.999): every layer learned,
		// the last sharply (the cubature runs on the unit cube and stops at its budget).
		{3, 1, []float64{0.05, 0, 0, 0, 0.068, 0, 0, 0, 0.002}, []float64{0.31, -1.02, 0.85, 0.47, -0.66, 1.21},
			[]float64{0.18, -0.95, 0.98, 0.41, -0.70, 1.17}, 0.02},
	}
	const draws = 5_000_000
	for ci, c := range cases {
		delta := c.delta
		if delta == 0 {
			delta = 0.06
		}
		d, _ := NewDeep(c.L, 2, c.c, 1)
		q, err := d.NewPosterior()
		if err != nil {
			t.Fatal(err)
		}
		m := d.NewMoments()
		s := d.NewScratch()
		u := make([]float64, 2)
		d.Forward(u, c.z, nil, s)
		if err := q.Moments(m, u, c.omega, c.V); err != nil {
			t.Fatal(err)
		}
		P, pm := c.L, 2*c.L
		// Cholesky of V for the draws.
		ch := make([]float64, P*P)
		for i := 0; i < P; i++ {
			for j := 0; j <= i; j++ {
				v := c.V[i*P+j]
				for k := 0; k < j; k++ {
					v -= ch[i*P+k] * ch[j*P+k]
				}
				if i == j {
					ch[i*P+i] = math.Sqrt(v)
				} else {
					ch[i*P+j] = v / ch[j*P+j]
				}
			}
		}
		r := rand.New(rand.NewPCG(7, uint64(ci)))
		z, e, v := make([]float64, pm), make([]float64, P), make([]float64, 2)
		var kept int
		sum := make([]float64, pm)
		sum2 := make([]float64, pm*pm)
		for it := 0; it < draws; it++ {
			for l := 0; l < 2; l++ {
				for k := range e {
					e[k] = r.NormFloat64()
				}
				for k := 0; k < P; k++ {
					var x float64
					for j := 0; j <= k; j++ {
						x += ch[k*P+j] * e[j]
					}
					z[k*2+l] = c.omega[k*2+l] + x
				}
			}
			d.Forward(v, z, nil, s)
			dp := math.Hypot(v[0]-u[0], v[1]-u[1])
			dm := math.Hypot(v[0]+u[0], v[1]+u[1])
			if dp > delta && dm > delta {
				continue
			}
			kept++
			for a := 0; a < pm; a++ {
				za := z[a] - c.omega[a]
				sum[a] += za
				for b := 0; b < pm; b++ {
					sum2[a*pm+b] += za * (z[b] - c.omega[b])
				}
			}
		}
		if kept < 1500 {
			t.Fatalf("case %d: only %d draws kept", ci, kept)
		}
		n := float64(kept)
		zMC := n / draws / (math.Pi * delta * delta) // P(ball at u) + P(ball at -u) = (p(u) + p(-u)) pi delta^2
		zQ := math.Exp(m.LogZ)
		if rel := math.Abs(zMC/zQ - 1); rel > 4.5/math.Sqrt(n)+0.01 {
			t.Errorf("case %d: Z_out quadrature %.5g, Monte Carlo %.5g (%d kept)", ci, zQ, zMC, kept)
		}
		for a := 0; a < pm; a++ {
			mean := sum[a] / n
			sd := math.Sqrt(sum2[a*pm+a]/n - mean*mean)
			// The O(delta^2) bias of the ABC window, at most a tenth of the prior's scale.
			bias := math.Min(0.01, 0.1*math.Sqrt(c.V[(a/2)*P+a/2]))
			if math.Abs(mean-m.Mean[a]) > 4.5*sd/math.Sqrt(n)+bias {
				t.Errorf("case %d: E[Z-omega]_%d quadrature %.5f, Monte Carlo %.5f +- %.5f", ci, a, m.Mean[a], mean, sd/math.Sqrt(n))
			}
			for b := a; b < pm; b++ {
				mc := sum2[a*pm+b] / n
				if math.Abs(mc-m.Second[a*pm+b]) > 4.5*sd*math.Sqrt(m.Second[b*pm+b])*math.Sqrt(2/n)+bias*math.Sqrt(c.V[(b/2)*P+b/2]) {
					t.Errorf("case %d: E[(Z-omega)(Z-omega)]_%d%d quadrature %.5f, Monte Carlo %.5f", ci, a, b, m.Second[a*pm+b], mc)
				}
			}
		}
		t.Logf("case %d (L = %d): kept %d, Z_out %.5g vs %.5g, %d evaluations, exact %v", ci, c.L, kept, zQ, zMC, m.Evals, m.Exact)
	}
}
