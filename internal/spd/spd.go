// Package spd solves and inverts small symmetric positive definite systems by Cholesky
// factorisation, A = L L^T with L lower triangular: the P x P channel variances of GAMP and the
// Gauss-Newton systems of the posterior's peak search. Matrices are row-major n x n.
package spd

import "math"

// Factor writes the lower Cholesky factor L of a = L L^T into l (n x n; its upper triangle is
// left alone). It reports false when a is not positive definite or not finite. Only the lower
// triangle of a is read.
func Factor(l, a []float64, n int) bool {
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := a[i*n+j]
			for k := 0; k < j; k++ {
				s -= l[i*n+k] * l[j*n+k]
			}
			if i == j {
				if !(s > 0) || math.IsInf(s, 0) {
					return false
				}
				l[i*n+i] = math.Sqrt(s)
			} else {
				l[i*n+j] = s / l[j*n+j]
			}
		}
	}
	return true
}

// SolveFactored solves L L^T x = b for x, given the factor l of Factor; x may be b.
func SolveFactored(x, l, b []float64, n int) {
	for i := 0; i < n; i++ { // L y = b
		s := b[i]
		for k := 0; k < i; k++ {
			s -= l[i*n+k] * x[k]
		}
		x[i] = s / l[i*n+i]
	}
	for i := n - 1; i >= 0; i-- { // L^T x = y
		s := x[i]
		for k := i + 1; k < n; k++ {
			s -= l[k*n+i] * x[k]
		}
		x[i] = s / l[i*n+i]
	}
}

// Solve solves a x = b; l is n x n work space (allocated when nil). It reports false when a is
// not positive definite.
func Solve(x, a, b []float64, n int, l []float64) bool {
	if l == nil {
		l = make([]float64, n*n)
	}
	if !Factor(l, a, n) {
		return false
	}
	SolveFactored(x, l, b, n)
	return true
}

// Invert writes a^{-1} into dst (n x n, exactly symmetric: the mean of the computed inverse
// and its transpose). It reports false when a is not positive definite or the inverse is not
// finite.
func Invert(dst, a []float64, n int) bool {
	l := make([]float64, n*n)
	if !Factor(l, a, n) {
		return false
	}
	col := make([]float64, n)
	for c := 0; c < n; c++ {
		clear(col)
		col[c] = 1
		SolveFactored(col, l, col, n)
		for i, v := range col {
			dst[i*n+c] = v
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			v := (dst[i*n+j] + dst[j*n+i]) / 2
			dst[i*n+j], dst[j*n+i] = v, v
		}
	}
	for _, v := range dst[:n*n] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
