package se

import (
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
)

// The invariants of the SMI state evolution (deep tied attention, M = 2, c = 1, beta = 1) at
// L = 2, 3, 4 on grids of alpha; the measured margins are in docs/validation/se-invariants.md.
//
//   - every overlap Q_ll lies in [0, 1] (Q0 = E w*^2 = 1), so the estimation error 1 - Q_ll
//     does too, and the Bayes-optimal generalisation error e_BO lies in [0, e_BO(Q = 0)];
//   - the overlaps do not decrease, and e_BO does not increase, with alpha beyond 3 times the
//     stated standard errors of the two points (Point.QErr, GenErrorBO's stderr) plus the
//     solver's tolerance;
//   - below the last layer's weak-recovery threshold 1/F_L(0) (Stability) every overlap is 0,
//     and above it the last layer's is not;
//   - dPhi/dalpha along the fixed points equals psi_out (TestSMIEnvelope checks L = 2 at
//     alpha = 0.4 and 1; here L = 2 at another alpha and L = 3 with the sampled integrals);
//   - the stated error is honest: a solve at 10 times the samples (and 4 times the draws per
//     integral at L >= 3) with another seed lies within 3 combined standard errors.

// invSMICase is one depth of the invariant tests: its SE options and grid.
type invSMICase struct {
	L      int
	alphas []float64
	o      Options
	long   bool // only with AIM_LONG_TESTS=1
}

// invSMIOptions are small SE options for the invariant grids: samples draws in 4 replicates,
// a tolerance of 1e-4, and at L >= 3 draws importance-sampling draws per integral. Without
// AIM_LONG_TESTS the L = 2 cubature runs at a loose tolerance (3e-2, as the Monte Carlo error
// tests do): every point of a check shares it, so the checks see the same map.
func invSMIOptions(L, samples, draws int, seed uint64) Options {
	o := DefaultOptions(L)
	o.Samples, o.Replicates, o.Tol, o.Seed = samples, 4, 1e-4, seed
	if L >= 3 {
		o.Draws = draws
	}
	if !invLong() {
		o.QuadTol = 3e-2
	}
	return o
}

func invSMICases() []invSMICase {
	return []invSMICase{
		{L: 2, alphas: invSMIAlphas2(), o: invSMIOptions(2, invSMISamples2(), 0, 1)},
		{L: 3, alphas: []float64{0.05, 0.3, 0.6, 1, 1.5, 2}, o: invSMIOptions(3, 200, 400, 1), long: true},
		{L: 4, alphas: []float64{0.05, 0.3, 0.6, 1, 1.5, 2}, o: invSMIOptions(4, 200, 400, 1), long: true},
	}
}

// invSMIAlphas2 and invSMISamples2 are the L = 2 grid and samples: 4 points of 64 samples
// always, 6 of 200 with AIM_LONG_TESTS=1.
func invSMIAlphas2() []float64 {
	if invLong() {
		return []float64{0.05, 0.2, 0.4, 0.8, 1.4, 2}
	}
	return []float64{0.05, 0.4, 1, 2}
}

func invSMISamples2() int {
	if invLong() {
		return 200
	}
	return 64
}

func invLong() bool { return os.Getenv("AIM_LONG_TESTS") == "1" }

