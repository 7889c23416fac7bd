package channel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// noisyDraw draws omega ~ N(0, q I_M) and a noisy output y = softmax(beta h(u)) + sqrt(Delta) xi
// with u = omega + sqrt(V) xi'.
func noisyDraw(r *rand.Rand, T int, beta, delta, q, V float64) (y, omega []float64) {
	M := Fields(T)
	omega, u := make([]float64, M), make([]float64, M)
	for j := range omega {
		omega[j] = math.Sqrt(q) * r.NormFloat64()
		u[j] = omega[j] + math.Sqrt(V)*r.NormFloat64()
	}
	h := make([]float64, T*T)
	y = make([]float64, T*T)
	HFromU(h, u, T)
	(&Softmax{t: T, beta: beta}).Output(y, h)
	for i := range y {
		y[i] += math.Sqrt(delta) * r.NormFloat64()
	}
	return y, omega
}

// TestNoisyTMatchesT2: at T = 2 the importance sampler estimates what NoisySoftmax computes by
// one-dimensional rules: g_out to 4 of its standard errors plus 1e-3 of the prior scale, and
// log Z_out to 4 standard errors plus 1e-3 once the uninformative combinations
// w_a = y_aa + y_ab ~ N(1, 2 Delta), which NoisySoftmax leaves out, are added back.
func TestNoisyTMatchesT2(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for _, c := range []struct{ beta, delta, q, V float64 }{
		{1, 0.01, 0.5, 0.5}, {1, 0.1, 0.2, 1}, {2, 0.001, 0.8, 0.2}, {1, 0.05, 0, 1}, {1, 1e-4, 0.9, 0.1},
	} {
		exact, err := NewNoisySoftmax(2, c.beta, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		is, err := NewNoisySoftmaxT(2, c.beta, c.delta, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 8; trial++ {
			y, omega := noisyDraw(r, 2, c.beta, c.delta, c.q, c.V)
			want, got := make([]float64, 3), make([]float64, 3)
			exact.GOut(want, y, omega, c.V)
			est := is.GOut(got, y, omega, c.V)
			sv := math.Sqrt(c.V)
			for j := range want {
				if d := math.Abs(got[j]-want[j]) * sv; d > 4*est.ErrM+1e-3 {
					t.Errorf("%+v trial %d: g_%d = %.6g, exact %.6g (error %.2g of the prior scale, reported %.2g)", c, trial, j, got[j], want[j], d, est.ErrM)
				}
			}
			y1, y2 := exact.Reduced(y)
			m1 := math.Sqrt2*omega[0] - omega[1]
			m2 := math.Sqrt2*omega[2] - omega[1]
			lz, _, _ := exact.LogZ(y1, y2, m1, m2, c.V)
			for _, w := range []float64{y[0] + y[1], y[2] + y[3]} {
				lz += -(w-1)*(w-1)/(4*c.delta) - 0.5*math.Log(4*math.Pi*c.delta)
			}
			if d := math.Abs(est.LogZ - lz); d > 4*est.ErrLogZ+1e-3 {
				t.Errorf("%+v trial %d: log Z = %.6f, exact %.6f (reported error %.2g)", c, trial, est.LogZ, lz, est.ErrLogZ)
			}
		}
	}
}

// TestNoisyTMonteCarlo: at T = 3 (6 fields, 9 outputs) Z_out and E[u - omega | y] against a plain
// Monte Carlo over the prior u ~ N(omega, V I), which needs neither the mode nor the proposals:
// Z = E L(y | u), E[u - omega | y] = E[(u - omega) L]/Z, to 4 combined standard errors plus
// 1e-3 of the prior scale.
func TestNoisyTMonteCarlo(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	const T, draws = 3, 200000
	M := Fields(T)
	for _, c := range []struct{ beta, delta, q, V float64 }{{1, 0.05, 0.3, 0.7}, {1, 0.2, 0.6, 0.4}, {2, 0.1, 0, 1}} {
		is, err := NewNoisySoftmaxT(T, c.beta, c.delta, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 3; trial++ {
			y, omega := noisyDraw(r, T, c.beta, c.delta, c.q, c.V)
			g := make([]float64, M)
			est := is.GOut(g, y, omega, c.V)
			sv := math.Sqrt(c.V)
			u, ws := make([]float64, M), make([]float64, draws)
			xs := make([][]float64, draws)
			var top float64 = math.Inf(-1)
			for i := range ws {
				xs[i] = make([]float64, M)
				for j := range u {
					xs[i][j] = sv * r.NormFloat64()
					u[j] = omega[j] + xs[i][j]
				}
				copy(is.y, y)
				ws[i] = is.logLik(u)
				top = math.Max(top, ws[i])
			}
			var sw, sw2 float64
			mean, m2 := make([]float64, M), make([]float64, M)
			for i, l := range ws {
				w := math.Exp(l - top)
				sw += w
				sw2 += w * w
				for j, x := range xs[i] {
					mean[j] += w * x / sv
					m2[j] += w * x * x / c.V
				}
			}
			z := sw / draws
			seZ := math.Sqrt((sw2/draws - z*z) / draws)
			lz := top + math.Log(z)
			if d := math.Abs(est.LogZ - lz); d > 4*math.Hypot(est.ErrLogZ, seZ/z)+1e-3 {
				t.Errorf("%+v trial %d: log Z = %.5f, Monte Carlo %.5f (errors %.2g, %.2g)", c, trial, est.LogZ, lz, est.ErrLogZ, seZ/z)
			}
			ess := sw * sw / sw2
			for j := range mean {
				mc := mean[j] / sw
				sd := math.Sqrt(math.Max(m2[j]/sw-mc*mc, 0))
				se := sd / math.Sqrt(ess)
				if d := math.Abs(g[j]*sv - mc); d > 4*math.Hypot(est.ErrM, se)+1e-3 {
					t.Errorf("%+v trial %d: E[(u - omega)_%d]/sqrt V = %.5f, Monte Carlo %.5f +- %.2g (reported %.2g)", c, trial, j, g[j]*sv, mc, se, est.ErrM)
				}
			}
			t.Logf("%+v: log Z %.5f vs %.5f, ESS %.0f of %d, ErrM %.2g, %d points", c, est.LogZ, lz, ess, draws, est.ErrM, est.Points)
		}
	}
}

// TestNoisyTSmallNoise: as Delta -> 0 the noisy g_out tends to the noiseless softmax's (which
// observes the M - 1 directions exactly, Softmax.GOut): at Delta = 1e-8 and an output on the
// softmax's image (with noise of that size the noiseless inversion, which takes logarithms of
// single entries, moves by noise / entry), to 1e-3 of the prior scale at T = 3 and 4.
func TestNoisyTSmallNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for _, T := range []int{3, 4} {
		M := Fields(T)
		const delta, V, q = 1e-8, 0.5, 0.5
		is, err := NewNoisySoftmaxT(T, 1, delta, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		sm, _ := NewSoftmax(T, 1)
		for trial := 0; trial < 5; trial++ {
			y, omega := noisyDraw(r, T, 1, 0, q, V) // the noiseless output: the mode inverts it exactly
			got, want := make([]float64, M), make([]float64, M)
			est := is.GOut(got, y, omega, V)
			sm.GOut(want, y, omega, V)
			for j := range got {
				if d := math.Abs(got[j]-want[j]) * math.Sqrt(V); d > 4*est.ErrM+1e-3 {
					t.Errorf("T = %d trial %d: g_%d = %.6f, noiseless %.6f (reported error %.2g)", T, trial, j, got[j], want[j], est.ErrM)
				}
			}
		}
	}
}

// BenchmarkNoisyTGOut times one g_out of the noisy softmax at T = 3 at the default rule.
func BenchmarkNoisyTGOut(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	is, _ := NewNoisySoftmaxT(3, 1, 0.01, 0, 0)
	type in struct{ y, om []float64 }
	var ins []in
	for i := 0; i < 16; i++ {
		y, om := noisyDraw(r, 3, 1, 0.01, 0.5, 0.5)
		ins = append(ins, in{y, om})
	}
	g := make([]float64, 6)
	pts := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := ins[i%len(ins)]
		pts += is.GOut(g, c.y, c.om, 0.5).Points
	}
	b.ReportMetric(float64(pts)/float64(b.N), "points/op")
}
