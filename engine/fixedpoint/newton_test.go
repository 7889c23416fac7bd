package fixedpoint

import (
	"errors"
	"math"
	"testing"
)

// TestNewtonStep checks Step and StepErr against the 2 x 2 inverse by hand, and a frozen
// coordinate's column left out.
func TestNewtonStep(t *testing.T) {
	J := []float64{0.5, 0.2, 0.1, 0.9}
	nw, err := NewNewton(J, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	// I - J = [[0.5, -0.2], [-0.1, 0.1]], det 0.03, inverse [[0.1, 0.2], [0.1, 0.5]] / 0.03.
	S := [][]float64{{0.1 / 0.03, 0.2 / 0.03}, {0.1 / 0.03, 0.5 / 0.03}}
	x, gx, se := []float64{0.2, 0.4}, []float64{0.25, 0.38}, []float64{0.01, 0.02}
	step, sd := make([]float64, 2), make([]float64, 2)
	nw.Step(step, x, gx)
	nw.StepErr(sd, se)
	for i := range step {
		want := S[i][0]*0.05 + S[i][1]*(-0.02)
		wantSD := math.Hypot(S[i][0]*0.01, S[i][1]*0.02)
		if math.Abs(step[i]-want) > 1e-12 || math.Abs(sd[i]-wantSD) > 1e-12 {
			t.Errorf("coordinate %d: step %g +- %g, want %g +- %g", i, step[i], sd[i], want, wantSD)
		}
	}
	fr, err := NewNewton(J, 2, []bool{false, true})
	if err != nil {
		t.Fatal(err)
	}
	fr.Step(step, x, gx)
	if want := 0.05 / 0.5; math.Abs(step[0]-want) > 1e-12 || step[1] != 0 {
		t.Errorf("frozen second coordinate: step %v, want [%g 0]", step, want)
	}
	if _, err := NewNewton([]float64{1, 0, 0, 0.5}, 2, nil); !errors.Is(err, ErrSingular) {
		t.Errorf("slope 1: %v, want ErrSingular", err)
	}
	if _, err := NewNewton(J, 3, nil); err == nil {
		t.Error("a 2 x 2 Jacobian for 3 coordinates accepted")
	}
}

// TestNewtonLinear: on a coupled linear map G(x) = x* + A (x - x*) with slopes 0.99 and 0.999
// (A triangular, so those are its eigenvalues) one Newton
// step lands on x* (the second evaluation confirms it), where plain damped iteration takes
// thousands of evaluations (Aitken's jumps, exact on a linear map, take 9).
func TestNewtonLinear(t *testing.T) {
	xs := []float64{0.3, 0.7}
	A := []float64{0.99, 0.5, 0, 0.999}
	G := func(dst, x []float64) error {
		for i := range x {
			dst[i] = xs[i]
			for j := range x {
				dst[i] += A[i*2+j] * (x[j] - xs[j])
			}
		}
		return nil
	}
	o := Options{Tol: 1e-10, MaxIter: 100000, Lower: 0, Upper: 1, Damping: 0.5}
	damped, err := Solve(G, []float64{0.5, 0.5}, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Jacobian = func(J, x, gx []float64) error { copy(J, A); return nil }
	r, err := Solve(G, []float64{0.5, 0.5}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Newton: %d evaluations, x = %v; damped: %d", r.Evals, r.X, damped.Evals)
	if r.Evals != 2 || !r.Converged || math.Abs(r.X[0]-xs[0]) > 1e-10 || math.Abs(r.X[1]-xs[1]) > 1e-10 {
		t.Errorf("Newton on a linear map: %+v, want x* in 2 evaluations", r)
	}
	if damped.Evals < 1000 {
		t.Errorf("damped solver took %d evaluations: the test map is not slow", damped.Evals)
	}
}

// TestNewtonQuadratic: on G(x) = x + x (0.6 - x) with a second coordinate coupled to it,
// G_2(x) = 0.5 x_1 + 0.2 x_2, Newton converges quadratically from 0.45 to (0.6, 0.375): each
// distance at most 3 times the square of the one before. From 0 it stays at the unstable
// fixed point 0, as the package comment warns.
func TestNewtonQuadratic(t *testing.T) {
	var seen [][]float64
	G := func(dst, x []float64) error {
		seen = append(seen, append([]float64(nil), x...))
		dst[0] = x[0] + x[0]*(0.6-x[0])
		dst[1] = 0.5*x[0] + 0.2*x[1]
		return nil
	}
	jac := func(J, x, gx []float64) error {
		J[0], J[1], J[2], J[3] = 1+0.6-2*x[0], 0, 0.5, 0.2
		return nil
	}
	o := Options{Tol: 1e-13, MaxIter: 20, Lower: 0, Upper: 1, Jacobian: jac}
	r, err := Solve(G, []float64{0.45, 0}, o)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.X[0]-0.6) > 1e-13 || math.Abs(r.X[1]-0.375) > 1e-13 {
		t.Errorf("fixed point %v, want (0.6, 0.375)", r.X)
	}
	for k := 1; k < len(seen); k++ {
		prev, d := math.Abs(seen[k-1][0]-0.6), math.Abs(seen[k][0]-0.6)
		t.Logf("step %d: |x_1 - 0.6| = %.2e", k, d)
		if d > 4*prev*prev+1e-15 {
			t.Errorf("step %d: distance %g after %g: not quadratic", k, d, prev)
		}
	}
	seen = nil
	r, err = Solve(G, []float64{0, 0}, o)
	if err != nil || r.X[0] != 0 || r.Evals != 1 {
		t.Errorf("from 0: %+v, %v; want to stay at 0 after one evaluation", r, err)
	}
}

// TestNewtonStops checks the fallback to damped iteration (a step past Upper, a residual that
// grows), the cap, a frozen coordinate, NaN and a singular Jacobian.
func TestNewtonStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		G    Map
		J    float64 // a wrong slope: Newton's model fails
		want float64
	}{
		// G = 0.8 with J = 0.9: the step 10 (0.8 - x) leaves [0, 1] from 0.5.
		{"step past Upper", func(dst, x []float64) error { dst[0] = 0.8; return nil }, 0.9, 0.8},
		// G = 0.3 + 0.5 (x - 0.3) with J = 1.9: the step leads away from 0.3 and the residual grows.
		{"residual grows", func(dst, x []float64) error { dst[0] = 0.3 + 0.5*(x[0]-0.3); return nil }, 1.9, 0.3},
	} {
		steps := 0
		jac := func(J, x, gx []float64) error { J[0] = tc.J; steps++; return nil }
		r, err := Solve(tc.G, []float64{0.5}, Options{Damping: 0.5, Tol: 1e-9, MaxIter: 200, Lower: 0, Upper: 1, Jacobian: jac})
		if err != nil || !r.Converged || math.Abs(r.X[0]-tc.want) > 1e-8 || steps > 2 {
			t.Errorf("%s: %+v, %v after %d Jacobians; want the damped iteration to reach %g", tc.name, r, err, steps, tc.want)
		}
	}
	zero := func(J, x, gx []float64) error { J[0] = 0; return nil }
	slow := func(dst, x []float64) error { dst[0] = 0.3 + 0.999*(x[0]-0.3) + 1e-3*math.Sin(1e4*x[0]); return nil }
	r, err := Solve(slow, []float64{0.5}, Options{Tol: 1e-12, MaxIter: 1, Lower: 0, Upper: 1, Jacobian: zero})
	if !errors.Is(err, ErrNotConverged) || r.Evals != 1 {
		t.Errorf("cap of 1: %+v, %v; want ErrNotConverged after 1", r, err)
	}
	frozen := func(dst, x []float64) error { dst[0], dst[1] = 0.5, 123; return nil }
	jac2 := func(J, x, gx []float64) error { J[0], J[1], J[2], J[3] = 0, 5, 0, 0; return nil }
	r, err = Solve(frozen, []float64{0, 0.25}, Options{Tol: 1e-9, MaxIter: 5, Lower: 0, Upper: 1, Frozen: []bool{false, true}, Jacobian: jac2})
	if err != nil || r.X[0] != 0.5 || r.X[1] != 0.25 {
		t.Errorf("frozen: %+v, %v", r, err)
	}
	nan := func(dst, x []float64) error { dst[0] = math.NaN(); return nil }
	if _, err := Solve(nan, []float64{0}, Options{Tol: 1e-9, MaxIter: 10, Upper: 1, Jacobian: zero}); !errors.Is(err, ErrDiverged) {
		t.Errorf("NaN: %v, want ErrDiverged", err)
	}
	one := func(J, x, gx []float64) error { J[0] = 1; return nil }
	out := func(dst, x []float64) error { dst[0] = 0.5; return nil }
	if _, err := Solve(out, []float64{0}, Options{Tol: 1e-9, MaxIter: 10, Upper: 1, Jacobian: one}); !errors.Is(err, ErrSingular) {
		t.Errorf("slope 1: %v, want ErrSingular", err)
	}
}

