package aim

import (
	"math"
	"testing"
)

// TestNoisyTMatchesT2: at T = 2 the Monte Carlo state-evolution integrals of NoisySoftmaxT
// estimate what NoisySoftmax computes by quadrature: FisherSum, and psi_out once the constant
// of the uninformative row sums (-log(4 pi Delta) - 1) is added, within 4 standard errors.
func TestNoisyTMatchesT2(t *testing.T) {
	if testing.Short() {
		t.Skip("Monte Carlo over 3 x 4096 samples: skipped in -short mode (the race pass)")
	}
	for _, c := range []struct{ rho, delta, q float64 }{{0.5, 0.01, 0.2}, {1, 0.05, 0.6}, {0.5, 0.001, 0}} {
		exact, err := NewNoisySoftmax(2, 1, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		mc, err := NewNoisySoftmaxT(2, 1, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		mc.Samples = 4096
		V := c.rho - c.q
		// Q0 = rho/2 + ... : V here is any positive variance; take rho - q.
		fe, err := exact.FisherSum(c.q, V)
		if err != nil {
			t.Fatal(err)
		}
		pe, _ := exact.OutputEntropy(c.q, V)
		pe += -math.Log(4*math.Pi*c.delta) - 1
		fm, err := mc.FisherSumValue(c.q, V)
		if err != nil {
			t.Fatal(err)
		}
		pm, _ := mc.OutputEntropyValue(c.q, V)
		if math.Abs(fm.V-fe) > 4*fm.Err {
			t.Errorf("%+v: FisherSum Monte Carlo %.5f +- %.5f, quadrature %.5f", c, fm.V, fm.Err, fe)
		}
		if math.Abs(pm.V-pe) > 4*pm.Err {
			t.Errorf("%+v: psi_out Monte Carlo %.5f +- %.5f, quadrature %.5f", c, pm.V, pm.Err, pe)
		}
		t.Logf("%+v: FisherSum %.5f +- %.5f vs %.5f; psi_out %.5f +- %.5f vs %.5f", c, fm.V, fm.Err, fe, pm.V, pm.Err, pe)
	}
}
