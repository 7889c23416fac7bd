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

// TestNoisyEntropyDerivative: along V = Q0 - q, d psi_out/dq = FisherSum/2 (the GLM identity
// that makes q-hat = 2 alpha FisherSum the stationarity condition of the free entropy), by a
// central difference, h = 1e-3, to 1e-5 relative (measured: 1e-7 at Delta = 0.01, 2e-6 at
// Delta = 0.1).
func TestNoisyEntropyDerivative(t *testing.T) {
	for _, c := range []struct{ delta, Q0, q float64 }{{0.01, 1.5, 0.6}, {0.1, 2, 1.2}} {
		ch, _ := NewNoisySoftmax(2, 1, c.delta)
		const h = 1e-3
		pp, _ := ch.OutputEntropy(c.q+h, c.Q0-c.q-h)
		pm, _ := ch.OutputEntropy(c.q-h, c.Q0-c.q+h)
		f, _ := ch.FisherSum(c.q, c.Q0-c.q)
		fd := (pp - pm) / (2 * h)
		t.Logf("%+v: dpsi/dq = %.6f, FisherSum/2 = %.6f", c, fd, f/2)
		if math.Abs(fd-f/2) > 1e-5*f/2 {
			t.Errorf("%+v: dpsi_out/dq = %.6f, FisherSum/2 = %.6f", c, fd, f/2)
		}
	}
}

// TestNoisyZeroNoiseLimit: FisherSum -> K/(2V) = 2/V, the noiseless softmax's, as Delta -> 0,
// the gap shrinking like a power of Delta (measured exponent logged; asserted in [0.3, 1]).
func TestNoisyZeroNoiseLimit(t *testing.T) {
	q, V := 0.8, 0.7
	var gaps []float64
	deltas := []float64{1e-2, 1e-3, 1e-4}
	for _, d := range deltas {
		ch, _ := NewNoisySoftmax(2, 1, d)
		f, err := ch.FisherSum(q, V)
		if err != nil {
			t.Fatal(err)
		}
		gaps = append(gaps, 2/V-f)
		t.Logf("Delta = %g: FisherSum %.6f, noiseless %.6f, gap %.3g", d, f, 2/V, 2/V-f)
	}
	for i := 1; i < len(gaps); i++ {
		rate := math.Log(gaps[i-1]/gaps[i]) / math.Log(deltas[i-1]/deltas[i])
		t.Logf("rate between Delta = %g and %g: gap ~ Delta^%.3f", deltas[i-1], deltas[i], rate)
		if !(gaps[i] > 0 && gaps[i] < gaps[i-1]) || rate < 0.3 || rate > 1 {
			t.Errorf("gaps %v: not a power-law approach to the noiseless 2/V (rate %.3f)", gaps, rate)
		}
	}
}

// TestNoisyNormalised: Z_out(y~; m, V) is a density of y~ given m, so the y~ rule of the SE
// integrals integrates it to 1 (to 1e-4; measured 1e-5 at worst), including saturated outputs
// (beta = 2, V = 1.5, where much of the mass of sigma(beta d) lies within 1e-3 of 0 and 1).
func TestNoisyNormalised(t *testing.T) {
	for _, c := range []struct{ beta, delta, m1, m2, V float64 }{
		{2, 0.001, 0, 0, 1.5}, {2, 0.01, 1, -2, 1.5}, {1, 1e-4, 0.5, 0.3, 0.2}, {1, 0.1, 3, 0, 0.01}, {3, 0.001, -1, 1, 0.5},
	} {
		ch, _ := NewNoisySoftmax(2, c.beta, c.delta)
		s := ch.scratch()
		ch.atM(s, c.m1, c.m2, c.V)
		var tot float64
		for i := 0; i < s.ny; i++ {
			for j := 0; j < s.ny; j++ {
				var z float64
				for k := 0; k < s.ng; k++ {
					z += s.k[0][k][i] * s.k[1][k][j]
				}
				tot += s.w[0][i] * s.w[1][j] * z
			}
		}
		if math.Abs(tot-1) > 1e-4 {
			t.Errorf("%+v: int Z dy~ = %.7f, want 1", c, tot)
		}
	}
}
