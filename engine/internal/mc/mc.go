// Package mc holds the Monte Carlo estimators shared by the state evolutions of the AIM and
// SMI models.
package mc

// TraceCov returns the unbiased estimate of tr Cov(g) from K >= 2 draws of a vector g of n
// entries, stored one after another in y (K n values):
//
//	sum_e sum_j (y_je - mean_e)^2 / (K - 1),  mean_e = sum_j y_je / K.
//
// With g = g(Z), Z drawn given omega, its mean over omega estimates E_omega tr Cov(g | omega)
// without bias: the Bayes-optimal generalisation error of a predictor that outputs
// E[g | omega].
func TraceCov(y []float64, K, n int) float64 {
	var tr float64
	for e := 0; e < n; e++ {
		var mu float64
		for j := 0; j < K; j++ {
			mu += y[j*n+e]
		}
		mu /= float64(K)
		for j := 0; j < K; j++ {
			d := y[j*n+e] - mu
			tr += d * d
		}
	}
	return tr / float64(K-1)
}
