package aim

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"

	"github.com/aimtheory/aim/channel"
)

func mustHardmax(t testing.TB, paper bool) *Hardmax {
	t.Helper()
	h, err := NewHardmax(2, paper)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHardmaxBasics(t *testing.T) {
	if _, err := NewHardmax(3, false); err == nil {
		t.Error("NewHardmax(3) should fail")
	}
	h := mustHardmax(t, true)
	if h.Name() != "hardmax" || h.Tokens() != 2 || !h.PaperCompat() || mustHardmax(t, false).PaperCompat() {
		t.Error("Name/Tokens/PaperCompat")
	}
	y := make([]float64, 4)
	for _, c := range []struct{ hm, want []float64 }{
		{[]float64{1, 0.5, 0.5, 0.2}, []float64{1, 0, 1, 0}},
		{[]float64{-1, 0.5, 0.5, 2}, []float64{0, 1, 0, 1}},
		{[]float64{0.3, 0.3, 0.3, 0.3}, []float64{1, 0, 1, 0}}, // ties: lowest index
	} {
		h.Output(y, c.hm)
		for i := range y {
			if y[i] != c.want[i] {
				t.Errorf("Output(%v) = %v, want %v", c.hm, y, c.want)
				break
			}
		}
	}
	for _, a := range [][2]float64{{-1, 1}, {1, 0}, {0.5, -1}, {math.NaN(), 1}, {1, math.NaN()}, {math.Inf(1), 1}} {
		if _, err := h.FisherSum(a[0], a[1]); err == nil {
			t.Errorf("FisherSum(%v, %v) should fail", a[0], a[1])
		}
	}
}

// yFromSigns is the one-hot y with s_a = +1 iff y_aa = 1.
func yFromSigns(s1, s2 float64) []float64 {
	y := []float64{0, 1, 1, 0}
	if s1 > 0 {
		y[0], y[1] = 1, 0
	}
	if s2 > 0 {
		y[2], y[3] = 0, 1
	}
	return y
}

// TestHardmaxGOutPosterior checks g_out = E[u - omega | y, omega]/V by rejection sampling.
func TestHardmaxGOutPosterior(t *testing.T) {
	exact, paper := mustHardmax(t, false), mustHardmax(t, true)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 400000
	maxPaperZ := 0.0
	hm := make([]float64, 4)
	yy := make([]float64, 4)
	u := make([]float64, 3)
	for trial := 0; trial < 6; trial++ {
		V := 0.2 + 1.5*rng.Float64()
		omega := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		s1, s2 := float64(1-2*(trial&1)), float64(1-2*((trial>>1)&1))
		y := yFromSigns(s1, s2)
		var sum, sum2 [3]float64
		acc := 0
		for i := 0; i < n; i++ {
			for j := range u {
				u[j] = omega[j] + math.Sqrt(V)*rng.NormFloat64()
			}
			channel.HFromU(hm, u, 2)
			exact.Output(yy, hm)
			if yy[0] != y[0] || yy[3] != y[3] {
				continue
			}
			acc++
			for j := range u {
				v := (u[j] - omega[j]) / V
				sum[j] += v
				sum2[j] += v * v
			}
		}
		if acc < 2000 {
			t.Logf("trial %d: only %d accepted, skipped", trial, acc)
			continue
		}
		ge, gp := make([]float64, 3), make([]float64, 3)
		exact.GOut(ge, y, omega, V)
		paper.GOut(gp, y, omega, V)
		for j := range u {
			mean := sum[j] / float64(acc)
			se := math.Sqrt((sum2[j]/float64(acc) - mean*mean) / float64(acc))
			if z := math.Abs(ge[j]-mean) / se; z > 4 {
				t.Errorf("trial %d comp %d: exact g = %.5f, MC %.5f +- %.5f (%.1f SE)", trial, j, ge[j], mean, se, z)
			}
			maxPaperZ = math.Max(maxPaperZ, math.Abs(gp[j]-mean)/se)
		}
		t.Logf("trial %d: V=%.3f Z~%.3f exact g=%.4f paper g=%.4f", trial, V, float64(acc)/n, ge, gp)
	}
	if maxPaperZ < 20 {
		t.Errorf("paper-compat g_out should differ from the posterior mean; largest deviation %.1f SE", maxPaperZ)
	}
	t.Logf("paper-compat g_out deviates from the posterior mean by up to %.0f SE", maxPaperZ)
}

// TestHardmaxFisherSumMC checks FisherSum (hence the reduction to H(lambda)/(3V) and the
// table) against a plain Monte Carlo over omega, xi.
func TestHardmaxFisherSumMC(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 200000
	hm := make([]float64, 4)
	y := make([]float64, 4)
	u := make([]float64, 3)
	om := make([]float64, 3)
	g := make([]float64, 3)
	for _, paper := range []bool{false, true} {
		ch := mustHardmax(t, paper)
		for _, qv := range [][2]float64{{0, 1}, {0.5, 0.5}, {1.3, 0.2}, {1.9, 0.02}} {
			q, V := qv[0], qv[1]
			var s, s2 float64
			for i := 0; i < n; i++ {
				for j := range u {
					om[j] = math.Sqrt(q) * rng.NormFloat64()
					u[j] = om[j] + math.Sqrt(V)*rng.NormFloat64()
				}
				channel.HFromU(hm, u, 2)
				ch.Output(y, hm)
				ch.GOut(g, y, om, V)
				v := g[0]*g[0] + g[1]*g[1] + g[2]*g[2]
				s += v
				s2 += v * v
			}
			mean := s / n
			se := math.Sqrt((s2/n - mean*mean) / n)
			fs, err := ch.FisherSum(q, V)
			if err != nil {
				t.Fatal(err)
			}
			z := math.Abs(fs-mean) / se
			t.Logf("paper=%v q=%v V=%v: FisherSum %.6f, MC %.6f +- %.6f (%.1f SE)", paper, q, V, fs, mean, se, z)
			if z > 4 {
				t.Errorf("paper=%v q=%v V=%v: FisherSum %.6f vs MC %.6f +- %.6f", paper, q, V, fs, mean, se)
			}
		}
	}
}

// TestHardmaxReduction3D checks FisherSum = H(q/V)/(3V) against a deterministic 3-D
// Gauss-Hermite quadrature over omega ~ N(0, q I_3) of sum_y Z(y) |g(y)|^2, which does not use
// the reduction to b.
func TestHardmaxReduction3D(t *testing.T) {
	const m = 40
	gx, gw := make([]float64, m), make([]float64, m)
	ghRule(gx, gw)
	for _, paper := range []bool{false, true} {
		ch := mustHardmax(t, paper)
		for _, qv := range [][2]float64{{0.1, 1}, {0.4, 0.6}} {
			q, V := qv[0], qv[1]
			r := math.Sqrt(3 * V)
			g := make([]float64, 3)
			om := make([]float64, 3)
			sum := 0.0
			for i := 0; i < m; i++ {
				for j := 0; j < m; j++ {
					for k := 0; k < m; k++ {
						ww := gw[i] * gw[j] * gw[k]
						if ww < 1e-20 {
							continue
						}
						om[0], om[1], om[2] = math.Sqrt(q)*gx[i], math.Sqrt(q)*gx[j], math.Sqrt(q)*gx[k]
						for _, s := range [][2]float64{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}} {
							k1 := s[0] * (math.Sqrt2*om[0] - om[1]) / r
							k2 := s[1] * (math.Sqrt2*om[2] - om[1]) / r
							lz, _, _, _ := channel.BVNRatios(k1, k2, s[0]*s[1]/3)
							ch.GOut(g, yFromSigns(s[0], s[1]), om, V)
							sum += ww * math.Exp(lz) * (g[0]*g[0] + g[1]*g[1] + g[2]*g[2])
						}
					}
				}
			}
			fs, _ := ch.FisherSum(q, V)
			rel := math.Abs(fs/sum - 1)
			t.Logf("paper=%v q=%v V=%v: FisherSum %.12f, 3-D quadrature %.12f, rel %.1e", paper, q, V, fs, sum, rel)
			if rel > 1e-9 {
				t.Errorf("paper=%v q=%v V=%v: FisherSum %.12f vs 3-D quadrature %.12f", paper, q, V, fs, sum)
			}
		}
	}
}