// TestInvariantSMICurve: along each depth's grid (the SE solved point by point on common
// draws), every Q_ll in [0, 1], QErr finite; Q_ll(alpha_{i+1}) >= Q_ll(alpha_i) - 3 (QErr_i +
// QErr_{i+1}) - 2 Tol; e_BO (2000 outer samples) in [0, e_BO(0) + 3 se] and non-increasing
// within 3 (se_i + se_{i+1}). L = 2 always (about 3 s), L = 3 and 4 with AIM_LONG_TESTS=1.
func TestInvariantSMICurve(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("SE solves: skipped in -short mode and under -race")
	}
	for _, c := range invSMICases() {
		t.Run(fmt.Sprintf("L=%d", c.L), func(t *testing.T) {
			if c.long && !invLong() {
				t.Skip("L >= 3 SE curve: set AIM_LONG_TESTS=1")
			}
			ch := deep(t, c.L, 1)
			gen := GenErrorOptions{Samples: 1000, Inner: 8, Seed: 5}
			e0, se0, err := GenErrorBO(ch, make([]float64, c.L), gen)
			if err != nil {
				t.Fatal(err)
			}
			var prev *Point
			var prevE, prevSE float64
			worstQ, worstE := math.Inf(-1), math.Inf(-1)
			for _, a := range c.alphas {
				p, err := Solve(ch, a, c.o)
				if err != nil || !p.Converged {
					t.Fatalf("alpha %g: %+v, %v", a, p, err)
				}
				e, se, err := GenErrorBO(ch, p.Q, gen)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("alpha %g: Q = %.4f +- %.4f, e_BO = %.4f +- %.4f (%d iterations)", a, p.Q, p.QErr, e, se, p.Iterations)
				for l, q := range p.Q {
					if !(q >= 0 && q <= 1) || math.IsNaN(p.QErr[l]) {
						t.Errorf("alpha %g: Q_%d = %g +- %g: want 0 <= Q <= 1 and a finite error", a, l+1, q, p.QErr[l])
					}
				}
				if !(e >= 0 && e <= e0+3*math.Hypot(se, se0)) {
					t.Errorf("alpha %g: e_BO = %.5f +- %.2g outside [0, e_BO(0) = %.5f +- %.2g]", a, e, se, e0, se0)
				}
				if prev != nil {
					for l := range p.Q {
						drop := prev.Q[l] - p.Q[l]
						tol := 3*(prev.QErr[l]+p.QErr[l]) + 2*c.o.Tol
						worstQ = math.Max(worstQ, drop/tol)
						if drop > tol {
							t.Errorf("Q_%d falls from %.5f +- %.2g (alpha %g) to %.5f +- %.2g (alpha %g)", l+1, prev.Q[l], prev.QErr[l], prev.Alpha, p.Q[l], p.QErr[l], a)
						}
					}
					rise, tol := e-prevE, 3*(se+prevSE)
					worstE = math.Max(worstE, rise/tol)
					if rise > tol {
						t.Errorf("e_BO rises from %.5f +- %.2g (alpha %g) to %.5f +- %.2g (alpha %g)", prevE, prevSE, prev.Alpha, e, se, a)
					}
				}
				prev, prevE, prevSE = &p, e, se
			}
			t.Logf("e_BO(0) = %.4f +- %.4f; largest fall of a Q_ll / its tolerance %.2f, largest rise of e_BO / its tolerance %.2f", e0, se0, worstQ, worstE)
		})
	}
}

// TestInvariantSMIThreshold: the last layer's weak-recovery threshold alpha_c = 1/F_L(0)
// (Stability at Q = 0, its 1000-draw estimate): at 0.5 alpha_c every overlap of the SE is 0
// (below 1e-3: the unsampled L = 2 map decays to 0 geometrically; with the sampled integrals,
// at the floor and reported as 0), and at 3 alpha_c the last layer's is above 0.05.
func TestInvariantSMIThreshold(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("SE solves: skipped in -short mode and under -race")
	}
	for _, c := range invSMICases() {
		t.Run(fmt.Sprintf("L=%d", c.L), func(t *testing.T) {
			if c.long && !invLong() {
				t.Skip("L >= 3: set AIM_LONG_TESTS=1")
			}
			ch := deep(t, c.L, 1)
			so := c.o
			so.Samples = 256
			F, err := Stability(ch, make([]float64, c.L), so)
			if err != nil {
				t.Fatal(err)
			}
			ac := 1 / F[c.L-1]
			below, err := Solve(ch, 0.5*ac, c.o)
			if err != nil || !below.Converged {
				t.Fatalf("alpha %g: %+v, %v", 0.5*ac, below, err)
			}
			for l, q := range below.Q {
				if q > 1e-3 {
					t.Errorf("alpha = 0.5 alpha_c = %.4f: Q_%d = %.4g, want 0", 0.5*ac, l+1, q)
				}
			}
			above, err := Solve(ch, 3*ac, c.o)
			if err != nil || !above.Converged {
				t.Fatalf("alpha %g: %+v, %v", 2*ac, above, err)
			}
			if q := above.Q[c.L-1]; !(q > 0.05) {
				t.Errorf("alpha = 3 alpha_c = %.4f: Q_%d = %.4g, want > 0.05", 3*ac, c.L, q)
			}
			t.Logf("F(0) = %.4f: alpha_c = %.4f; Q at 0.5 alpha_c %.3g, at 3 alpha_c %.4f +- %.4f", F, ac, below.Q, above.Q, above.QErr)
		})
	}
}