// TestNewtonNoise: on the rough map of TestNoise, G(x) = x* + s (x - x*) + a sin(1e5 x_i + i),
// with J = diag(s) (the smooth part's) and the standard error a, Newton stops by the noise rule
// once its step is within NoiseFactor of the step's error a/(1 - s). Then x - x* = step minus
// the roughness over 1 - s, so |x - x*| <= (NoiseFactor a + a)/(1 - s), TestNoise's bound.
func TestNewtonNoise(t *testing.T) {
	xs := []float64{0.3, 0.7}
	const a = 1e-3
	s := []float64{0.9, 0.95}
	rough := func(dst, x []float64) error {
		for i := range x {
			dst[i] = xs[i] + s[i]*(x[i]-xs[i]) + a*math.Sin(1e5*x[i]+float64(i))
		}
		return nil
	}
	o := Options{Tol: 1e-9, MaxIter: 50, Lower: 0, Upper: 1,
		Jacobian: func(J, x, gx []float64) error { J[0], J[1], J[2], J[3] = s[0], 0, 0, s[1]; return nil }}
	if _, err := Solve(rough, []float64{0.05, 0.05}, o); !errors.Is(err, ErrNotConverged) {
		t.Fatalf("without Noise: %v, want ErrNotConverged", err)
	}
	o.Noise = func(dst []float64) {
		for i := range dst {
			dst[i] = a
		}
	}
	r, err := Solve(rough, []float64{0.05, 0.05}, o)
	if err != nil || !r.Converged || !r.NoiseLimited {
		t.Fatalf("with Noise: %+v, %v", r, err)
	}
	t.Logf("noise-limited after %d evaluations at %v", r.Evals, r.X)
	for i := range xs {
		if d, bound := math.Abs(r.X[i]-xs[i]), (NoiseFactor*a+a)/(1-s[i]); d > bound {
			t.Errorf("|x_%d - x*| = %.3g > %.3g", i, d, bound)
		}
	}
}
