package erm

import (
	"encoding/csv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/se"
	"github.com/aimtheory/aim/engine/rie"
)

// TestPriorSideMonteCarlo checks the spectral integrals of the prior side against one finite
// matrix: S* = W W^T / sqrt(R D) (W Gaussian, D = 800), Y = S* + sqrt(Delta) Z with Z GOE,
// S-hat = O max(y - tau, 0) O^T, and the test error ||S-hat - S*||_F^2 / D, Tr S-hat / D, the
// rank fraction, and I = (1/D^2) sum_{i != j} (r_i - r_j)/(y_i - y_j), the divergence of the
// spectral map, computed from the eigendecomposition as the double sum it is. (q and m alone
// move with the sample's Tr S*^2 / D, by up to 1e-2 at D = 800; their combination E does not.)
// At D = 800 the error's distance was at most 1.1e-3 (6e-4 over three other seeds) and the others' 3.6e-3; the
// tolerances are 3e-3 and 0.01.
func TestPriorSideMonteCarlo(t *testing.T) {
	if testing.Short() {
		t.Skip("an 800 x 800 eigendecomposition per case, about 2 s")
	}
	const D = 800
	for _, c := range []struct{ rho, delta, tau float64 }{
		{0.5, 0.3, 0.2},  // one bulk, threshold inside it
		{0.5, 0.02, 0.1}, // two bulks, threshold inside the small one
		{1.5, 0.5, 0.0},  // full rank, no threshold
	} {
		rng := rand.New(rand.NewPCG(1, uint64(c.delta*1e6)))
		R := int(c.rho * D)
		w := mat.NewDense(D, R, nil)
		for i := 0; i < D; i++ {
			for j := 0; j < R; j++ {
				w.Set(i, j, rng.NormFloat64())
			}
		}
		sStar := mat.NewSymDense(D, nil)
		sStar.SymOuterK(1/math.Sqrt(float64(R*D)), w)
		y := mat.NewSymDense(D, nil)
		sd := math.Sqrt(c.delta / float64(D))
		for i := 0; i < D; i++ {
			for j := i; j < D; j++ {
				z := rng.NormFloat64() * sd
				if i == j {
					z *= math.Sqrt2
				}
				y.SetSym(i, j, sStar.At(i, j)+z)
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(y, true) {
			t.Fatal("EigenSym failed")
		}
		vals := eig.Values(nil)
		var vecs mat.Dense
		eig.VectorsTo(&vecs)
		r := make([]float64, D)
		var q, m, tr, rank, q0 float64
		var su mat.VecDense
		for k, v := range vals {
			r[k] = math.Max(v-c.tau, 0)
			q += r[k] * r[k]
			tr += r[k]
			if r[k] > 0 {
				rank++
				u := vecs.ColView(k)
				su.MulVec(sStar, u)
				m += r[k] * mat.Dot(u, &su)
			}
		}
		for i := 0; i < D; i++ {
			for j := 0; j < D; j++ {
				q0 += sStar.At(i, j) * sStar.At(i, j)
			}
		}
		iSum := 0.0
		for i := 0; i < D; i++ {
			for j := 0; j < D; j++ {
				if i != j && vals[i] != vals[j] {
					iSum += (r[i] - r[j]) / (vals[i] - vals[j])
				}
			}
		}
		mc := [4]float64{(q0 - 2*m + q) / D, iSum / D / D, tr / D, rank / D}
		sp, err := rie.New(c.rho, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		i, qq, mm, tt, rk, _ := integrals(sp, c.tau)
		th := [4]float64{1 + c.rho - 2*mm + qq, i, tt, rk}
		for k, name := range []string{"E", "I", "Tr S-hat/D", "rank"} {
			t.Logf("rho %g Delta %g tau %g: %s theory %.5f, D = %d %.5f (%+.1e)", c.rho, c.delta, c.tau, name, th[k], D, mc[k], mc[k]-th[k])
			tol := 0.01
			if k == 0 {
				tol = 3e-3
			}
			if math.Abs(mc[k]-th[k]) > tol {
				t.Errorf("rho %g Delta %g tau %g: %s = %.5f in theory, %.5f at D = %d", c.rho, c.delta, c.tau, name, th[k], mc[k], D)
			}
		}
	}
}

// TestLargeLambdaZeroEstimator: once lambda/2 >= 2 alpha times the top edge of the spectrum at
// E = Q0, the threshold lies above the whole spectrum and S-hat = 0 exactly: E = Q0 = 1 + rho,
// the training error is the labels' variance 2 Q0 + Delta, and the rank is 0.
func TestLargeLambdaZeroEstimator(t *testing.T) {
	for _, c := range []struct{ rho, alpha, noise float64 }{{0.5, 0.3, 0.25}, {1, 0.1, 0}, {0.25, 1, 1}} {
		Q0 := 1 + c.rho
		sp, _ := rie.New(c.rho, (Q0+c.noise/2)/(2*c.alpha))
		e := sp.Edges()
		lambda := 4*c.alpha*e[len(e)-1] + 1
		p, err := Solve(Problem{Rho: c.rho, Alpha: c.alpha, Noise: c.noise, Lambda: lambda}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.TestError-Q0) > 1e-12 || math.Abs(p.TrainError-(2*Q0+c.noise)) > 1e-12 || p.Rank != 0 || p.TrS != 0 {
			t.Errorf("%+v lambda %g: E %g (want %g), train %g (want %g), rank %g, Tr %g", c, lambda, p.TestError, Q0, p.TrainError, 2*Q0+c.noise, p.Rank, p.TrS)
		}
	}
}

// TestInvariants checks over a grid of (rho, Delta, alpha, lambda) what the theory guarantees:
// every point converges with a quadrature error below 1e-9; the Bayes-optimal error is a lower
// bound on the ERM test error; at fixed data the training error rises and the penalised
// Tr S-hat falls as lambda grows (the regularisation path of a convex problem); the rank
// fraction is at most 1 and Tr S-hat >= 0; and the fixed point satisfies tau (2 alpha - I) =
// lambda/2.
func TestInvariants(t *testing.T) {
	lambdas := []float64{0, 0.003, 0.03, 0.3, 3}
	for _, rho := range []float64{0.25, 0.5, 1.5} {
		for _, noise := range []float64{0, 0.25, 1} {
			ch, err := aim.NewLinear(noise)
			if err != nil {
				t.Fatal(err)
			}
			for _, alpha := range []float64{0.05, 0.15, 0.3, 0.45, 0.7, 1.2} {
				bo, err := se.Solve(ch, rho, alpha, se.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				var prev Point
				for k, lambda := range lambdas {
					p, err := Solve(Problem{Rho: rho, Alpha: alpha, Noise: noise, Lambda: lambda}, se.DefaultOptions())
					if err != nil {
						// The lambda -> 0+ limit crawls at the interpolation threshold.
						t.Logf("rho %g Delta %g alpha %g lambda %g: %v", rho, noise, alpha, lambda, err)
						if lambda == 0 {
							continue
						}
						t.Fatal(err)
					}
					at := func(f string, args ...any) {
						t.Errorf("rho %g Delta %g alpha %g lambda %g: "+f, append([]any{rho, noise, alpha, lambda}, args...)...)
					}
					if p.QuadError > 1e-9 {
						at("quadrature error %g", p.QuadError)
					}
					if p.TestError < bo.MMSE-1e-9 {
						at("ERM error %.9f below the Bayes-optimal %.9f", p.TestError, bo.MMSE)
					}
					if p.Rank > 1+1e-12 || p.TrS < 0 {
						at("rank %g, Tr %g", p.Rank, p.TrS)
					}
					if lambda > 0 {
						if res := p.Tau*(2*alpha-p.I) - lambda/2; math.Abs(res) > 1e-9*lambda {
							at("threshold residual %g", res)
						}
					}
					if k > 0 && prev.Converged {
						if p.TrainError < prev.TrainError-1e-9 {
							at("training error %.9f below %.9f at lambda %g", p.TrainError, prev.TrainError, prev.Lambda)
						}
						if p.TrS > prev.TrS+1e-9 {
							at("Tr S-hat/D %.9f above %.9f at lambda %g", p.TrS, prev.TrS, prev.Lambda)
						}
					}
					prev = p
				}
			}
		}
	}
}

// TestLambdaToZero: the lambda = 0 point is the limit lambda -> 0+: at lambda = 1e-7 the test
// error is within 1e-5 of it, in the interpolating phase and out of it.
func TestLambdaToZero(t *testing.T) {
	for _, c := range []struct{ rho, alpha, noise float64 }{{0.5, 0.2, 0}, {0.5, 0.2, 0.25}, {0.5, 0.6, 0.25}, {1.5, 0.3, 0.5}} {
		p0, err := Solve(Problem{Rho: c.rho, Alpha: c.alpha, Noise: c.noise}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		p1, err := Solve(Problem{Rho: c.rho, Alpha: c.alpha, Noise: c.noise, Lambda: 1e-7}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(p1.TestError - p0.TestError); d > 1e-5 || math.Abs(p1.Tau-p0.Tau) > 1e-4 {
			t.Errorf("%+v: E %.8f at lambda 0+, %.8f at 1e-7; tau %.6f, %.6f", c, p0.TestError, p1.TestError, p0.Tau, p1.Tau)
		}
	}
}

// TestThresholds: alpha_c lies between the Bayes-optimal alpha_PR = rho - rho^2/2 and
// (1 + 2 rho - rho^2)/4 and is 1/2 at rho >= 1; the noiseless state evolution gives E = 0 just
// above it and E > 1e-6 a percent below it. The interpolation threshold separates the two phases
// of the solved state evolution (Interpolating on either side at alpha_interp -+ 0.02), grows
// as Delta falls, and tends to (1 + 2 rho - rho^2)/4 as Delta -> 0.
func TestThresholds(t *testing.T) {
	o := se.DefaultOptions()
	for _, rho := range []float64{0.25, 0.5, 0.75} {
		ac, err := PerfectRecovery(rho)
		if err != nil {
			t.Fatal(err)
		}
		top := (1 + 2*rho - rho*rho) / 4
		if !(ac > rho-rho*rho/2 && ac <= top) {
			t.Errorf("rho %g: alpha_c = %g outside (%g, %g]", rho, ac, rho-rho*rho/2, top)
		}
		above, err := Solve(Problem{Rho: rho, Alpha: ac * 1.001}, o)
		if err != nil || above.TestError != 0 {
			t.Errorf("rho %g: E = %g at 1.001 alpha_c (%v)", rho, above.TestError, err)
		}
		below, err := Solve(Problem{Rho: rho, Alpha: ac * 0.99}, o)
		if err != nil || !(below.TestError > 1e-6) {
			t.Errorf("rho %g: E = %g at 0.99 alpha_c (%v)", rho, below.TestError, err)
		}
		prev := 0.0
		for _, noise := range []float64{1, 0.25, 0.01, 1e-6} {
			ai, err := Interpolation(rho, noise)
			if err != nil {
				t.Fatal(err)
			}
			if ai <= prev {
				t.Errorf("rho %g: alpha_interp %g at Delta %g not above %g at larger Delta", rho, ai, noise, prev)
			}
			prev = ai
			for _, c := range []struct {
				da     float64
				interp bool
			}{{-0.02, true}, {0.02, false}} {
				p, err := Solve(Problem{Rho: rho, Alpha: ai + c.da, Noise: noise}, o)
				if err != nil {
					t.Fatal(err)
				}
				if p.Interpolating != c.interp {
					t.Errorf("rho %g Delta %g: at alpha_interp %+g Interpolating = %v", rho, noise, c.da, p.Interpolating)
				}
			}
		}
		if math.Abs(prev-top) > 5e-3 {
			t.Errorf("rho %g: alpha_interp(Delta = 1e-6) = %g, want about %g", rho, prev, top)
		}
	}
	for _, rho := range []float64{1, 2} {
		if ac, err := PerfectRecovery(rho); err != nil || ac != 0.5 {
			t.Errorf("rho %g: alpha_c = %g (%v), want 1/2", rho, ac, err)
		}
	}
}

// TestSpectrum: the limiting spectrum of S-hat has total mass 1 (the atom 1 - Rank plus the
// density), mean Tr S-hat / D and second moment q, each against the solved point to 1e-8; its
// CDF is the atom at 0 and 1 at the top edge.
func TestSpectrum(t *testing.T) {
	for _, c := range []Problem{{Rho: 0.5, Alpha: 0.3, Noise: 0.25, Lambda: 0.1}, {Rho: 0.5, Alpha: 0.2}, {Rho: 1.5, Alpha: 0.6, Noise: 0.5, Lambda: 1}} {
		p, err := Solve(c, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.Spectrum()
		if err != nil {
			t.Fatal(err)
		}
		var m0, m1, m2 float64
		e := s.Edges()
		for k := 0; k < len(e); k += 2 {
			v0, _ := s.y.Integrate(func(x, mu, _ float64) float64 { return mu }, e[k]+s.Tau, quadTol)
			v1, _ := s.y.Integrate(func(x, mu, _ float64) float64 { return (x - s.Tau) * mu }, e[k]+s.Tau, quadTol)
			v2, _ := s.y.Integrate(func(x, mu, _ float64) float64 { return (x - s.Tau) * (x - s.Tau) * mu }, e[k]+s.Tau, quadTol)
			m0, m1, m2 = v0, v1, v2 // the integrals run to the top, so the lowest edge's hold all
			break
		}
		// Independently: the density by the trapezoid rule on a fine grid.
		trap := 0.0
		for k := 0; k < len(e); k += 2 {
			n := 20000
			h := (e[k+1] - e[k]) / float64(n)
			for i := 0; i <= n; i++ {
				w := h
				if i == 0 || i == n {
					w = h / 2
				}
				trap += w * s.Density(e[k]+float64(i)*h)
			}
		}
		if math.Abs(s.Atom+m0-1) > 1e-8 || math.Abs(m1-p.TrS) > 1e-8 || math.Abs(m2-p.Q) > 1e-8 {
			t.Errorf("%+v: atom %g + mass %g, mean %g (Tr %g), second moment %g (q %g)", c, s.Atom, m0, m1, p.TrS, m2, p.Q)
		}
		if math.Abs(trap-m0) > 1e-4 {
			t.Errorf("%+v: trapezoid mass %g, quadrature %g", c, trap, m0)
		}
		if math.Abs(s.CDF(0)-s.Atom) > 1e-8 || math.Abs(s.CDF(e[len(e)-1])-1) > 1e-9 {
			t.Errorf("%+v: CDF(0) = %g (atom %g), CDF(top) = %g", c, s.CDF(0), s.Atom, s.CDF(e[len(e)-1]))
		}
	}
}

// TestPerfectRecoverySpectrum: above alpha_c without noise S-hat = S*, so the point reports the
// teacher's q = m = Q0, Tr S/D = sqrt(rho) and rank min(rho, 1), and its spectrum has the atom
// 1 - rho and mass rho above it (to 1e-6).
func TestPerfectRecoverySpectrum(t *testing.T) {
	for _, rho := range []float64{0.5, 1.5} {
		p, err := Solve(Problem{Rho: rho, Alpha: 0.6}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		Q0 := 1 + rho
		if p.TestError != 0 || p.Q != Q0 || p.M != Q0 || p.TrS != math.Sqrt(rho) || p.Rank != math.Min(rho, 1) || !p.Interpolating {
			t.Errorf("rho %g: %+v", rho, p)
		}
		s, err := p.Spectrum()
		if err != nil {
			t.Fatal(err)
		}
		e := s.Edges()
		if math.Abs(s.CDF(0)-math.Max(1-rho, 0)) > 1e-6 || math.Abs(s.CDF(e[len(e)-1])-1) > 1e-9 {
			t.Errorf("rho %g: CDF(0) = %g, CDF(top) = %g", rho, s.CDF(0), s.CDF(e[len(e)-1]))
		}
	}
}

// TestRidgeClosedForms: the ridge state evolution reproduces the classical limits in the
// model's units (u = h/sqrt(2), label noise Delta/2 per sample, p = D^2/2 unknowns, n = alpha D^2
// samples): least squares above alpha = 1/2, E = (Delta/2) p/(n - p) = Delta/(2 (2 alpha - 1))
// with training error Delta (1 - p/n); the minimal-norm interpolator below it, E = Q0 (1 - 2
// alpha) + Delta alpha/(1 - 2 alpha); E -> Q0 as lambda -> inf; and for every lambda the ERM
// error is at least the Bayes-optimal one.
func TestRidgeClosedForms(t *testing.T) {
	const rho, noise = 0.5, 0.3
	Q0 := 1 + rho
	for _, alpha := range []float64{0.6, 1, 3} {
		p, err := Solve(Problem{Rho: rho, Alpha: alpha, Noise: noise, Penalty: Ridge}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if e := noise / (2 * (2*alpha - 1)); math.Abs(p.TestError-e) > 1e-9 || math.Abs(p.TrainError-noise*(1-1/(2*alpha))) > 1e-9 || math.Abs(p.Shrink-1) > 1e-12 {
			t.Errorf("alpha %g: least squares E %g (want %g), train %g (want %g), s %g", alpha, p.TestError, e, p.TrainError, noise*(1-1/(2*alpha)), p.Shrink)
		}
	}
	for _, alpha := range []float64{0.1, 0.3, 0.45} {
		p, err := Solve(Problem{Rho: rho, Alpha: alpha, Noise: noise, Penalty: Ridge}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if e := Q0*(1-2*alpha) + noise*alpha/(1-2*alpha); math.Abs(p.TestError-e) > 1e-9 || p.TrainError != 0 || !p.Interpolating {
			t.Errorf("alpha %g: minimal-norm E %g (want %g), train %g", alpha, p.TestError, e, p.TrainError)
		}
	}
	ch, _ := aim.NewLinear(noise)
	for _, alpha := range []float64{0.1, 0.3, 0.6, 1.5} {
		bo, err := se.Solve(ch, rho, alpha, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, lambda := range []float64{1e-3, 0.01, 0.1, 1, 10} {
			p, err := Solve(Problem{Rho: rho, Alpha: alpha, Noise: noise, Lambda: lambda, Penalty: Ridge}, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if p.TestError < bo.MMSE {
				t.Errorf("alpha %g lambda %g: ridge %g below Bayes-optimal %g", alpha, lambda, p.TestError, bo.MMSE)
			}
		}
	}
	p, _ := Solve(Problem{Rho: rho, Alpha: 0.3, Noise: noise, Lambda: 1e9, Penalty: Ridge}, se.DefaultOptions())
	if math.Abs(p.TestError-Q0) > 1e-6 {
		t.Errorf("lambda = 1e9: E = %g, want Q0 = %g", p.TestError, Q0)
	}
}

// powerLaw returns the D eigenvalues w_k ∝ k^-gamma (k = 1..D) scaled to (1/D) sum w^2 = 1.
func powerLaw(D int, gamma float64) rie.Eigenvalues {
	w := make(rie.Eigenvalues, D)
	norm := 0.0
	for k := range w {
		w[k] = math.Pow(float64(k+1), -gamma)
		norm += w[k] * w[k]
	}
	for k := range w {
		w[k] *= math.Sqrt(float64(D) / norm)
	}
	return w
}

// TestPowerLawAgainstPublished: the state evolution with a power-law teacher (gamma = 1.25,
// D = 400 eigenvalues, Delta = 0.1) against four points of the authors' (testdata/README.md),
// from alpha = 0.05 to 3.3 and lambda = 0.022 to 0.18. Measured: the test error 2.0e-3 to 2.1e-3
// (relative) below theirs at all four, a constant offset of the size of the 1/d effects of their
// sampled 400 x 400 prior side; the rank of S-hat times D (60.3, 174.4, 213.0, 237.7) lies between
// the largest student rank at which their error is constrained and the next (60 and 62, 172 and
// 176, 213 and 218, 233 and 239). Asserted, at the first and the last (2 s each): 3e-3 relative,
// and the rank between those two.
func TestPowerLawAgainstPublished(t *testing.T) {
	if testing.Short() {
		t.Skip("about 9 s")
	}
	fh, err := os.Open(filepath.Join("testdata", "powerlaw_se.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	w := powerLaw(400, 1.25)
	for _, r := range []([]string){rows[1], rows[len(rows)-1]} { // the ends; all four: docs/validation/erm.md
		v := make([]float64, 8)
		for k := range v {
			if v[k], err = strconv.ParseFloat(r[k], 64); err != nil {
				t.Fatal(err)
			}
		}
		n, d, noise, lambda, want, binds, free := v[0], v[1], v[3], v[4], v[5], v[6], v[7]
		p, err := Solve(Problem{Alpha: n / (d * d), Noise: noise, Lambda: lambda, Prior: w}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		rel := p.TestError/want - 1
		t.Logf("alpha %.4f lambda %.4f: E %.8f, published %.8f (%+.2e); rank %.2f, between %g and %g", n/(d*d), lambda, p.TestError, want, rel, p.Rank*d, binds, free)
		if math.Abs(rel) > 3e-3 || !(p.Rank*d > binds && p.Rank*d <= free) {
			t.Errorf("alpha %.4f lambda %.4f: E %.8f against %.8f; rank %.2f, not in (%g, %g]", n/(d*d), lambda, p.TestError, want, p.Rank*d, binds, free)
		}
	}
}