// TestInvariantSMIEnvelope: dPhi/dalpha (centred difference over alpha +- h, every solve on the
// same draws) equals the Simpson average of psi_out over the interval within 3 of psi_out's
// standard errors, where no overlap is near 1 (there the identity holds only as the draws grow,
// TestSMIEnvelope): L = 2 at alpha = 0.5 (the last layer half learned) always, L = 3 at
// alpha = 0.5 (sampled integrals) with AIM_LONG_TESTS=1.
func TestInvariantSMIEnvelope(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("SE solves: skipped in -short mode and under -race")
	}
	cases := []struct {
		L           int
		alpha, h    float64
		samples     int
		draws, reps int
		long        bool
	}{
		{2, 0.5, 0.03, 64, 0, 4, false},
		{3, 0.5, 0.05, 400, 1000, 4, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("L=%d/alpha=%g", c.L, c.alpha), func(t *testing.T) {
			if c.long && !invLong() {
				t.Skip("L = 3: set AIM_LONG_TESTS=1")
			}
			o := invSMIOptions(c.L, c.samples, c.draws, 1)
			o.Tol = 1e-6
			fd, simpson, mid := envelopeAt(t, c.L, c.alpha, c.h, o)
			d := math.Abs(fd - simpson)
			t.Logf("Q %.4f: dPhi/dalpha %.5f, psi_out (Simpson) %.5f +- %.4f: %.1f errors", mid.Q, fd, simpson, mid.PsiOutErr, d/mid.PsiOutErr)
			if d > 3*mid.PsiOutErr {
				t.Errorf("dPhi/dalpha %.5f, psi_out %.5f: beyond 3 x %.4f", fd, simpson, mid.PsiOutErr)
			}
		})
	}
}

