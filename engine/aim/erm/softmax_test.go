package erm

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/se"
)

// testOptions are the solver options of the Monte Carlo state evolution in the tests.
func testOptions() se.Options {
	o := se.DefaultOptions()
	o.Tol = 1e-10
	return o
}

// TestChannelStateEvolutionLinear checks the general channel's state evolution (Monte Carlo
// over the M-dimensional proximal map, m-hat != Sigma-hat in general, S-hat = kappa r(Y)) with
// the linear channel's loss against the scalar state evolution of Solve, which reduces the same
// equations by hand (m-hat = Sigma-hat = 2 alpha/(Sigma + 1/4)): the two agree within three
// Monte Carlo standard errors, and the stated error is neither 0 nor loose (below 5% of E).
func TestChannelStateEvolutionLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("about 2 s, 20 s under the race detector")
	}
	for _, p := range []Problem{
		{Rho: 0.5, Alpha: 0.3, Noise: 0.1, Lambda: 0.1},
		{Rho: 0.5, Alpha: 0.6, Lambda: 0.01},
		{Rho: 0.5, Alpha: 0.3, Noise: 0.25, Lambda: 0.1, Penalty: Ridge},
	} {
		p.Samples = 4096
		ref, err := Solve(p, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		mc, err := solveSoftmax(p, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v: scalar E %.6g, Monte Carlo %.6g +- %.2g; train %.6g, %.6g", p, ref.TestError, mc.TestError, mc.TestErr, ref.TrainError, mc.TrainError)
		if !(mc.TestErr > 0 && mc.TestErr < 0.05*ref.TestError) {
			t.Errorf("%+v: stated Monte Carlo error %g of E = %g", p, mc.TestErr, ref.TestError)
		}
		if d := math.Abs(mc.TestError - ref.TestError); d > 3*mc.TestErr+ref.QuadError {
			t.Errorf("%+v: E = %.6g +- %.2g, the scalar state evolution's %.6g (%.1f standard errors)", p, mc.TestError, mc.TestErr, ref.TestError, d/mc.TestErr)
		}
		// The training loss shares the draws' noise: within 10% (E_train is a few percent of E).
		if d := math.Abs(mc.TrainError - ref.TrainError); d > 0.1*ref.TrainError {
			t.Errorf("%+v: training error %.6g, the scalar state evolution's %.6g", p, mc.TrainError, ref.TrainError)
		}
	}
}

// TestSoftmaxLimit checks lambda -> 0+ of the noiseless softmax: the linear channel's estimator
// at alpha K/2 (perfect recovery above alpha_c = 2/K alpha_c,linear, 0.2111 at rho = 0.5 and
// T = 2), approached by the Monte Carlo state evolution at lambda > 0: the test error falls
// as lambda falls, towards the limit (the gap to it at lambda = 1e-4 below a quarter of the gap
// at 1e-2), with zero training error in it.
func TestSoftmaxLimit(t *testing.T) {
	ac, err := PerfectRecoverySoftmax(0.5, 2)
	if err != nil || math.Abs(ac-0.42222/2) > 1e-4 {
		t.Fatalf("alpha_c(0.5, T = 2) = %.6g (%v), want 0.2111", ac, err)
	}
	for _, c := range []struct {
		alpha float64
		zero  bool
	}{{0.98 * ac, false}, {1.02 * ac, true}} {
		pt, err := Solve(Problem{Rho: 0.5, Alpha: c.alpha, T: 2, Beta: 1}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if (pt.TestError == 0) != c.zero || pt.TrainError != 0 {
			t.Errorf("alpha %g (alpha_c %g): E = %g, training error %g", c.alpha, ac, pt.TestError, pt.TrainError)
		}
	}
	base := Problem{Rho: 0.5, Alpha: 0.1, T: 2, Beta: 1, Samples: 2048}
	lim, err := Solve(base, se.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	lin, err := Solve(Problem{Rho: 0.5, Alpha: 0.2}, se.DefaultOptions())
	if err != nil || lin.TestError != lim.TestError {
		t.Fatalf("lambda = 0: E = %.15g, the linear channel's at alpha K/2 %.15g (%v)", lim.TestError, lin.TestError, err)
	}
	if testing.Short() {
		return // the Monte Carlo points below: about 20 s
	}
	prev, first := math.Inf(1), 0.0
	for _, l := range []float64{1e-2, 1e-3, 1e-4} {
		p := base
		p.Lambda = l
		pt, err := Solve(p, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		gap := pt.TestError - lim.TestError
		t.Logf("lambda %g: E = %.5f +- %.1e (limit %.5f), training error %.2e", l, pt.TestError, pt.TestErr, lim.TestError, pt.TrainError)
		if !(gap > -3*pt.TestErr && gap < prev) {
			t.Errorf("lambda %g: E - E(0+) = %.4g after %.4g: not falling towards the limit", l, gap, prev)
		}
		prev = gap
		if first == 0 {
			first = gap
		}
	}
	// About sqrt(lambda): measured 0.160, 0.053, 0.020 (2048 draws).
	if prev > first/4 {
		t.Errorf("lambda 1e-4: E is %.4g above the limit, lambda 1e-2 %.4g: not approaching it", prev, first)
	}
}

// TestSoftmaxInvariants checks, on a grid of alpha and lambda at T = 2 and 3, what the theory
// guarantees whatever the channel: the Bayes-optimal error is below the ERM error (within the
// latter's Monte Carlo error), and along lambda the training error rises and Tr S-hat falls.
func TestSoftmaxInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("about 15 s")
	}
	for _, T := range []int{2, 3} {
		ch, err := aim.NewSoftmax(T, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, alpha := range []float64{0.05, 0.15} {
			bo, err := se.Solve(ch, 0.5, alpha, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			prevTrain, prevTr := -1.0, math.Inf(1)
			for _, l := range []float64{0.01, 0.1} {
				pt, err := Solve(Problem{Rho: 0.5, Alpha: alpha, Lambda: l, T: T, Beta: 1, Samples: 1024}, testOptions())
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("T %d alpha %g lambda %g: E %.4f +- %.1e (Bayes-optimal %.4f), train %.4g, Tr S/D %.4f", T, alpha, l, pt.TestError, pt.TestErr, bo.MMSE, pt.TrainError, pt.TrS)
				if pt.TestError < bo.MMSE-3*pt.TestErr {
					t.Errorf("T %d alpha %g lambda %g: ERM error %.5g below the Bayes-optimal %.5g", T, alpha, l, pt.TestError, bo.MMSE)
				}
				if !(pt.TrainError > prevTrain && pt.TrS < prevTr) {
					t.Errorf("T %d alpha %g lambda %g: training error %.4g after %.4g, Tr S %.4g after %.4g", T, alpha, l, pt.TrainError, prevTrain, pt.TrS, prevTr)
				}
				prevTrain, prevTr = pt.TrainError, pt.TrS
			}
		}
	}
}

// TestSoftmaxSpectrum checks the spectrum of a softmax point (S-hat = kappa r(Y)): its density
// integrates to 1 - atom and its mean is Tr S-hat / D.
func TestSoftmaxSpectrum(t *testing.T) {
	pt, err := Solve(Problem{Rho: 0.5, Alpha: 0.1, Lambda: 0.01, T: 2, Beta: 1, Samples: 1024}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := pt.Spectrum()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(pt.Shrink-1) < 0.05 || sp.Scale != pt.Shrink {
		t.Fatalf("kappa = %g, the spectrum's scale %g: the softmax point should scale its eigenvalues", pt.Shrink, sp.Scale)
	}
	e := sp.Edges()
	var mass, mean float64
	const n = 20000
	for k := 0; k < len(e); k += 2 {
		h := (e[k+1] - e[k]) / n
		for i := 0; i < n; i++ {
			x := e[k] + (float64(i)+0.5)*h
			d := sp.Density(x)
			mass += d * h
			mean += x * d * h
		}
	}
	if math.Abs(mass-(1-sp.Atom)) > 1e-3 || math.Abs(mean-pt.TrS) > 1e-3 {
		t.Errorf("mass %.5f (1 - atom %.5f), mean %.5f (Tr S/D %.5f)", mass, 1-sp.Atom, mean, pt.TrS)
	}
	if c := sp.CDF(e[len(e)-1]); math.Abs(c-1) > 1e-6 {
		t.Errorf("CDF at the top edge %.8f", c)
	}
}
