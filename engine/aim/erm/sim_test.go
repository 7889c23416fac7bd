package erm

import (
	"math"
	"os"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/aim/se"
	"github.com/aimtheory/aim/engine/internal/devtest"
)

func linear(D int, alpha, rho, noise float64, seed uint64) aim.Params {
	return aim.Params{D: D, Alpha: alpha, Rho: rho, Seed: seed, Channel: channel.Spec{Kind: channel.KindLinear, T: 1, Noise: noise}}
}

// TestMinimiserAgreement: three independent solvers reach the same minimiser of
// (1/D) sum (h - y)^2 + lambda Tr S over PSD S on the same data (D = 30): accelerated proximal
// gradient on S (convexERM, host), GAMP-ERM (amp with Options.ERM, whose fixed point satisfies
// the optimality conditions exactly) and gradient descent on W with S = W^T W / sqrt(R D), R = D,
// and weight decay lambda (Adam, lr 0.05, 3000 steps). Measured: GAMP against proximal gradient
// within 1e-8 of the error, GD within 3e-5 (the tolerances: 1e-6 and 2e-4).
func TestMinimiserAgreement(t *testing.T) {
	if testing.Short() {
		t.Skip("about 6 s")
	}
	dev := cpu.New(0)
	const D = 30
	for _, c := range []struct{ alpha, lambda float64 }{{0.6, 0.1}, {0.3, 1}} {
		p := linear(D, c.alpha, 0.5, 0.25, 1)
		s := draw(t, D, c.alpha, 0.5, 0.25, 1)
		S, _ := convexERM(s, c.lambda, 1500)
		fista := testError(S, s.SStar)
		data, err := aim.Generate(dev, p)
		if err != nil {
			t.Fatal(err)
		}
		o := amp.DefaultOptions()
		o.ERM, o.WeightDecay, o.MaxIter, o.Tol = true, c.lambda, 3000, 1e-14
		ra, err := amp.Run(dev, data, o)
		if err != nil || !ra.Converged {
			t.Fatalf("GAMP-ERM: %v (converged %v)", err, ra.Converged)
		}
		g := gd.DefaultOptions()
		g.WeightDecay, g.R, g.Steps, g.LR = c.lambda, D, 3000, 0.05
		rg, err := gd.Run(dev, data, g)
		if err != nil {
			t.Fatal(err)
		}
		data.Free(dev)
		t.Logf("alpha %g lambda %g: proximal gradient %.9f, GAMP-ERM %.9f (%+.1e), GD %.9f (%+.1e)", c.alpha, c.lambda, fista, ra.Error, ra.Error-fista, rg.Error, rg.Error-fista)
		if math.Abs(ra.Error-fista) > 1e-6 || math.Abs(rg.Error-fista) > 2e-4 {
			t.Errorf("alpha %g lambda %g: proximal gradient %.9f, GAMP-ERM %.9f, GD %.9f", c.alpha, c.lambda, fista, ra.Error, rg.Error)
		}
	}
}

// extrapolate runs run(D, seed) for 8 seeds at D = d and 2d and returns the 1/D extrapolation
// 2 E_2d - E_d of the mean error, its standard error, and the two gaps to want.
func extrapolate(t *testing.T, want float64, d int, run func(D int, seed uint64) float64) (ext, sem, gap1, gap2 float64) {
	var m, v [2]float64
	for k, D := range []int{d, 2 * d} {
		var es []float64
		for seed := uint64(1); seed <= 8; seed++ {
			es = append(es, run(D, seed))
		}
		mean, sd := meanSD(es)
		m[k], v[k] = mean, sd*sd/float64(len(es))
	}
	return 2*m[1] - m[0], math.Sqrt(4*v[1] + v[0]), m[0] - want, m[1] - want
}

