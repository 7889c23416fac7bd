package se

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// fastOptions are the SE options of the Monte Carlo error tests: a loose channel quadrature
// (3e-2; the tests compare the estimated spread of the draws with their actual spread, which
// does not need accurate integrals) and a tolerance far below the errors measured.
func fastOptions(n int, seed uint64) Options {
	o := DefaultOptions(2)
	o.Samples, o.Seed, o.QuadTol, o.Tol = n, seed, 3e-2, 1e-4
	return o
}

// TestSMIAverageErrorMatchesSeeds: the standard error of the channel average F_l that the 8
// replicates estimate agrees with the actual spread of F_l over 40 independent seeds, within a
// factor 1.5 (the spread of 40 seeds is itself known to about 11%), for both layers at
// Q = (0.3, 0.7), with the shifted Halton points and with plain Monte Carlo (whose error is
// larger).
func TestSMIAverageErrorMatchesSeeds(t *testing.T) {
	ch := deep(t, 2, 1)
	Q := []float64{0.3, 0.7}
	spreads := map[bool][]float64{}
	for _, mc := range []bool{false, true} {
		var F [2][]float64
		var v [2]float64
		const seeds = 40
		for s := 1; s <= seeds; s++ {
			o := fastOptions(128, uint64(s))
			o.MonteCarlo = mc
			f, err := fisher(ch, Q, o)
			if err != nil {
				t.Fatal(err)
			}
			for l := range F {
				F[l] = append(F[l], f.F.mean[l])
				v[l] += f.F.cov[l*2+l] / seeds
			}
		}
		for l := range F {
			_, spread := stat.MeanStdDev(F[l], nil)
			est := math.Sqrt(v[l])
			spreads[mc] = append(spreads[mc], spread)
			if r := est / spread; r < 1/1.5 || r > 1.5 {
				t.Errorf("Monte Carlo %v, layer %d: estimated sd(F) %.4g, spread over seeds %.4g (ratio %.2f)", mc, l+1, est, spread, r)
			}
			t.Logf("Monte Carlo %v, layer %d: estimated sd(F) %.4g, spread over seeds %.4g (ratio %.2f)", mc, l+1, est, spread, est/spread)
		}
	}
}

// TestSMIQErrMatchesSeeds: Point.QErr, the standard error of the fixed point, agrees with the
// actual spread of Q_22 over 12 independent seeds within a factor 1.5, at L = 2, alpha = 0.5
// (layer 1 held at its fixed point 0), 1024 draws per iteration. The fixed point amplifies the
// map's noise by 1/(1 - dG/dQ), about 8 here (the SE curve is steep): the map's own error
// alpha sd(F)/(1 + q-hat)^2 is checked to be below half the spread, so that the test tells the
// two apart.
func TestSMIQErrMatchesSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("tens of SE solves: skipped in -short mode (the race pass); the full pass runs it")
	}
	ch := deep(t, 2, 1)
	const alpha, seeds = 0.5, 12
	var qs, v, naive []float64
	for s := 1; s <= seeds; s++ {
		o := fastOptions(1024, uint64(s))
		o.Frozen = []bool{true, false}
		o.start = []float64{0, 0.7}
		pt, err := Solve(ch, alpha, o)
		if err != nil || !pt.Converged {
			t.Fatalf("seed %d: %+v, %v", s, pt, err)
		}
		qs = append(qs, pt.Q[1])
		v = append(v, pt.QErr[1]*pt.QErr[1])
		if s <= 3 { // the map's own error, at the first seeds' fixed points
			o.Samples = pt.Samples
			f, err := fisher(ch, pt.Q, o)
			if err != nil {
				t.Fatal(err)
			}
			naive = append(naive, alpha*math.Sqrt(f.F.cov[3])/((1+pt.QHat[1])*(1+pt.QHat[1])))
		}
	}
	mean, spread := stat.MeanStdDev(qs, nil)
	est := math.Sqrt(stat.Mean(v, nil))
	if r := est / spread; r < 1/1.5 || r > 1.5 {
		t.Errorf("QErr_22 %.4f (rms over seeds), spread of Q_22 over %d seeds %.4f (ratio %.2f)", est, seeds, spread, r)
	}
	if m := stat.Mean(naive, nil); m > spread/2 {
		t.Errorf("the map's error %.4f is not far below the spread %.4f: the test does not see the fixed point's amplification", m, spread)
	}
	t.Logf("alpha %g: Q_22 = %.4f, QErr_22 %.4f (rms), spread %.4f over %d seeds (ratio %.2f); the map's error alone %.4f",
		alpha, mean, est, spread, seeds, est/spread, stat.Mean(naive, nil))
}

