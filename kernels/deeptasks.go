package kernels

import (
	"math"
	"math/rand/v2"
)

// DeepTasks returns n random tasks of DeepSample (DeepIn values each, slots 3 t + 1 in task
// order reversed) for the twin tests of the CPU backend, the emulator and the GPU: omega
// N(0, 1); V diagonal or with correlations; the last layer broad (V_33 = 0.5, prior only) or
// sharp (V_33 = 1e-3) in turn; and u the output B(z_1, z_2) z_3 of Z = omega + sqrt(V_ll) xi,
// so that the posterior has mass where the charts look.
func DeepTasks(seed uint64, n int, c, beta float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x64656570)) // "deep"
	in := make([]float64, n*DeepIn)
	for t := 0; t < n; t++ {
		task := in[t*DeepIn : (t+1)*DeepIn]
		task[0] = float64(3*(n-1-t) + 1)
		om, V := task[3:9], task[9:18]
		for i := range om {
			om[i] = r.NormFloat64()
		}
		V[0], V[4], V[8] = 0.2+0.6*r.Float64(), 0.2+0.6*r.Float64(), 0.5
		if t%2 == 1 {
			V[8] = 1e-3
		}
		if t%3 == 2 { // correlated layers 1 and 2
			V[1] = 0.5 * min(V[0], V[4])
			V[3] = V[1]
		}
		var z [6]float64
		for i := range z {
			z[i] = om[i] + 0.5*r.NormFloat64()*math.Sqrt(V[(i/2)*4])
		}
		a1 := Attention2(c, beta, [2]float64{z[0], z[1]})
		a2 := Attention2(c, beta, mul2(a1, [2]float64{z[2], z[3]}))
		u := mul2(a2, mul2(a1, [2]float64{z[4], z[5]}))
		task[1], task[2] = u[0], u[1]
	}
	return in
}
