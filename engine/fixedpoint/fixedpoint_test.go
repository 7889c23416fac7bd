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

// TestNoise: a map with roughness at its noise level, G(x) = x* + s (x - x*) + a sin(1e5 x_i
// + i), never settles to Tol, and with Options.Noise (standard error sigma = a) it stops as
// soon as the iterates jitter within NoiseFactor sigma of G: there |G(x) - x| <= NoiseFactor
// sigma, so |x - x*| <= (NoiseFactor sigma + a) / (1 - s). A smooth but slow map whose
// residual is far below the reported noise is not stopped by it: its steps do not reverse, and
// it meets Tol.
func TestNoise(t *testing.T) {
	xs := []float64{0.3, 0.7}
	const a = 1e-3
	for _, s := range [][]float64{{0.5, -0.3}, {0.9, 0.95}} {
		rough := func(dst, x []float64) error {
			for i := range x {
				dst[i] = xs[i] + s[i]*(x[i]-xs[i]) + a*math.Sin(1e5*x[i]+float64(i))
			}
			return nil
		}
		o := Options{Damping: 0.4, Tol: 1e-9, MaxIter: 400, Accelerate: true, Lower: 0, Upper: 1}
		if _, err := Solve(rough, []float64{0.05, 0.05}, o); !errors.Is(err, ErrNotConverged) {
			t.Fatalf("slopes %v without Noise: %v, want ErrNotConverged", s, err)
		}
		o.Noise = func(dst []float64) {
			for i := range dst {
				dst[i] = a
			}
		}
		r, err := Solve(rough, []float64{0.05, 0.05}, o)
		if err != nil || !r.Converged || !r.NoiseLimited {
			t.Fatalf("slopes %v with Noise: converged %v, noise-limited %v, %v", s, r.Converged, r.NoiseLimited, err)
		}
		for i := range xs {
			if d, bound := math.Abs(r.X[i]-xs[i]), (NoiseFactor*a+a)/(1-s[i]); d > bound {
				t.Errorf("slopes %v: |x_%d - x*| = %.3g > %.3g", s, i, d, bound)
			}
		}
	}
	slow := linear([]float64{0.4}, []float64{0.999})
	o := Options{Damping: 0.4, Tol: 1e-8, MaxIter: 100000, Lower: 0, Upper: 1, Noise: func(dst []float64) { dst[0] = 1 }}
	r, err := Solve(slow, []float64{0.05}, o)
	if err != nil || r.NoiseLimited || math.Abs(r.X[0]-0.4) > 2*o.Tol {
		t.Errorf("slow smooth map with large Noise: x = %v, noise-limited %v, %v; want 0.4 by Tol", r.X, r.NoiseLimited, err)
	}
}
