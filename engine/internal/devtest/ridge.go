package devtest

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// RidgeMinimiser returns the minimiser S (D x D, row-major) of the quadratic network's ridge
// objective (1/D) sum_mu (h_mu(S) - y_mu)^2 + lambda ||S||_F^2 over symmetric S, with
// h_mu(S) = (x_mu^T S x_mu - Tr S)/sqrt(D) for the N tokens x (N x D, row-major), solved as
// the linear least-squares problem it is in the D (D + 1)/2 free entries of S by its normal
// equations (gonum, independent of the engine). At lambda = 0 it returns the minimal
// Frobenius-norm least-squares fit (the limit lambda -> 0+), which interpolates when N is below
// D (D + 1)/2.
func RidgeMinimiser(x, y []float64, N, D int, lambda float64) ([]float64, error) {
	// Unknowns: S_ii (i < D), then S_ij (i < j) row by row; h_mu = sum_i (x_i^2 - 1) S_ii /
	// sqrt(D) + sum_{i<j} 2 x_i x_j S_ij / sqrt(D); ||S||_F^2 = sum S_ii^2 + 2 sum S_ij^2, the
	// metric W = diag(1, ..., 1, 2, ..., 2).
	P := D * (D + 1) / 2
	idx := func(i, j int) int {
		if i == j {
			return i
		}
		return D + j - i - 1 + (i*(2*D-i-1))/2
	}
	a := mat.NewDense(N, P, nil)
	rt := math.Sqrt(float64(D))
	for mu := 0; mu < N; mu++ {
		xm := x[mu*D : (mu+1)*D]
		for i := 0; i < D; i++ {
			a.Set(mu, idx(i, i), (xm[i]*xm[i]-1)/rt)
			for j := i + 1; j < D; j++ {
				a.Set(mu, idx(i, j), 2*xm[i]*xm[j]/rt)
			}
		}
	}
	wInv := make([]float64, P)
	for k := range wInv {
		wInv[k] = 0.5
		if k < D {
			wInv[k] = 1
		}
	}
	yv := mat.NewVecDense(N, y)
	var sol mat.VecDense
	if lambda > 0 || N >= P {
		// (A^T A / D + lambda W) s = A^T y / D.
		var ata mat.Dense
		ata.Mul(a.T(), a)
		ata.Scale(1/float64(D), &ata)
		for k := 0; k < P; k++ {
			ata.Set(k, k, ata.At(k, k)+lambda/wInv[k])
		}
		var rhs mat.VecDense
		rhs.MulVec(a.T(), yv)
		rhs.ScaleVec(1/float64(D), &rhs)
		if err := sol.SolveVec(&ata, &rhs); err != nil {
			return nil, err
		}
	} else {
		// s = W^-1 A^T (A W^-1 A^T)^-1 y, the interpolator of least W-norm.
		aw := mat.DenseCopyOf(a)
		for mu := 0; mu < N; mu++ {
			for k := 0; k < P; k++ {
				aw.Set(mu, k, a.At(mu, k)*wInv[k])
			}
		}
		var g mat.Dense
		g.Mul(aw, a.T())
		var z mat.VecDense
		if err := z.SolveVec(&g, yv); err != nil {
			return nil, err
		}
		sol.MulVec(aw.T(), &z)
	}
	s := make([]float64, D*D)
	for i := 0; i < D; i++ {
		for j := 0; j < D; j++ {
			s[i*D+j] = sol.AtVec(idx(min(i, j), max(i, j)))
		}
	}
	return s, nil
}
