package se

import (
	"fmt"
	"math"
	"testing"

	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/internal/reftest"
)

// sigmoidChannel is a synthetic entropic channel with a first-order transition: along the SE
// line V = Q0 - q its Fisher sum is F(q) = a + b sigma((q - qc)/w), a steep rise in q that
// makes the SE map S-shaped, and psi_out(q) = (a q + b w softplus((q - qc)/w))/2 is its
// antiderivative over 2, as aim.Entropic requires. It depends on q only (V is Q0 - q in the SE).
type sigmoidChannel struct{ a, b, qc, w float64 }

func (c sigmoidChannel) Name() string          { return "sigmoid" }
func (c sigmoidChannel) Tokens() int           { return 2 }
func (c sigmoidChannel) Output(y, h []float64) {}
func (c sigmoidChannel) FisherSum(q, V float64) (float64, error) {
	return c.a + c.b/(1+math.Exp(-(q-c.qc)/c.w)), nil
}
func (c sigmoidChannel) OutputEntropy(q, V float64) (float64, error) {
	x := (q - c.qc) / c.w
	sp := math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
	return (c.a*q + c.b*c.w*sp) / 2, nil
}

var testFirstOrder = sigmoidChannel{a: 1, b: 60, qc: 1.2, w: 0.03}

func entropic(t *testing.T) map[string]aim.Channel {
	h3, err := aim.NewHardmaxTChannel(3)
	if err != nil {
		t.Fatal(err)
	}
	lin, err := aim.NewLinear(0)
	if err != nil {
		t.Fatal(err)
	}
	noisyLin, err := aim.NewLinear(0.25)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]aim.Channel{"softmax": softmax(t, 2), "softmax T=3": softmax(t, 3), "hardmax": hardmax(t, false), "hardmax T=3": h3, "sigmoid": testFirstOrder,
		"linear": lin, "linear noise 0.25": noisyLin}
}