// TestGAMPAgainstStateEvolution: GAMP-ERM's error at D = 40 and 80 (8 seeds each) approaches
// the state evolution as 1/D. Measured at rho = 0.5, Delta = 0.25: the gap halves from D = 40
// to 80 (0.018 to 0.0094 at alpha = 0.6, lambda = 0.1; 0.062 to 0.028 at alpha = 0.3), and the
// extrapolation 2 E_80 - E_40 lies 0.08 and 0.26 standard errors from the theory (it did so
// also at D = 100 and 200 with 12 and 8 seeds: docs/validation/erm.md). Asserted: the gap
// shrinks, and the extrapolation is within 3 standard errors.
func TestGAMPAgainstStateEvolution(t *testing.T) {
	if testing.Short() {
		t.Skip("about 8 s")
	}
	dev := cpu.New(0)
	for _, c := range []struct{ alpha, lambda float64 }{{0.6, 0.1}, {0.3, 0.1}} {
		pt, err := Solve(Problem{Rho: 0.5, Alpha: c.alpha, Noise: 0.25, Lambda: c.lambda}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		ext, sem, g40, g80 := extrapolate(t, pt.TestError, 40, func(D int, seed uint64) float64 {
			data, err := aim.Generate(dev, linear(D, c.alpha, 0.5, 0.25, seed))
			if err != nil {
				t.Fatal(err)
			}
			defer data.Free(dev)
			o := amp.DefaultOptions()
			o.ERM, o.WeightDecay, o.MaxIter, o.Tol = true, c.lambda, 1000, 1e-10
			r, err := amp.Run(dev, data, o)
			if err != nil || !r.Converged {
				t.Fatalf("D %d seed %d: %v (converged %v)", D, seed, err, r.Converged)
			}
			return r.Error
		})
		t.Logf("alpha %g lambda %g: SE %.5f, gap %.5f at D = 40, %.5f at 80, extrapolation %.5f +- %.5f (%+.2f)", c.alpha, c.lambda, pt.TestError, g40, g80, ext, sem, (ext-pt.TestError)/sem)
		if !(math.Abs(g80) < math.Abs(g40)) || math.Abs(ext-pt.TestError) > 3*sem {
			t.Errorf("alpha %g lambda %g: SE %.5f, gaps %.5f, %.5f, extrapolation %.5f +- %.5f", c.alpha, c.lambda, pt.TestError, g40, g80, ext, sem)
		}
	}
}

// TestRidgeAgainstSimulation: the ridge estimator at D = 20 and 40 (8 seeds each; the exact
// minimiser from its normal equations, devtest.RidgeMinimiser, which is also what the direct
// student of gd converges to: gd's TestDirectRidgeMinimiser) against the closed-form ridge
// state evolution, below and above alpha = 1/2 and at lambda = 0 (the minimal-norm
// interpolator): the 1/D extrapolation lies within 3 standard errors.
func TestRidgeAgainstSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s")
	}
	for _, c := range []struct{ alpha, lambda, noise float64 }{{0.8, 0.05, 0.25}, {0.3, 0.2, 0.25}, {0.3, 0, 0}} {
		pt, err := Solve(Problem{Rho: 0.5, Alpha: c.alpha, Noise: c.noise, Lambda: c.lambda, Penalty: Ridge}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		ext, sem, g1, g2 := extrapolate(t, pt.TestError, 20, func(D int, seed uint64) float64 {
			s := draw(t, D, c.alpha, 0.5, c.noise, seed)
			N, _ := s.X.Dims()
			S, err := devtest.RidgeMinimiser(s.X.RawMatrix().Data, s.Y, N, D, c.lambda)
			if err != nil {
				t.Fatal(err)
			}
			e := 0.0
			for i := 0; i < D; i++ {
				for j := 0; j < D; j++ {
					d := S[i*D+j] - s.SStar.At(i, j)
					e += d * d
				}
			}
			return e / float64(D)
		})
		t.Logf("alpha %g lambda %g Delta %g: SE %.5f, gap %.5f at D = 20, %.5f at 40, extrapolation %.5f +- %.5f (%+.2f)", c.alpha, c.lambda, c.noise, pt.TestError, g1, g2, ext, sem, (ext-pt.TestError)/sem)
		if math.Abs(ext-pt.TestError) > 3*sem {
			t.Errorf("alpha %g lambda %g: SE %.5f, gaps %.5f, %.5f, extrapolation %.5f +- %.5f", c.alpha, c.lambda, pt.TestError, g1, g2, ext, sem)
		}
	}
}