// TestInvariantSMIStatedError: the fixed point at n samples (seed 1; at L >= 3 with d draws per
// integral) against the reference at 10 n samples (seed 2; 4 d draws): |Q_ll - Q_ref,ll| <= 3
// hypot(QErr, QErr_ref) for every layer; and e_BO at 2000 outer samples (seed 5) against 20 000
// (seed 6) within 3 combined standard errors. L = 2 at alpha = 0.5 (n = 200) always; L = 3 and
// 4 with AIM_LONG_TESTS=1.
func TestInvariantSMIStatedError(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("SE solves: skipped in -short mode and under -race")
	}
	cases := []struct {
		L, n, draws int
		alpha       float64
		long        bool
	}{
		{2, 64, 0, 0.5, false},
		{2, 200, 0, 1.4, true},
		{3, 200, 400, 0.6, true},
		{3, 200, 400, 1.5, true},
		{4, 200, 400, 0.6, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("L=%d/alpha=%g", c.L, c.alpha), func(t *testing.T) {
			if c.long && !invLong() {
				t.Skip("set AIM_LONG_TESTS=1")
			}
			ch := deep(t, c.L, 1)
			p, err := Solve(ch, c.alpha, invSMIOptions(c.L, c.n, c.draws, 1))
			if err != nil || !p.Converged {
				t.Fatalf("%+v, %v", p, err)
			}
			ref, err := Solve(ch, c.alpha, invSMIOptions(c.L, 10*c.n, 4*c.draws, 2))
			if err != nil || !ref.Converged {
				t.Fatalf("reference: %+v, %v", ref, err)
			}
			worst := 0.0
			for l := range p.Q {
				e := math.Hypot(p.QErr[l], ref.QErr[l])
				d := math.Abs(p.Q[l] - ref.Q[l])
				if e > 0 {
					worst = math.Max(worst, d/e)
				}
				if d > 3*e+1e-9 {
					t.Errorf("Q_%d = %.5f +- %.2g, reference %.5f +- %.2g: %.1f combined errors", l+1, p.Q[l], p.QErr[l], ref.Q[l], ref.QErr[l], d/e)
				}
			}
			t.Logf("Q = %.4f +- %.4f (%d samples), reference %.4f +- %.4f (%d): at most %.1f combined errors", p.Q, p.QErr, p.Samples, ref.Q, ref.QErr, ref.Samples, worst)
			e1, s1, err := GenErrorBO(ch, p.Q, GenErrorOptions{Samples: 2000, Inner: 8, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			e2, s2, err := GenErrorBO(ch, p.Q, GenErrorOptions{Samples: 20000, Inner: 8, Seed: 6})
			if err != nil {
				t.Fatal(err)
			}
			z := (e1 - e2) / math.Hypot(s1, s2)
			t.Logf("e_BO at Q: %.5f +- %.2g (2000), %.5f +- %.2g (20000): %+.1f errors", e1, s1, e2, s2, z)
			if math.Abs(z) > 3 {
				t.Errorf("e_BO %.5f +- %.2g against %.5f +- %.2g: %.1f combined errors", e1, s1, e2, s2, z)
			}
		})
	}
}

// TestInvariantSMIUndeterminedFloor: at L = 3 a layer that ends at the sampled floor is reported
// as Q_ll = 0 only where its slope there is below 1 by StabilityMargin standard errors; else it
// is listed in Undetermined with QErr = +Inf. At alpha = 1.5 and 800 samples the solve from the
// uninformed start ends with layers 1 and 2 at the floor, but the reference at 20 000 samples
// (docs/validation/smi-se.md) has them at 0.66 and 0.57: those layers must be flagged. At alpha = 0.3 (below every
// conditional threshold) the same draws settle the trivial point: slope and error are
// consistent with 0 being stable, and nothing is flagged. The slope is checked against its
// definition, G_l(floor)/floor from the map at the point (Fisher).
func TestInvariantSMIUndeterminedFloor(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("SE solves: skipped in -short mode and under -race")
	}
	ch := deep(t, 3, 1)
	for _, c := range []struct {
		alpha   float64
		flagged []int
	}{
		{1.5, []int{0, 1}},
		{0.3, nil},
	} {
		t.Run(fmt.Sprintf("alpha=%g", c.alpha), func(t *testing.T) {
			o := invSMIOptions(3, 800, 400, 1)
			p, err := Solve(ch, c.alpha, o)
			if err != nil || !p.Converged {
				t.Fatalf("%+v, %v", p, err)
			}
			var got []int
			for _, u := range p.Undetermined {
				got = append(got, u.Layer)
				if !math.IsInf(p.QErr[u.Layer], 1) || p.Q[u.Layer] != 0 {
					t.Errorf("layer %d undetermined with Q %g +- %g: want 0 +- Inf", u.Layer+1, p.Q[u.Layer], p.QErr[u.Layer])
				}
				if !(u.Slope+StabilityMargin*u.SlopeErr >= 1) {
					t.Errorf("layer %d flagged with slope %g +- %g", u.Layer+1, u.Slope, u.SlopeErr)
				}
			}
			t.Logf("Q %.4f +- %.3g, undetermined %+v", p.Q, p.QErr, p.Undetermined)
			if p.Q[0] != 0 || p.Q[1] != 0 {
				t.Errorf("Q %v: layers 1 and 2 should end at the floor with these draws", p.Q)
			}
			if !slices.Equal(got, c.flagged) {
				t.Errorf("undetermined layers %v, want %v", got, c.flagged)
			}
			// The slope from its definition, at the floor point the solve ended on.
			at := slices.Clone(p.Q)
			for l := range at {
				if at[l] == 0 {
					at[l] = SampledFloor
				}
			}
			F, _, err := Fisher(ch, at, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range p.Undetermined {
				qh := math.Max(c.alpha*F[u.Layer], 0)
				if s := qh / (1 + qh) / SampledFloor; math.Abs(s-u.Slope) > 1e-9 {
					t.Errorf("layer %d: slope %g, from the map %g", u.Layer+1, u.Slope, s)
				}
			}
		})
	}
}
