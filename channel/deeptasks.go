package channel

import (
	"math"
	"math/rand/v2"
)

// DeepTasks returns n random tasks of DeepSample at L layers (DeepIn(L) values each, slots
// 3 t + 1 in task order reversed) for the twin tests of the CPU backend, the emulator and the
// GPU: omega N(0, 1); V diagonal or with correlations between layers 1 and 2; the last layer
// broad (V_LL = 0.5, prior only) or sharp (V_LL = 1e-3) in turn; and u the output
// B_{L-1}(z_1, ..., z_{L-1}) z_L of Z = omega + sqrt(V_ll) xi / 2, so that the posterior has
// mass where the charts look.
func DeepTasks(seed uint64, n, L int, c, beta float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x64656570)) // "deep"
	nin := DeepIn(L)
	in := make([]float64, n*nin)
	for t := 0; t < n; t++ {
		task := in[t*nin : (t+1)*nin]
		task[0] = float64(3*(n-1-t) + 1)
		om, V := task[3:3+2*L], task[3+2*L:]
		for i := range om {
			om[i] = r.NormFloat64()
		}
		for k := 0; k < L-1; k++ {
			V[k*L+k] = 0.2 + 0.6*r.Float64()
		}
		V[L*L-1] = 0.5
		if t%2 == 1 {
			V[L*L-1] = 1e-3
		}
		if t%3 == 2 { // correlated layers 1 and 2
			V[1] = 0.5 * min(V[0], V[L+1])
			V[L] = V[1]
		}
		b := [4]float64{1, 0, 0, 1}
		var z [2]float64
		for k := 0; k < L; k++ {
			sd := math.Sqrt(V[k*L+k])
			z = [2]float64{om[2*k] + 0.5*sd*r.NormFloat64(), om[2*k+1] + 0.5*sd*r.NormFloat64()}
			if k < L-1 {
				b = matMul2(Attention2(c, beta, mul2(b, z)), b)
			}
		}
		u := mul2(b, z)
		task[1], task[2] = u[0], u[1]
	}
	return in
}