// ksDistance returns sup_x |F_n(x) - F(x)| between the empirical distribution of the sorted
// eigenvalues x and the predicted CDF, counting the tie at 0 against the atom.
func ksDistance(x []float64, sp *Spectrum) float64 {
	n := float64(len(x))
	ks := 0.0
	for i := 0; i < len(x); {
		j := i
		for j < len(x) && x[j] == x[i] {
			j++
		}
		F, below := sp.CDF(x[i]), sp.CDF(x[i])
		if x[i] == 0 {
			below = 0 // nothing below the atom
		}
		ks = math.Max(ks, math.Max(math.Abs(float64(j)/n-F), math.Abs(float64(i)/n-below)))
		i = j
	}
	return ks
}

// TestLearnedSpectrum: the eigenvalues of the minimiser (GAMP-ERM's final S-hat, whose zero
// eigenvalues are exact) against the predicted spectrum of S-hat (atom and density): the
// Kolmogorov distance between their CDFs, averaged over 2 seeds, shrinks with D. Measured at
// rho = 0.5, Delta = 0.25, lambda = 0.1: 0.035, 0.019, 0.018, 0.014 at D = 50, 100, 160, 200
// (alpha = 0.3; atom 0.511) and 0.041, 0.028, 0.015, 0.014 (alpha = 0.6; atom 0.368). Asserted: at
// D = 160 below 0.025 and below 0.6 of D = 50's.
func TestLearnedSpectrum(t *testing.T) {
	if testing.Short() {
		t.Skip("about 8 s")
	}
	dev := cpu.New(0)
	for _, alpha := range []float64{0.3, 0.6} {
		pt, err := Solve(Problem{Rho: 0.5, Alpha: alpha, Noise: 0.25, Lambda: 0.1}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		sp, err := pt.Spectrum()
		if err != nil {
			t.Fatal(err)
		}
		var ks [2]float64
		for k, D := range []int{50, 160} {
			for seed := uint64(1); seed <= 2; seed++ {
				data, err := aim.Generate(dev, linear(D, alpha, 0.5, 0.25, seed))
				if err != nil {
					t.Fatal(err)
				}
				o := amp.DefaultOptions()
				o.ERM, o.WeightDecay, o.MaxIter, o.Tol, o.Spectrum = true, 0.1, 1000, 1e-10, true
				r, err := amp.Run(dev, data, o)
				data.Free(dev)
				if err != nil || !r.Converged || len(r.Eigenvalues) != D {
					t.Fatalf("D %d seed %d: %v (converged %v, %d eigenvalues)", D, seed, err, r.Converged, len(r.Eigenvalues))
				}
				ks[k] += ksDistance(r.Eigenvalues, sp) / 2
			}
		}
		t.Logf("alpha %g: Kolmogorov distance %.4f at D = 50, %.4f at D = 160 (atom %.3f)", alpha, ks[0], ks[1], sp.Atom)
		if !(ks[1] < 0.025 && ks[1] < 0.6*ks[0]) {
			t.Errorf("alpha %g: Kolmogorov distance %.4f at D = 50, %.4f at D = 160", alpha, ks[0], ks[1])
		}
	}
}

// TestPowerLawSimulation: a power-law teacher (aim.Teacher, gamma = 1.25, rho = 1, Delta = 0.1,
// alpha = 0.2) drawn at D = 50 and 100 (4 seeds each), GAMP-RIE against the Bayes-optimal SE
// (se.SolvePrior) and GAMP-ERM (lambda = 0.05) against the ERM SE, each with the teacher's own D
// eigenvalues as its prior (the theory of a power law is at a given D). Measured gaps: Bayes
// 0.0067 and 0.0046 (SE 0.061 and 0.039), ERM 0.020 and 0.0050 (SE 0.111 and 0.075); at D = 200
// 0.0013 and 0.0029. Asserted: both gaps shrink, and their 1/D extrapolation 2 gap_100 - gap_50
// is within 3 standard errors of 0.
func TestPowerLawSimulation(t *testing.T) {
	if testing.Short() || os.Getenv("AIM_LONG_TESTS") != "1" {
		t.Skip("16 GAMP runs with a power-law prior, 15 to 25 s: set AIM_LONG_TESTS=1")
	}
	dev := cpu.New(0)
	ch, err := aim.NewLinear(0.1)
	if err != nil {
		t.Fatal(err)
	}
	const alpha, lambda = 0.2, 0.05
	var gap, v [2][2]float64 // [Bayes, ERM][D = 50, 100]
	for k, D := range []int{50, 100} {
		p := aim.Params{D: D, Alpha: alpha, Rho: 1, Channel: channel.Spec{Kind: channel.KindLinear, T: 1, Noise: 0.1}, Teacher: aim.Teacher{PowerLaw: true, Gamma: 1.25}}
		bo, err := se.SolvePrior(ch, p.Prior(), alpha, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		ep, err := Solve(Problem{Alpha: alpha, Noise: 0.1, Lambda: lambda, Prior: p.Prior()}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		var eb, ee []float64
		for seed := uint64(1); seed <= 4; seed++ {
			p.Seed = seed
			data, err := aim.Generate(dev, p)
			if err != nil {
				t.Fatal(err)
			}
			o := amp.DefaultOptions()
			o.MaxIter, o.Tol = 300, 1e-8
			rb, err := amp.Run(dev, data, o)
			if err != nil {
				t.Fatal(err)
			}
			o.ERM, o.WeightDecay = true, lambda
			re, err := amp.Run(dev, data, o)
			if err != nil {
				t.Fatal(err)
			}
			data.Free(dev)
			eb, ee = append(eb, rb.Error), append(ee, re.Error)
		}
		for j, c := range []struct {
			es   []float64
			want float64
		}{{eb, bo.MMSE}, {ee, ep.TestError}} {
			m, sd := meanSD(c.es)
			gap[j][k], v[j][k] = m-c.want, sd*sd/float64(len(c.es))
			t.Logf("D %d %s: SE %.5f, GAMP %.5f +- %.5f", D, []string{"Bayes", "ERM"}[j], c.want, m, math.Sqrt(v[j][k]))
		}
	}
	for j, name := range []string{"Bayes", "ERM"} {
		ext, sem := 2*gap[j][1]-gap[j][0], math.Sqrt(4*v[j][1]+v[j][0])
		t.Logf("%s: gaps %.5f, %.5f; extrapolation %.5f +- %.5f", name, gap[j][0], gap[j][1], ext, sem)
		if !(math.Abs(gap[j][1]) < math.Abs(gap[j][0])) || math.Abs(ext) > 3*sem {
			t.Errorf("%s: gaps %.5f at D = 50, %.5f at 100, extrapolation %.5f +- %.5f", name, gap[j][0], gap[j][1], ext, sem)
		}
	}
}

// TestMinimalNuclearNorm: the lambda -> 0+ limit and alpha_c against the minimiser at lambda =
// 1e-4 (GAMP-ERM's fixed point, the exact minimiser, TestMinimiserAgreement), noiseless, rho = 0.5,
// D = 40, 3 seeds: above alpha_c = 0.4222 (alpha = 0.46) it recovers S* (measured error 2e-6, of
// order lambda^2; at lambda = 1e-3 1.3e-4); between the Bayes-optimal alpha_PR = 0.375 and alpha_c
// (alpha = 0.38) it does not (0.0235 +- 0.0055, the SE's lambda -> 0+ limit 0.0189; 0.0228 at D =
// 80), nor in the interpolating phase (alpha = 0.3: 0.177, SE 0.161; 0.172 at D = 80). Asserted:
// below 1e-4 above alpha_c, and within 3 standard errors plus 0.01 of the SE below it.
func TestMinimalNuclearNorm(t *testing.T) {
	if testing.Short() {
		t.Skip("about 3 s")
	}
	dev := cpu.New(0)
	for _, alpha := range []float64{0.3, 0.38, 0.46} {
		pt, err := Solve(Problem{Rho: 0.5, Alpha: alpha}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		var es []float64
		for seed := uint64(1); seed <= 3; seed++ {
			data, err := aim.Generate(dev, linear(40, alpha, 0.5, 0, seed))
			if err != nil {
				t.Fatal(err)
			}
			o := amp.DefaultOptions()
			o.ERM, o.WeightDecay, o.MaxIter, o.Tol = true, 1e-4, 3000, 1e-12
			r, err := amp.Run(dev, data, o)
			data.Free(dev)
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, r.Error)
		}
		m, sd := meanSD(es)
		t.Logf("alpha %g: minimiser at lambda = 1e-4 %.6f +- %.6f, SE (lambda -> 0+) %.6f", alpha, m, sd, pt.TestError)
		switch {
		case pt.TestError == 0 && !(m < 1e-4):
			t.Errorf("alpha %g above alpha_c: error %g, want perfect recovery", alpha, m)
		case pt.TestError > 0 && !(math.Abs(m-pt.TestError) < 3*sd/math.Sqrt(3)+0.01):
			t.Errorf("alpha %g: error %.6f +- %.6f, SE %.6f", alpha, m, sd, pt.TestError)
		}
	}
}

// TestSoftmaxMinimiserAgreement: on the softmax channel (T = 2, beta = 1; the loss
// sum (y-hat - y)^2 / D is not convex in S) GAMP-ERM, whose channel step is the per-sample
// proximal map on the host, and gradient descent on W with weight decay lambda (Adam, lr 0.05,
// 3000 steps, R = D) reach the same S-hat from the same data (D = 30): measured within 1.3e-7 of
// the error below alpha_c = 0.2111 and 4e-9 above it (tolerance 1e-6).
func TestSoftmaxMinimiserAgreement(t *testing.T) {
	if testing.Short() {
		t.Skip("about 2 s, 20 s under the race detector")
	}
	dev := cpu.New(0)
	const D = 30
	for _, alpha := range []float64{0.1, 0.25} {
		p := aim.Params{D: D, Alpha: alpha, Rho: 0.5, Seed: 1, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}}
		data, err := aim.Generate(dev, p)
		if err != nil {
			t.Fatal(err)
		}
		o := amp.DefaultOptions()
		o.ERM, o.WeightDecay, o.MaxIter, o.Tol = true, 0.01, 500, 1e-12
		ra, err := amp.Run(dev, data, o)
		if err != nil || !ra.Converged {
			t.Fatalf("GAMP-ERM: %v (converged %v)", err, ra.Converged)
		}
		g := gd.DefaultOptions()
		g.WeightDecay, g.R, g.Steps, g.LR = 0.01, D, 3000, 0.05
		rg, err := gd.Run(dev, data, g)
		if err != nil {
			t.Fatal(err)
		}
		data.Free(dev)
		t.Logf("alpha %g: GAMP-ERM %.10f (%d iterations), GD %.10f (%+.1e)", alpha, ra.Error, ra.Iterations, rg.Error, rg.Error-ra.Error)
		if math.Abs(rg.Error-ra.Error) > 1e-6 {
			t.Errorf("alpha %g: GAMP-ERM %.10f, GD %.10f", alpha, ra.Error, rg.Error)
		}
	}
}

// TestSoftmaxGAMPAgainstStateEvolution: GAMP-ERM on the softmax channel (T = 2, lambda = 0.01)
// at D = 50 over 6 seeds against the Monte Carlo state evolution, above alpha_c (alpha = 0.25,
// where the seeds spread least): the mean lies within three combined standard errors of the
// theory. Measured: 0.13254 +- 0.0050 against 0.12204 +- 0.0015, a gap of +0.0105 (two combined
// standard errors; the finite-size excess of D = 50: at D = 100 and 200 the gaps are -0.0004 and
// +0.0003, docs/validation/erm.md).
func TestSoftmaxGAMPAgainstStateEvolution(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s")
	}
	dev := cpu.New(0)
	const D, alpha, lambda = 50, 0.25, 0.01
	theory, err := Solve(Problem{Rho: 0.5, Alpha: alpha, Lambda: lambda, T: 2, Beta: 1}, se.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var es []float64
	for seed := uint64(1); seed <= 6; seed++ {
		data, err := aim.Generate(dev, aim.Params{D: D, Alpha: alpha, Rho: 0.5, Seed: seed, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}})
		if err != nil {
			t.Fatal(err)
		}
		o := amp.DefaultOptions()
		o.ERM, o.WeightDecay, o.MaxIter, o.Tol = true, lambda, 500, 1e-10
		r, err := amp.Run(dev, data, o)
		data.Free(dev)
		if err != nil || !r.Converged {
			t.Fatalf("seed %d: %v (converged %v)", seed, err, r.Converged)
		}
		es = append(es, r.Error)
	}
	m, sd := meanSD(es)
	sem := sd / math.Sqrt(float64(len(es)))
	tol := 3 * math.Hypot(sem, theory.TestErr)
	t.Logf("D = %d, alpha = %g: GAMP-ERM %.5f +- %.5f, state evolution %.5f +- %.5f (gap %+.5f, tolerance %.5f)", D, alpha, m, sem, theory.TestError, theory.TestErr, m-theory.TestError, tol)
	if math.Abs(m-theory.TestError) > tol {
		t.Errorf("GAMP-ERM %.5f +- %.5f, state evolution %.5f +- %.5f", m, sem, theory.TestError, theory.TestErr)
	}
}

// TestSoftmaxLearnedSpectrum: the eigenvalues of GAMP-ERM's S-hat on the softmax channel (T = 2,
// lambda = 0.01, alpha = 0.1 and 0.25, one seed) against the predicted spectrum
// (Point.Spectrum: S-hat = kappa r(Y)): the Kolmogorov distance between the empirical and the
// predicted CDFs falls as D grows from 50 to 200 (AIM_LONG_TESTS=1; measured in
// docs/validation/erm.md).
func TestSoftmaxLearnedSpectrum(t *testing.T) {
	if testing.Short() || os.Getenv("AIM_LONG_TESTS") != "1" {
		t.Skip("6 GAMP-ERM runs up to D = 200, about a minute: set AIM_LONG_TESTS=1")
	}
	dev := cpu.New(0)
	for _, alpha := range []float64{0.1, 0.25} {
		pt, err := Solve(Problem{Rho: 0.5, Alpha: alpha, Lambda: 0.01, T: 2, Beta: 1}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		sp, err := pt.Spectrum()
		if err != nil {
			t.Fatal(err)
		}
		var ks []float64
		for _, D := range []int{50, 100, 200} {
			data, err := aim.Generate(dev, aim.Params{D: D, Alpha: alpha, Rho: 0.5, Seed: 1, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}})
			if err != nil {
				t.Fatal(err)
			}
			o := amp.DefaultOptions()
			o.ERM, o.WeightDecay, o.MaxIter, o.Tol, o.Spectrum = true, 0.01, 500, 1e-10, true
			r, err := amp.Run(dev, data, o)
			data.Free(dev)
			if err != nil || !r.Converged || len(r.Eigenvalues) != D {
				t.Fatalf("D %d: %v (converged %v, %d eigenvalues)", D, err, r.Converged, len(r.Eigenvalues))
			}
			ks = append(ks, ksDistance(r.Eigenvalues, sp))
		}
		t.Logf("alpha %g: Kolmogorov distance %.4f, %.4f, %.4f at D = 50, 100, 200 (atom %.3f, kappa %.3f)", alpha, ks[0], ks[1], ks[2], sp.Atom, sp.Scale)
		if !(ks[2] < ks[0] && ks[2] < 0.03) {
			t.Errorf("alpha %g: Kolmogorov distance %.4f at D = 50, %.4f at D = 200", alpha, ks[0], ks[2])
		}
	}
}
