package fixedpoint

import (
	"math"
	"testing"
)

// TestStepsGeometric feeds Steps the steps of x_t = r^t x_0 (squared norms r^{2t} (1 - r)^2 x_0^2)
// and checks that from the third step on the distance is that of x_t, r^{2t} x_0^2, to
// rounding, for rates from fast to slow.
func TestStepsGeometric(t *testing.T) {
	for _, r := range []float64{0.1, 0.5, 0.9, 0.99} {
		var s Steps
		for it := 0; it < 30; it++ {
			x := math.Pow(r, float64(it))
			step := x * x * (1 - r) * (1 - r)
			dist, rate := s.Add(step)
			if it < 2 {
				if !math.IsInf(dist, 1) {
					t.Errorf("r = %g, step %d: distance %g before two ratios, want +Inf", r, it, dist)
				}
				continue
			}
			if math.Abs(rate-r) > 1e-12 || math.Abs(dist-x*x) > 1e-12*x*x {
				t.Errorf("r = %g, step %d: distance %g, rate %g; want %g, %g", r, it, dist, rate, x*x, r)
			}
		}
	}
}

// TestStepsLinearMap iterates a damped linear contraction x <- (1 - theta) A x + theta x in
// three coordinates with slopes 0.3, 0.8 and 0.95 from a start that excites every mode, and
// measures what the rule promises. Once the slowest mode dominates the steps (from about
// iteration 100 here) the estimate is the true squared distance to within 1%. Before, while
// the faster modes make the steps and the slow one the distance, the step ratio is below the
// slow rate and the estimate is low: by a factor of up to 3.9 (undamped) and 3.7 (theta = 0.5)
// here, which the test bounds at 5. A tolerance is met only once the rate has settled.
func TestStepsLinearMap(t *testing.T) {
	slope := []float64{0.3, 0.8, 0.95}
	for _, theta := range []float64{0, 0.5} {
		x := []float64{1, -2, 0.5} // the fixed point is 0
		var s Steps
		worst := 1.0
		for it := 0; it < 200; it++ {
			var step, true2 float64
			for i, a := range slope {
				nx := (1-theta)*a*x[i] + theta*x[i]
				step += (nx - x[i]) * (nx - x[i])
				true2 += x[i] * x[i] // the distance of the iterate before the step
				x[i] = nx
			}
			dist, _ := s.Add(step)
			if it < 2 {
				continue
			}
			worst = math.Min(worst, dist/true2)
			if dist < true2/5 || dist > 1.01*true2 {
				t.Fatalf("theta = %g, step %d: estimated distance %.3g, true %.3g", theta, it, dist, true2)
			}
			if it > 150 && math.Abs(dist/true2-1) > 0.01 {
				t.Fatalf("theta = %g, step %d: estimated distance %.3g, true %.3g: not within 1%% once one mode dominates", theta, it, dist, true2)
			}
		}
		t.Logf("theta = %g: smallest estimate / true distance %.3f", theta, worst)
	}
}

// TestStepsStall checks the cases the rule must not take for convergence: a step that grew or
// did not shrink gives no distance (+Inf) for as long as it is one of the last two, a ratio
// just below 1 counts as MaxRate, and Reset forgets the rate.
func TestStepsStall(t *testing.T) {
	var s Steps
	s.Add(1e-4)
	s.Add(1e-6)
	if d, r := s.Add(2e-6); !math.IsInf(d, 1) || r != 1 {
		t.Errorf("a step that grew: distance %g, rate %g; want +Inf, 1", d, r)
	}
	if d, r := s.Add(1e-6); !math.IsInf(d, 1) || r != 1 {
		t.Errorf("the step after one that grew: distance %g, rate %g; want +Inf, 1", d, r)
	}
	if d, r := s.Add(0.9999 * 0.9999 * 1e-6); r != MaxRate || math.Abs(d-0.9999*0.9999*1e-6/((1-MaxRate)*(1-MaxRate))) > 1e-9 {
		t.Errorf("two shrinking steps, ratio 0.9999: distance %g, rate %g; want rate %g", d, r, MaxRate)
	}
	var eq Steps
	for _, step := range []float64{1e-6, 1e-6, 1e-6} {
		if d, _ := eq.Add(step); !math.IsInf(d, 1) {
			t.Errorf("equal steps: distance %g, want +Inf", d)
		}
	}
	s.Reset()
	if d, _ := s.Add(1e-12); !math.IsInf(d, 1) {
		t.Errorf("after Reset: distance %g, want +Inf", d)
	}
	if d, r := s.Add(0); d != 0 || r != 0 {
		t.Errorf("a zero step: distance %g, rate %g; want 0, 0", d, r)
	}
}