// TestSMIMCErrorGrows: with a target standard error the draws grow from Samples until every
// QErr meets it (a tighter target: more draws), and at the cap the point keeps the achieved
// error with ErrorMissed set. Without a target the draws stay at Samples (rounded up to a
// multiple of the 8 replicates) and the error is still reported. L = 2, alpha = 0.5, layer 1
// held at 0.
func TestSMIMCErrorGrows(t *testing.T) {
	if testing.Short() {
		t.Skip("tens of SE solves: skipped in -short mode (the race pass); the full pass runs it")
	}
	ch := deep(t, 2, 1)
	solve := func(target float64, max int) Point {
		o := fastOptions(124, 1)
		o.Frozen = []bool{true, false}
		o.MCError, o.MaxSamples = target, max
		pt, err := Solve(ch, 0.5, o)
		if err != nil || !pt.Converged {
			t.Fatalf("target %g: %+v, %v", target, pt, err)
		}
		t.Logf("target %g, cap %d: %d draws, Q_22 = %.4f +- %.4f, %d iterations, missed %v", target, max, pt.Samples, pt.Q[1], pt.QErr[1], pt.Iterations, pt.ErrorMissed)
		return pt
	}
	fixed := solve(0, 0)
	if fixed.Samples != 128 || !(fixed.QErr[1] > 0.06) || fixed.QErr[0] != 0 || fixed.ErrorMissed {
		t.Errorf("no target: %d draws (want 124 rounded up to 128), QErr %v (want Q_22's above 0.06, 0 for the frozen layer)", fixed.Samples, fixed.QErr)
	}
	var prev Point
	for i, target := range []float64{0.06, 0.03} {
		pt := solve(target, 8192)
		if pt.ErrorMissed || pt.QErr[1] > target || pt.Samples <= fixed.Samples || (i > 0 && pt.Samples <= prev.Samples) {
			t.Errorf("target %g: %d draws, QErr %v, missed %v (previous: %d draws)", target, pt.Samples, pt.QErr, pt.ErrorMissed, prev.Samples)
		}
		prev = pt
	}
	capped := solve(1e-3, 256)
	if !capped.ErrorMissed || capped.Samples != 256 || !(capped.QErr[1] > 1e-3) {
		t.Errorf("target 1e-3 with a cap of 256: %d draws, QErr %v, missed %v; want 256 draws and the miss reported", capped.Samples, capped.QErr, capped.ErrorMissed)
	}
}

// TestSMIQErrWorkers: the fixed point and its error are the same, bit for bit, on 1 and 3
// goroutines.
func TestSMIQErrWorkers(t *testing.T) {
	ch := deep(t, 2, 1)
	var pts []Point
	for _, w := range []int{1, 3} {
		o := fastOptions(200, 2)
		o.Workers = w
		o.Frozen = []bool{true, false}
		pt, err := Solve(ch, 0.5, o)
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, pt)
	}
	if !slices.Equal(pts[0].Q, pts[1].Q) || !slices.Equal(pts[0].QErr, pts[1].QErr) || pts[0].Iterations != pts[1].Iterations {
		t.Errorf("1 goroutine: %+v; 3: %+v", pts[0], pts[1])
	}
}

