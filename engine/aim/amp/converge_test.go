package amp

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
)

// TestConvergedMeansNear runs GAMP-RIE with the hardmax channel (T = 2, rho = 0.5, alpha-bar =
// 4, D = 60, ChannelOptions) to its stopping rule, then the same run for 400 iterations, and
// checks what Converged promises: the error at the stop is within the distance's bound of the
// long run's, |e - e_inf| <= 2 sqrt(e_inf dist) + dist (the triangle inequality for
// ||S-hat - S||), where dist is the run's final estimated distance. Under the old rule (the
// last step below Tol) the run stopped at an error 7% above its limit at larger D.
func TestConvergedMeansNear(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 s")
	}
	dev := cpu.New(0)
	p := aim.Params{D: 60, Alpha: 1, Rho: 0.5, Seed: 1, Channel: channel.Spec{Kind: channel.KindHardmax, T: 2}}
	o := ChannelOptions(p.Channel)
	stop := runOnce(t, dev, p, o)
	if !stop.Converged {
		t.Fatalf("not converged after %d iterations (distance %.3g)", stop.Iterations, stop.Distance)
	}
	o.Tol, o.MaxIter = 1e-300, 400
	long := runOnce(t, dev, p, o)
	bound := 2*math.Sqrt(long.Error*stop.Distance) + stop.Distance
	t.Logf("stopped at iteration %d: error %.6f, distance %.3g; after %d iterations %.6f (|difference| %.3g, bound %.3g)",
		stop.Iterations, stop.Error, stop.Distance, long.Iterations, long.Error, math.Abs(stop.Error-long.Error), bound)
	if math.Abs(stop.Error-long.Error) > bound {
		t.Errorf("error %.6f at the stop, %.6f after %d iterations: |difference| %.3g beyond the distance's bound %.3g",
			stop.Error, long.Error, long.Iterations, math.Abs(stop.Error-long.Error), bound)
	}
}

// TestAdaptiveDampingBreaksCycle runs GAMP-RIE with the hardmax channel at D = 100, rho = 0.5,
// alpha-bar = 2, seed 1, where the undamped iteration settles into a cycle of period three
// (steps of about 1e-5 that repeat, the error alternating in its fifth digit): undamped it
// never meets the stopping rule in 300 iterations; with Adaptive the damping is raised once
// the steps stall and the run converges (measured: 38 iterations at theta = 0.5).
func TestAdaptiveDampingBreaksCycle(t *testing.T) {
	if testing.Short() {
		t.Skip("about 15 s")
	}
	dev := cpu.New(0)
	p := aim.Params{D: 100, Alpha: 0.5, Rho: 0.5, Seed: 1, Channel: channel.Spec{Kind: channel.KindHardmax, T: 2}}
	o := ChannelOptions(p.Channel)
	o.MaxIter = 300
	o.Adaptive = false
	plain := runOnce(t, dev, p, o)
	o.Adaptive = true
	adaptive := runOnce(t, dev, p, o)
	raised := adaptive.Trace[len(adaptive.Trace)-1].Damping
	t.Logf("undamped: %d iterations, converged %v, distance %.3g, error %.6f; adaptive: %d iterations, converged %v, damping %g, error %.6f",
		plain.Iterations, plain.Converged, plain.Distance, plain.Error, adaptive.Iterations, adaptive.Converged, raised, adaptive.Error)
	if plain.Converged {
		t.Errorf("the undamped run converged (%d iterations): the cycle this test needs is gone", plain.Iterations)
	}
	if !adaptive.Converged || raised != 0.5 {
		t.Errorf("adaptive: converged %v after %d iterations at damping %g, want converged at 0.5", adaptive.Converged, adaptive.Iterations, raised)
	}
	if math.Abs(adaptive.Error-plain.Error) > 1e-3 {
		t.Errorf("adaptive error %.6f, undamped cycle about %.6f: not the same fixed point", adaptive.Error, plain.Error)
	}
}

// TestStalled checks the cycle test of Options.Adaptive on step sequences: a cycle of period
// two or three and a flat sequence stall; a geometric decrease at rate 0.99 a step does not.
func TestStalled(t *testing.T) {
	mk := func(steps ...float64) []Iteration {
		it := make([]Iteration, len(steps))
		for i, s := range steps {
			it[i].Step = s
		}
		return it
	}
	geo := make([]float64, 6)
	for i := range geo {
		geo[i] = math.Pow(0.99, float64(i))
	}
	for _, c := range []struct {
		name  string
		trace []Iteration
		want  bool
	}{
		{"period two", mk(1, 3, 1, 3, 1, 3), true},
		{"period three", mk(2, 1, 3, 2, 1, 3), true},
		{"flat", mk(1, 1, 1, 1, 1, 1), true},
		{"geometric 0.99", mk(geo...), false},
		{"too short", mk(1, 1, 1, 1, 1), false},
	} {
		if got := stalled(c.trace); got != c.want {
			t.Errorf("%s: stalled %v, want %v", c.name, got, c.want)
		}
	}
}
