package aim

import (
	"math"
	"testing"
)

// TestNoisyRuleConvergence compares the default SE rule of the noisy softmax (14 Gauss-Hermite
// points per dimension of m, 7 x 8 Gauss-Legendre points per dimension of y~) with a finer one
// (24, 7 x 12): FisherSum and psi_out agree to 2e-3 (relative, and absolute for psi_out), the
// accuracy the README states.
func TestNoisyRuleConvergence(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s")
	}
	for _, c := range []struct{ beta, delta, q, V float64 }{{2, 0.001, 0.3, 1.2}, {1, 0.01, 1.4, 0.1}, {1, 1e-4, 1.0, 0.5}} {
		def, _ := NewNoisySoftmax(2, c.beta, c.delta)
		fine, _ := newNoisySoftmax(2, c.beta, c.delta, 24, 12)
		p0, f0, err0 := def.integrate(c.q, c.V)
		p1, f1, err1 := fine.integrate(c.q, c.V)
		if err0 != nil || err1 != nil {
			t.Fatal(err0, err1)
		}
		t.Logf("%+v: psi %.7f / %.7f, FisherSum %.7f / %.7f", c, p0, p1, f0, f1)
		if math.Abs(p0-p1) > 2e-3*math.Max(1, math.Abs(p1)) || math.Abs(f0-f1) > 2e-3*f1 {
			t.Errorf("%+v: default rule psi %.7f FisherSum %.7f, fine rule %.7f %.7f", c, p0, f0, p1, f1)
		}
	}
}
