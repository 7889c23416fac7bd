package se

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/aimtheory/aim/engine/smi"
)

// jacobianStep is the step h of the finite differences of the SE map in fixedPointCov. The
// draws are the same on both sides (common random numbers), so the difference is smooth in h;
// h is large against the channel quadrature's tolerance (1e-3 relative), which a smaller step
// would amplify by 1/h.
const jacobianStep = 5e-3

// fixedPointCov returns the covariance (P x P) of the Monte Carlo error of the fixed point Q*
// of the SE map G(Q)_l = q-hat_l / (1 + q-hat_l), q-hat_l = alpha F_l(Q), where Fcov is the
// covariance of the average F at Q* (from its replicates) and qhat = alpha F(Q*). To first
// order the draws move G by delta G_l = alpha delta F_l / (1 + q-hat_l)^2, and the fixed point
// by
//
//	delta Q* = (I - J)^{-1} delta G,   J_lk = dG_l / dQ_k at Q*,
//
// so Cov(Q*) = (I - J)^{-1} D Fcov D (I - J)^{-T} with D = diag(alpha / (1 + q-hat)^2). J
// comes from central differences of G with step jacobianStep on the same draws (one-sided
// where Q*_k is within a step of 0 or 1): 2 P evaluations of the map. Only the free layers
// enter; a frozen layer's rows and columns are 0. Near a threshold J -> 1 and the fixed point
// amplifies the map's noise; a singular I - J gives infinite errors.
func fixedPointCov(ch *smi.Deep, alpha float64, Q, qhat, Fcov []float64, o Options) ([]float64, error) {
	P := ch.P()
	var free []int
	for l := 0; l < P; l++ {
		if !o.frozen(l) {
			free = append(free, l)
		}
	}
	nf := len(free)
	out := make([]float64, P*P)
	if nf == 0 {
		return out, nil
	}
	G := func(at []float64) ([]float64, error) {
		f, err := fisher(ch, at, o)
		if err != nil {
			return nil, err
		}
		g := make([]float64, P)
		o.update(g, at, f.F.mean, alpha)
		return g, nil
	}
	// I - J on the free layers.
	IJ := mat.NewDense(nf, nf, nil)
	for b, k := range free {
		lo, hi := math.Max(Q[k]-jacobianStep, 0), math.Min(Q[k]+jacobianStep, 1-1e-9)
		qlo, qhi := append([]float64(nil), Q...), append([]float64(nil), Q...)
		qlo[k], qhi[k] = lo, hi
		glo, err := G(qlo)
		if err != nil {
			return nil, fmt.Errorf("dG/dQ_%d%d at Q_%d%d = %g: %w", k+1, k+1, k+1, k+1, lo, err)
		}
		ghi, err := G(qhi)
		if err != nil {
			return nil, fmt.Errorf("dG/dQ_%d%d at Q_%d%d = %g: %w", k+1, k+1, k+1, k+1, hi, err)
		}
		for a, l := range free {
			j := (ghi[l] - glo[l]) / (hi - lo)
			v := -j
			if a == b {
				v++
			}
			IJ.Set(a, b, v)
		}
	}
	// Cov(G) = D Fcov D.
	covG := mat.NewSymDense(nf, nil)
	for a, l := range free {
		for b, k := range free {
			if b < a {
				continue
			}
			dl, dk := alpha/((1+qhat[l])*(1+qhat[l])), alpha/((1+qhat[k])*(1+qhat[k]))
			covG.SetSym(a, b, dl*Fcov[l*P+k]*dk)
		}
	}
	var A mat.Dense
	if err := A.Inverse(IJ); err != nil {
		for _, l := range free {
			out[l*P+l] = math.Inf(1)
		}
		return out, nil
	}
	var t, c mat.Dense
	t.Mul(&A, covG)
	c.Mul(&t, A.T())
	for a, l := range free {
		for b, k := range free {
			out[l*P+k] = c.At(a, b)
		}
	}
	return out, nil
}
