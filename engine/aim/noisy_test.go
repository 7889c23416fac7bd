package aim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/kernels"
)

// TestNoisyIntegralsMonteCarlo compares FisherSum and OutputEntropy of the noisy softmax with
// an independent Monte Carlo over the generative model: omega ~ N(0, q I_3), u = omega +
// sqrt(V) xi, y = softmax(beta h(u)) + sqrt(Delta) noise on all four entries, averaging
// sum g_out^2 (kernels GOut) and log Z_out (kernels LogZ) over the draws.
func TestNoisyIntegralsMonteCarlo(t *testing.T) {
	cases := []struct{ beta, delta, q, V float64 }{
		{1, 0.01, 0.5, 1.0},
		{1, 0.1, 1.2, 0.3},
		{2, 0.001, 0.3, 1.2},
		{1, 0.01, 1.4, 0.1},
	}
	n := 6000
	if testing.Short() {
		n = 3000
	}
	r := rand.New(rand.NewPCG(17, 3))
	for _, c := range cases {
		ch, err := NewNoisySoftmax(2, c.beta, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		psi, err1 := ch.OutputEntropy(c.q, c.V)
		fs, err2 := ch.FisherSum(c.q, c.V)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		var sf, sf2, sl, sl2 float64
		om, u, h, y, g := make([]float64, 3), make([]float64, 3), make([]float64, 4), make([]float64, 4), make([]float64, 3)
		for i := 0; i < n; i++ {
			for k := range om {
				om[k] = math.Sqrt(c.q) * r.NormFloat64()
				u[k] = om[k] + math.Sqrt(c.V)*r.NormFloat64()
			}
			kernels.HFromU(h, u, 2)
			ch.Output(y, h)
			for k := range y {
				y[k] += math.Sqrt(c.delta) * r.NormFloat64()
			}
			ch.GOut(g, y, om, c.V)
			f := g[0]*g[0] + g[1]*g[1] + g[2]*g[2]
			y1, y2 := ch.Reduced(y)
			lz, _, _ := ch.LogZ(y1, y2, math.Sqrt2*om[0]-om[1], math.Sqrt2*om[2]-om[1], c.V)
			sf, sf2, sl, sl2 = sf+f, sf2+f*f, sl+lz, sl2+lz*lz
		}
		mf, ml := sf/float64(n), sl/float64(n)
		ef := math.Sqrt((sf2/float64(n) - mf*mf) / float64(n))
		el := math.Sqrt((sl2/float64(n) - ml*ml) / float64(n))
		t.Logf("%+v: FisherSum %.6g (MC %.6g +- %.2g), psi_out %.6g (MC %.6g +- %.2g)", c, fs, mf, ef, psi, ml, el)
		if math.Abs(fs-mf) > 4*ef {
			t.Errorf("%+v: FisherSum %.6g, Monte Carlo %.6g +- %.2g", c, fs, mf, ef)
		}
		if math.Abs(psi-ml) > 4*el {
			t.Errorf("%+v: OutputEntropy %.6g, Monte Carlo %.6g +- %.2g", c, psi, ml, el)
		}
	}
}