// ghRule fills the Gauss-Hermite rule for a standard normal.
func ghRule(x, w []float64) {
	quad.Hermite{}.FixedLocations(x, w, math.Inf(-1), math.Inf(1))
	for i := range x {
		x[i] *= math.Sqrt2
		w[i] /= math.SqrtPi
	}
}

// TestHardmaxAlphabarC checks H(0) and the rho -> 0 thresholds alphabar_c = 3/(2 H(0)).
func TestHardmaxAlphabarC(t *testing.T) {
	for _, paper := range []bool{false, true} {
		ch := mustHardmax(t, paper)
		h0 := ch.FisherH(0)
		fs, _ := ch.FisherSum(0, 1)
		if math.Abs(h0/hZero(paper)-1) > 1e-14 || math.Abs(3*fs/h0-1) > 1e-14 {
			t.Errorf("paper=%v: FisherH(0) = %v, closed form %v, 3 FisherSum(0,1) = %v", paper, h0, hZero(paper), 3*fs)
		}
		// The integrand at b = 0 directly.
		if d := math.Abs(hIntegrand(0, 0, paper)/h0 - 1); d > 1e-14 {
			t.Errorf("paper=%v: integrand at 0 differs from H(0) by %.1e", paper, d)
		}
		ac := 3 / (2 * h0)
		t.Logf("paper=%v: H(0) = %.15f, alphabar_c = %.15f", paper, h0, ac)
		if paper && math.Abs(ac-0.563267) > 1e-5 {
			t.Errorf("paper-compat alphabar_c = %.9f, want 0.563267", ac)
		}
		if !paper && math.Abs(ac-0.403410629037599) > 1e-12 {
			t.Errorf("exact alphabar_c = %.15f, want 0.403410629037599", ac)
		}
	}
}

