package fixedpoint

import (
	"errors"
	"math"
	"testing"
)

// linear returns G(x) = x* + s (x - x*) per coordinate.
func linear(xs, s []float64) Map {
	return func(dst, x []float64) error {
		for i := range x {
			dst[i] = xs[i] + s[i]*(x[i]-xs[i])
		}
		return nil
	}
}

// TestLinear: for linear maps the stopping rule's distance is the true distance up to the
// rounding of the steps, which the slope estimate amplifies by 1/(1 - s) (a few per cent at
// s = 0.99 and Tol = 1e-10): the true distance stays below 2 Tol, with and without
// acceleration, for slopes from -0.5 to 0.999; with acceleration the slow coordinates take far
// fewer evaluations.
func TestLinear(t *testing.T) {
	xs := []float64{0.3, 0.7, 0.1}
	for _, s := range [][]float64{{0.5, 0.2, -0.5}, {0.9, 0.99, 0.5}, {0.999, 0.999, 0.999}} {
		plain := 0
		for _, acc := range []bool{false, true} {
			o := Options{Damping: 0.5, Tol: 1e-10, MaxIter: 200000, Accelerate: acc, Lower: 0, Upper: 1}
			r, err := Solve(linear(xs, s), []float64{1, 1, 1}, o)
			if err != nil {
				t.Fatalf("slopes %v, accelerate %v: %v", s, acc, err)
			}
			for i := range xs {
				if d := math.Abs(r.X[i] - xs[i]); d > 2*o.Tol {
					t.Errorf("slopes %v, accelerate %v: |x_%d - x*| = %.3g > 2 tol", s, acc, i, d)
				}
			}
			if !acc {
				plain = r.Evals
			} else if s[0] >= 0.99 && r.Evals*10 > plain {
				t.Errorf("slopes %v: %d evaluations accelerated, %d plain: want 10x fewer", s, r.Evals, plain)
			}
		}
	}
}

// TestDampingConvention: theta is the weight on the old iterate: with G(x) = 0 from x0 = 1
// the first damped iterate is theta.
func TestDampingConvention(t *testing.T) {
	var seen []float64
	o := Options{Damping: 0.25, Tol: 1e-3, MaxIter: 3, Lower: 0, Upper: 1}
	Solve(func(dst, x []float64) error { seen = append(seen, x[0]); dst[0] = 0; return nil }, []float64{1}, o)
	if len(seen) < 2 || seen[0] != 1 || seen[1] != 0.25 {
		t.Errorf("iterates %v, want 1, 0.25, ...", seen)
	}
}

// TestUnstablePoint: G(x) = x + x (0.6 - x) has an unstable fixed point at 0 and a stable one at
// 0.6; from 0.05 the accelerated solver must reach 0.6, not jump back to 0.
func TestUnstablePoint(t *testing.T) {
	G := func(dst, x []float64) error { dst[0] = x[0] + x[0]*(0.6-x[0]); return nil }
	r, err := Solve(G, []float64{0.05}, Options{Damping: 0.2, Tol: 1e-9, MaxIter: 10000, Accelerate: true, Lower: 0, Upper: 1})
	if err != nil || math.Abs(r.X[0]-0.6) > 1e-8 {
		t.Errorf("got %v (%v), want 0.6", r.X, err)
	}
}

func TestFrozenDivergedNotConverged(t *testing.T) {
	G := func(dst, x []float64) error { dst[0], dst[1] = 0.5, 123; return nil }
	r, err := Solve(G, []float64{0, 0}, Options{Tol: 1e-12, MaxIter: 10, Lower: 0, Upper: 1, Frozen: []bool{false, true}})
	if err != nil || r.X[0] != 0.5 || r.X[1] != 0 {
		t.Errorf("frozen: %v, %v", r.X, err)
	}
	nan := func(dst, x []float64) error { dst[0] = math.NaN(); return nil }
	if _, err := Solve(nan, []float64{0}, Options{Tol: 1e-9, MaxIter: 10, Lower: 0, Upper: 1}); !errors.Is(err, ErrDiverged) {
		t.Errorf("NaN: %v, want ErrDiverged", err)
	}
	slow := linear([]float64{0}, []float64{0.9999})
	r, err = Solve(slow, []float64{1}, Options{Damping: 0.5, Tol: 1e-12, MaxIter: 5, Lower: 0, Upper: 1})
	if !errors.Is(err, ErrNotConverged) || r.Converged || r.Evals != 5 {
		t.Errorf("cap: %+v, %v", r, err)
	}
	if _, err := Solve(slow, []float64{1}, Options{Damping: 1, Tol: 1e-9, MaxIter: 5, Upper: 1}); err == nil {
		t.Error("damping 1 accepted")
	}
}
