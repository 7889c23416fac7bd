package mc

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// TestTraceCov: against the sum of gonum's unbiased variances of each entry, and unbiased: the
// mean of many estimates from K = 3 draws of N(0, diag(s^2)) is sum s^2.
func TestTraceCov(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	K, n := 5, 4
	y := make([]float64, K*n)
	for i := range y {
		y[i] = r.NormFloat64()
	}
	var want float64
	col := make([]float64, K)
	for e := 0; e < n; e++ {
		for j := 0; j < K; j++ {
			col[j] = y[j*n+e]
		}
		want += stat.Variance(col, nil)
	}
	if got := TraceCov(y, K, n); math.Abs(got-want) > 1e-12 {
		t.Errorf("TraceCov = %.15g, gonum's variances sum to %.15g", got, want)
	}
	s := []float64{0.5, 1, 2}
	const reps = 200000
	y = make([]float64, 3*len(s))
	var sum float64
	for i := 0; i < reps; i++ {
		for j := 0; j < 3; j++ {
			for e, se := range s {
				y[j*len(s)+e] = se * r.NormFloat64()
			}
		}
		sum += TraceCov(y, 3, len(s))
	}
	// Var of the estimate: sum_e 2 s_e^4 / (K - 1) = 17.125.
	if mean := sum / reps; math.Abs(mean-5.25) > 4*math.Sqrt(17.125/reps) {
		t.Errorf("mean of TraceCov over %d draws = %.4f, want tr Cov = 5.25", reps, mean)
	}
}