// TestHardmaxFisherHTable checks the interpolated H against direct quadrature at random
// lambda, and the direct quadrature against refined rules.
func TestHardmaxFisherHTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, paper := range []bool{false, true} {
		ch := mustHardmax(t, paper)
		hq := hTableFor(paper).q
		worst := 0.0
		for i := 0; i < 40; i++ {
			var l float64
			switch {
			case i < 6:
				l = 0.012 * rng.Float64() // the piece in lambda
			default:
				l = math.Exp(math.Log(1e-3) + rng.Float64()*math.Log(1e10)) // 1e-3 .. 1e7
			}
			got, want := ch.FisherH(l), hq.direct(l)
			rel := math.Abs(got/want - 1)
			worst = math.Max(worst, rel)
			if rel > 1e-8 {
				t.Errorf("paper=%v lambda=%g: table %.15g, direct %.15g (rel %.1e)", paper, l, got, want, rel)
			}
		}
		t.Logf("paper=%v: table vs direct quadrature, worst relative difference %.1e", paper, worst)
		// Refined rules: more Gauss-Hermite points; finer, wider grid with more points per panel.
		fine := newHQuadWith(paper, 64, 16, []float64{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 9, 10, 12, 14})
		worst = 0
		for _, l := range []float64{0.01, 0.2, 0.45, 0.6, 3, 40, 1e3, 1e6} {
			a, b := hq.direct(l), fine.direct(l)
			rel := math.Abs(a/b - 1)
			worst = math.Max(worst, rel)
			if rel > 1e-11 {
				t.Errorf("paper=%v lambda=%g: default %.15g, refined %.15g (rel %.1e)", paper, l, a, b, rel)
			}
		}
		t.Logf("paper=%v: default vs refined quadrature, worst relative difference %.1e", paper, worst)
		// Large lambda: the series, and the scaling H ~ c/sqrt(lambda) (exact) or c/lambda (paper).
		for _, l := range []float64{1e5, 1e7, 1e9} {
			a, b := ch.FisherH(l), hq.grid(l)
			if rel := math.Abs(a/b - 1); rel > 1e-11 {
				t.Errorf("paper=%v lambda=%g: series %.15g, grid %.15g", paper, l, a, b)
			}
		}
		if paper {
			t.Logf("paper: lambda H(lambda) -> %.10f", 1e9*ch.FisherH(1e9))
		} else {
			t.Logf("exact: sqrt(lambda) H(lambda) -> %.10f", math.Sqrt(1e9)*ch.FisherH(1e9))
		}
	}
}