// TestSMILinearise checks Linearise against Solve (L = 2, alpha = 1.2, both layers learned,
// 512 samples): at Solve's fixed point the map is at the point (|G - Q0| within a few Tol),
// the Newton estimate stays there and its QErr is Solve's (the same formula on the same
// draws); from a point 0.04 away, one step lands within a tenth of that distance of the fixed
// point and a second within 1e-3. Bad input is refused.
func TestSMILinearise(t *testing.T) {
	ch := deep(t, 2, 1)
	const alpha = 1.2
	o := fastOptions(512, 1)
	o.Tol = 1e-6
	pt, err := Solve(ch, alpha, o)
	if err != nil || !pt.Converged {
		t.Fatalf("%+v, %v", pt, err)
	}
	at, err := Linearise(ch, alpha, pt.Q, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fixed point %.5f +- %.5f; linearised there: G %.5f +- %.5f, Q %.5f +- %.5f, %d evaluations", pt.Q, pt.QErr, at.G, at.GErr, at.Q, at.QErr, at.Evaluations)
	if at.Evaluations != 5 || at.Samples != pt.Samples {
		t.Errorf("%d evaluations at %d samples, want 5 at %d", at.Evaluations, at.Samples, pt.Samples)
	}
	for l := range pt.Q {
		if d := math.Abs(at.G[l] - pt.Q[l]); d > 1e-5 {
			t.Errorf("layer %d: G - Q* = %g at the fixed point", l+1, d)
		}
		if d := math.Abs(at.Q[l] - pt.Q[l]); d > 1e-4 {
			t.Errorf("layer %d: the Newton estimate moved %g from the fixed point", l+1, d)
		}
		if r := at.QErr[l] / pt.QErr[l]; math.Abs(r-1) > 1e-9 {
			t.Errorf("layer %d: QErr %g, Solve's %g", l+1, at.QErr[l], pt.QErr[l])
		}
		if !(at.GErr[l] > 0 && at.GErr[l] < at.QErr[l]) {
			t.Errorf("layer %d: GErr %g, want in (0, QErr = %g): the fixed point amplifies the map's noise", l+1, at.GErr[l], at.QErr[l])
		}
	}
	q0 := []float64{pt.Q[0] - 0.04, pt.Q[1] - 0.0005}
	one, err := Linearise(ch, alpha, q0, o)
	if err != nil {
		t.Fatal(err)
	}
	two, err := Linearise(ch, alpha, one.Q, o)
	if err != nil {
		t.Fatal(err)
	}
	d0, d1, d2 := math.Abs(q0[0]-pt.Q[0]), math.Abs(one.Q[0]-pt.Q[0]), math.Abs(two.Q[0]-pt.Q[0])
	t.Logf("from %.4f: one step %.5f, two %.5f (fixed point %.5f): distances %.1e, %.1e, %.1e", q0, one.Q, two.Q, pt.Q, d0, d1, d2)
	if d1 > d0/10 || d2 > 1e-3 {
		t.Errorf("Newton steps from %v: distances %g, %g, %g to the fixed point", q0, d0, d1, d2)
	}
	// J is the step's: (I - J)(Q - Q0) = G - Q0; and it is the map's derivative: the map at the
	// step's end, G(one.Q) = two.G, is G(q0) + J (one.Q - q0) to second order.
	for l := range q0 {
		lhs, pred := one.Q[l]-q0[l], one.G[l]
		for k := range q0 {
			lhs -= one.J[l*2+k] * (one.Q[k] - q0[k])
			pred += one.J[l*2+k] * (one.Q[k] - q0[k])
		}
		if d := math.Abs(lhs - (one.G[l] - q0[l])); d > 1e-12 {
			t.Errorf("layer %d: (I - J)(Q - Q0) - (G - Q0) = %g: J is not the step's", l+1, d)
		}
		t.Logf("layer %d: J row %.4f; G at the step's end %.6f, predicted by J %.6f", l+1, one.J[l*2:l*2+2], two.G[l], pred)
		if d := math.Abs(two.G[l] - pred); d > 0.1*math.Abs(two.G[l]-one.G[l]) {
			t.Errorf("layer %d: G at the step's end %g, J predicts %g (from %g): J is not the derivative", l+1, two.G[l], pred, one.G[l])
		}
	}
	one1 := o
	one1.Replicates = 1
	for name, tc := range map[string]struct {
		q []float64
		o Options
	}{
		"one replicate": {pt.Q, one1},
		"L overlaps":    {[]float64{0.5}, o},
		"Q = 1":         {[]float64{0.5, 1}, o},
		"Q < 0":         {[]float64{-0.1, 0.5}, o},
	} {
		if _, err := Linearise(ch, alpha, tc.q, tc.o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestSMINewton: with Options.Newton the solves at more draws of an MC error target take
// Newton steps from the last fixed point, and land on the fixed point that damped iteration
// finds on the same draws (L = 2, alpha = 1.2, both layers learned, 256 draws grown to 1024):
// within a few Tol, with the same QErr to rounding of J (the Newton steps' last Jacobian,
// against one taken afresh at the damped answer), in fewer evaluations of the map.
func TestSMINewton(t *testing.T) {
	if testing.Short() {
		t.Skip("four SE solves: skipped in -short mode (the race pass); the full pass runs it")
	}
	ch := deep(t, 2, 1)
	const alpha = 1.2
	var pts [2]Point
	for i, newton := range []bool{false, true} {
		o := fastOptions(256, 1)
		o.Tol = 1e-6
		o.MCError, o.MaxSamples, o.Newton = 0.01, 1024, newton
		pt, err := Solve(ch, alpha, o)
		if err != nil || !pt.Converged {
			t.Fatalf("newton %v: %+v, %v", newton, pt, err)
		}
		t.Logf("newton %v: %d draws, Q = %.6f +- %.6f, %d evaluations", newton, pt.Samples, pt.Q, pt.QErr, pt.Iterations)
		pts[i] = pt
	}
	damped, newton := pts[0], pts[1]
	if damped.Samples != 1024 || newton.Samples != 1024 {
		t.Fatalf("draws %d and %d, want both grown to 1024", damped.Samples, newton.Samples)
	}
	for l := range damped.Q {
		if d := math.Abs(newton.Q[l] - damped.Q[l]); d > 1e-4 {
			t.Errorf("layer %d: Newton's Q %g, damped %g", l+1, newton.Q[l], damped.Q[l])
		}
		if r := newton.QErr[l] / damped.QErr[l]; math.Abs(r-1) > 0.02 {
			t.Errorf("layer %d: Newton's QErr %g, damped %g", l+1, newton.QErr[l], damped.QErr[l])
		}
	}
	if newton.Iterations >= damped.Iterations {
		t.Errorf("Newton took %d evaluations, damped %d", newton.Iterations, damped.Iterations)
	}
	o := fastOptions(256, 1)
	o.Newton = true
	if _, err := Solve(ch, alpha, o); err == nil || !strings.Contains(err.Error(), "MCError") {
		t.Errorf("Newton without an MC error target: %v", err)
	}
}