// Stationarity: at a solved fixed point both partial derivatives of Phi(m, q-hat) vanish
// (central differences). This pins every constant of Phi: a wrong factor in the coupling
// m q-hat/4, in i(q-hat) or in alpha psi_out leaves one of them non-zero.
func TestFreeEntropyStationary(t *testing.T) {
	for name, ch := range entropic(t) {
		for _, c := range []struct{ rho, alpha float64 }{{0.5, 0.05}, {0.5, 0.15}, {0.2, 0.03}, {2, 0.1}, {0.5, 1}, {1, 3}} {
			if _, ok := ch.(aim.Entropic); !ok {
				t.Fatalf("%s is not Entropic", name)
			}
			p, err := Solve(ch, c.rho, c.alpha, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if p.MMSE < 1e-3 {
				continue // beyond alpha_PR (softmax): Phi = +Inf there
			}
			phi := func(m, qh float64) float64 {
				v, err := FreeEntropyAt(ch, c.rho, c.alpha, m, qh)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			hm, hq := 1e-5*p.MMSE, 1e-5*p.QHat
			dm := (phi(p.MMSE+hm, p.QHat) - phi(p.MMSE-hm, p.QHat)) / (2 * hm)
			dq := (phi(p.MMSE, p.QHat+hq) - phi(p.MMSE, p.QHat-hq)) / (2 * hq)
			// Scales of the two terms that cancel in each derivative: q-hat/4 and m/4.
			if math.Abs(dm) > 1e-6*p.QHat/4 || math.Abs(dq) > 1e-6*p.MMSE/4 {
				t.Errorf("%s rho=%g alpha=%g (m = %.6g, q-hat = %.6g): dPhi/dm = %.2e (scale %.2g), dPhi/dq-hat = %.2e (scale %.2g)",
					name, c.rho, c.alpha, p.MMSE, p.QHat, dm, p.QHat/4, dq, p.MMSE/4)
			}
			// And a wrong coupling would not be stationary: 1.1 m q-hat/4 gives dPhi/dm = 0.1 q-hat/4.
		}
	}
}

// Envelope theorem: along the curve of fixed points, dPhi/dalpha = dPhi/dalpha|_(m, q-hat) =
// psi_out(q, V) (the only explicit alpha), checked by central differences of Phi(alpha) with
// the SE re-solved at alpha +- h. Stationarity makes the solver's error enter only at second
// order; the difference's error is the quadrature's ~1e-11 over h = 1e-4 alpha, larger near
// alpha_PR (softmax), where q-hat is large: tolerance 1e-6 absolute on an O(1) psi_out.
func TestFreeEntropyEnvelope(t *testing.T) {
	cases := map[string][][2]float64{
		"softmax": {{0.5, 0.02}, {0.5, 0.1}, {0.5, 0.17}, {0.1, 0.01}, {1, 0.1}, {2, 0.2}},
		"hardmax": {{0.5, 0.05}, {0.5, 0.5}, {0.5, 3}, {0.1, 0.2}, {1, 1}, {2, 8}},
		// The tabulated T = 3 channel: psi_out up to its documented constant E(0), which the
		// envelope identity carries on both sides.
		"hardmax T=3": {{0.5, 0.1}, {0.5, 1}, {2, 3}},
		// The quadratic network (docs/theory/aim.md 2.8): psi_out exact, no constant dropped.
		"linear":            {{0.5, 0.05}, {0.5, 0.2}, {0.5, 0.35}, {1, 0.3}},
		"linear noise 0.25": {{0.5, 0.05}, {0.5, 0.3}, {0.5, 0.8}, {2, 0.4}},
	}
	for name, pts := range cases {
		ch := entropic(t)[name]
		for _, c := range pts {
			rho, alpha := c[0], c[1]
			fd, want, _, _ := envelope(t, ch, rho, alpha, 1e-4)
			d := math.Abs(fd - want)
			t.Logf("%s rho=%g alpha=%g: dPhi/dalpha = %.10f, psi_out(q, V) = %.10f, difference %.1e", name, rho, alpha, fd, want, d)
			// psi_out is O(1) (it crosses 0 near alpha_PR for softmax): an absolute tolerance.
			if d > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("%s rho=%g alpha=%g: dPhi/dalpha = %.10g, psi_out = %.10g (difference %.1e > 1e-6)", name, rho, alpha, fd, want, d)
			}
		}
	}
}

// Both starts agree to the solver's tolerance on the alpha grids of every published softmax
// and hardmax curve (every sixth point), so Start = Both reproduces the uninformed curves
// unchanged: no first-order transition there. The published hardmax curves come from the
// paper-compat channel, which has no free entropy: for it the two starts are compared directly
// (the CLI keeps its uninformed start), and the exact hardmax is checked on the same grids.
func TestStartsAgreeOnPublishedGrids(t *testing.T) {
	o := DefaultOptions()
	type curve struct {
		name, file string
		ch         aim.Channel
		rho        float64
	}
	var curves []curve
	for _, r := range []string{"0.1", "0.2", "0.3", "0.5", "1.0", "2.0"} {
		curves = append(curves, curve{"softmax", "SE_softmax/SE_softmax_T=2_rho=" + r + ".csv", softmax(t, 2), parse(t, r)})
	}
	for _, r := range []string{"0.1", "0.2", "0.5", "1.0", "2.0"} {
		f := "SE_hardmax/SE_hardmax_rho=" + r + ".csv"
		curves = append(curves, curve{"hardmax", f, hardmax(t, false), parse(t, r)}, curve{"hardmax-paper", f, hardmax(t, true), parse(t, r)})
	}
	for _, c := range curves {
		cols := reftest.Columns(t, reftest.Path(t, "aim", c.file))
		worst, worstAt, n := 0.0, 0.0, 0
		for k, a := range cols["alpha"] {
			if k%6 != 0 {
				continue
			}
			n++
			var mu, mi, mb float64
			if c.name == "hardmax-paper" {
				ou, oi := o, o
				oi.Start = Informed
				pu, err1 := Solve(c.ch, c.rho, a, ou)
				pi, err2 := Solve(c.ch, c.rho, a, oi)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				mu, mi, mb = pu.MMSE, pi.MMSE, pu.MMSE
			} else {
				b, err := SolveBranches(c.ch, c.rho, a, o)
				if err != nil {
					t.Fatal(err)
				}
				ob := o
				ob.Start = Both
				p, err := Solve(c.ch, c.rho, a, ob)
				if err != nil {
					t.Fatal(err)
				}
				if b.Coexist {
					t.Errorf("%s rho=%g alpha=%g: coexisting fixed points %.15g, %.15g", c.name, c.rho, a, b.Uninformed.MMSE, b.Informed.MMSE)
				}
				mu, mi, mb = b.Uninformed.MMSE, b.Informed.MMSE, p.MMSE
			}
			if mb != mu {
				t.Errorf("%s rho=%g alpha=%g: Start = Both reports %.15g, the uninformed start %.15g", c.name, c.rho, a, mb, mu)
			}
			if d := math.Abs(mu - mi); d > worst {
				worst, worstAt = d, a
			}
		}
		t.Logf("%s rho=%g: max |m_uninformed - m_informed| = %.1e over %d alphas (at alpha = %g)", c.name, c.rho, worst, n, worstAt)
		// 1e-10 where the map's slope is below 1; at alpha_PR itself (softmax, the files' last
		// point) the slope is 1 and both starts crawl to 0 algebraically: 1e-7 there.
		tol := 1e-10
		if c.name == "softmax" && worstAt >= 0.999*AlphaPRCounting(c.rho, 4) {
			tol = 1e-7
		}
		if worst > tol {
			t.Errorf("%s rho=%g: the starts differ by %.2e at alpha = %g", c.name, c.rho, worst, worstAt)
		}
	}
}

func parse(t *testing.T, s string) float64 {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The synthetic first-order channel: FirstOrder finds the coexistence interval and the crossing
// of the free entropies; a naive dense scan of Phi_informed - Phi_uninformed and of the
// coexistence brackets all three, and the Bayes-optimal branch switches at alpha_IT.
func TestFirstOrderSynthetic(t *testing.T) {
	ch := testFirstOrder
	rho := 0.5
	var grid []float64
	for k := 0; k <= 30; k++ {
		grid = append(grid, 0.01*math.Pow(100, float64(k)/30))
	}
	o := DefaultOptions()
	o.MaxIter = 3000 // the saddle-nodes are located to the solver's resolution (see FirstOrder)
	tr, err := FirstOrder(ch, rho, grid, 1e-7, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("synthetic: spinodal %.8g, alpha_IT %.8g, alpha_alg %.8g", tr.AlphaSpinodal, tr.AlphaIT, tr.AlphaAlg)
	if !tr.Found || !(tr.AlphaSpinodal < tr.AlphaIT && tr.AlphaIT < tr.AlphaAlg) {
		t.Fatalf("want spinodal < alpha_IT < alpha_alg, got %+v", tr)
	}
	for _, c := range []struct {
		a       float64
		coexist bool
		sign    float64 // of Phi_informed - Phi_uninformed
	}{
		{tr.AlphaSpinodal * (1 - 1e-4), false, 0}, {tr.AlphaSpinodal * (1 + 1e-4), true, -1},
		{tr.AlphaIT * (1 - 1e-6), true, -1}, {tr.AlphaIT * (1 + 1e-6), true, 1},
		{tr.AlphaAlg * (1 - 1e-4), true, 1}, {tr.AlphaAlg * (1 + 1e-4), false, 0},
	} {
		b, err := SolveBranches(ch, rho, c.a, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if b.Coexist != c.coexist || (c.sign != 0 && math.Signbit(b.PhiInformed-b.PhiUninformed) != math.Signbit(c.sign)) {
			t.Errorf("alpha = %.10g: coexist %v (want %v), Phi_i - Phi_u = %.3g (want sign %g)", c.a, b.Coexist, c.coexist, b.PhiInformed-b.PhiUninformed, c.sign)
		}
		p, phi := b.Optimal()
		if c.sign > 0 && p.MMSE != b.Informed.MMSE || c.sign < 0 && p.MMSE != b.Uninformed.MMSE {
			t.Errorf("alpha = %.10g: Optimal picked m = %g (Phi %g)", c.a, p.MMSE, phi)
		}
	}
	// Real channels: none on their default grids.
	for name, ch := range map[string]aim.Channel{"softmax": softmax(t, 2), "hardmax": hardmax(t, false)} {
		tr, err := FirstOrder(ch, 0.5, grid[:20], 1e-7, DefaultOptions())
		if err != nil || tr.Found || !math.IsNaN(tr.AlphaIT) {
			t.Errorf("%s: %+v, %v; want no first-order transition", name, tr, err)
		}
	}
}

// TestStartBothNeedsEntropy: Start = Both needs a free entropy to choose between fixed points.
func TestStartBothNeedsEntropy(t *testing.T) {
	if _, err := Solve(hardmax(t, true), 0.5, 0.5, Options{Damping: 0.5, Tol: 1e-10, MaxIter: 1000, Start: Both}); err == nil {
		t.Error("Start = Both on paper-compat hardmax: no error")
	}
}

// envelope returns the central difference of Phi along the fixed points, (Phi(alpha + h) -
// Phi(alpha - h))/(2h) with h = hRel alpha and the SE re-solved at each alpha, and psi_out(q, V)
// at the fixed point p of alpha: the two sides of the envelope identity; dq is the central
// difference of q along the fixed points.
func envelope(t *testing.T, ch aim.Channel, rho, alpha, hRel float64) (fd, psiOut, dq float64, p Point) {
	t.Helper()
	phi := func(a float64) (float64, Point) {
		p, err := Solve(ch, rho, a, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		v, err := FreeEntropy(ch, p)
		if err != nil {
			t.Fatal(err)
		}
		return v, p
	}
	h := hRel * alpha
	fp, pp := phi(alpha + h)
	fm, pm := phi(alpha - h)
	_, p = phi(alpha)
	psiOut, err := ch.(aim.Entropic).OutputEntropy(p.Q, p.MMSE)
	if err != nil {
		t.Fatal(err)
	}
	return (fp - fm) / (2 * h), psiOut, (pp.Q - pm.Q) / (2 * h), p
}