// TestHardmaxTails checks that g_out stays finite, with the right asymptotics, at |kappa| = 40.
func TestHardmaxTails(t *testing.T) {
	g := make([]float64, 3)
	V := 1.0 / 3 // r = 1
	for _, paper := range []bool{false, true} {
		ch := mustHardmax(t, paper)
		for _, k1 := range []float64{-40, 40, 0.5} {
			for _, k2 := range []float64{-40, 40, -1} {
				for _, s := range [][2]float64{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}} {
					// kappa_a = s_a (sqrt2 omega_aa - omega12)/r with omega12 = 0.
					om := []float64{s[0] * k1 / math.Sqrt2, 0, s[1] * k2 / math.Sqrt2}
					ch.GOut(g, yFromSigns(s[0], s[1]), om, V)
					for _, v := range g {
						if math.IsNaN(v) || math.IsInf(v, 0) {
							t.Fatalf("paper=%v kappa=(%v,%v) s=%v: g = %v", paper, k1, k2, s, g)
						}
					}
				}
			}
		}
	}
	// kappa1 = -40, kappa2 = +40: Z ~ Phi(-40), D1/Z ~ phi(40)/Phi(-40) = 40.02498... (inverse
	// Mills ratio); g11 = sqrt2 D1/Z, g12 = -D1/Z, g22 ~ 0.
	ch := mustHardmax(t, false)
	ch.GOut(g, yFromSigns(1, 1), []float64{-40 / math.Sqrt2, 0, 40 / math.Sqrt2}, V)
	x := 40.0
	mills := x / (1 - 1/(x*x) + 3/math.Pow(x, 4) - 15/math.Pow(x, 6) + 105/math.Pow(x, 8) - 945/math.Pow(x, 10)) // phi(x)/Phi(-x)
	if math.Abs(g[0]/(math.Sqrt2*mills)-1) > 1e-14 || math.Abs(g[1]/(-mills)-1) > 1e-14 || math.Abs(g[2]) > 1e-300 {
		t.Errorf("g at kappa = (-40, 40): %v, want (%v, %v, 0)", g, math.Sqrt2*mills, -mills)
	}
	t.Logf("exact g at kappa = (-40, 40): %v", g)
}

var hmSink float64

func BenchmarkFisherSum(b *testing.B) {
	for _, paper := range []bool{false, true} {
		name := "exact"
		if paper {
			name = "paper"
		}
		b.Run(name, func(b *testing.B) {
			ch := mustHardmax(b, paper)
			ch.FisherH(1) // build the table outside the timing
			for i := 0; b.Loop(); i++ {
				v, _ := ch.FisherSum(0.3+0.001*float64(i%1000), 0.5)
				hmSink += v
			}
		})
	}
}

func BenchmarkGOut(b *testing.B) {
	ch := mustHardmax(b, false)
	g := make([]float64, 3)
	y := yFromSigns(1, -1)
	om := []float64{0.3, -0.2, 0.5}
	for i := 0; b.Loop(); i++ {
		om[0] = 0.3 + 0.001*float64(i&255)
		ch.GOut(g, y, om, 0.7)
		hmSink += g[0]
	}
}

// BenchmarkHTableBuild times building one mode's table (done once per process).
func BenchmarkHTableBuild(b *testing.B) {
	for b.Loop() {
		newHTable(false)
	}
}
