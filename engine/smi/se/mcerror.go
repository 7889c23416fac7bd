package se

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/smi"
)

// jacobianStep is the largest step h of the finite differences of the SE map in linearise.
// The draws are the same on both sides (common random numbers), so the difference is smooth in
// h; h is large against the channel quadrature's tolerance (1e-3 relative), which a smaller
// step would amplify by 1/h. A sharp layer takes h = (1 - Q_kk)/4 instead: its V_kk = 1 - Q_kk
// + epsilon is then moved by at most a quarter, where a step of 5e-3 would take it to epsilon
// (at L = 3, alpha = 1.5, Q_33 = 0.995, that overstated dG_1/dQ_33 by 10 to 20%). G's
// quadrature error shrinks with 1 - Q_kk too.
const jacobianStep = 5e-3

// linearisation is the SE map linearised at a point: its Jacobian, the Newton step that
// (I - J)^{-1} on the free layers gives (nw; nw.S nil where I - J is singular) and the
// covariance of G there, Cov(G) = D Fcov D with D = diag(alpha / (1 + q-hat)^2).
type linearisation struct {
	J    []float64 // dG_l/dQ_k at (l, k), P x P row-major; 0 where l or k is frozen
	nw   fixedpoint.Newton
	covG *mat.SymDense
}

// linearise returns the linearisation of the SE map at Q, where qhat = alpha F(Q) and Fcov is
// the covariance of the average F. J comes from central differences of G with step
// min(jacobianStep, (1 - Q_kk)/4) on the same draws (one-sided where Q_kk is within a step of
// 0): 2 P evaluations of the map. Only the free layers enter.
func linearise(ch *smi.Deep, alpha float64, Q, qhat, Fcov []float64, o Options) (linearisation, error) {
	P := ch.P()
	var lin linearisation
	var free []int
	for l := 0; l < P; l++ {
		if !o.frozen(l) {
			free = append(free, l)
		}
	}
	lin.nw.Free = free
	lin.J = make([]float64, P*P)
	if len(free) == 0 {
		return lin, nil
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
	// J on the free layers.
	for _, k := range free {
		h := math.Min(jacobianStep, (1-Q[k])/4)
		lo, hi := math.Max(Q[k]-h, 0), Q[k]+h
		qlo, qhi := append([]float64(nil), Q...), append([]float64(nil), Q...)
		qlo[k], qhi[k] = lo, hi
		glo, err := G(qlo)
		if err != nil {
			return lin, fmt.Errorf("dG/dQ_%d%d at Q_%d%d = %g: %w", k+1, k+1, k+1, k+1, lo, err)
		}
		ghi, err := G(qhi)
		if err != nil {
			return lin, fmt.Errorf("dG/dQ_%d%d at Q_%d%d = %g: %w", k+1, k+1, k+1, k+1, hi, err)
		}
		for _, l := range free {
			lin.J[l*P+k] = (ghi[l] - glo[l]) / (hi - lo)
		}
	}
	lin.covG = mat.NewSymDense(len(free), nil)
	for a, l := range free {
		for b, k := range free {
			if b < a {
				continue
			}
			dl, dk := alpha/((1+qhat[l])*(1+qhat[l])), alpha/((1+qhat[k])*(1+qhat[k]))
			lin.covG.SetSym(a, b, dl*Fcov[l*P+k]*dk)
		}
	}
	if nw, err := fixedpoint.NewNewton(lin.J, P, o.Frozen); err == nil {
		lin.nw = nw
	}
	return lin, nil
}

// cov returns the covariance (P x P) of the Monte Carlo error of the fixed point Q* of the SE
// map G(Q)_l = q-hat_l / (1 + q-hat_l), q-hat_l = alpha F_l(Q), linearised at Q*. To first
// order the draws move G by delta G_l = alpha delta F_l / (1 + q-hat_l)^2, and the fixed point
// by
//
//	delta Q* = (I - J)^{-1} delta G,   J_lk = dG_l / dQ_k at Q*,
//
// so Cov(Q*) = S Cov(G) S^T with S = (I - J)^{-1}: 0 outside the free layers, and +Inf on their
// diagonal where I - J is singular. Near a threshold J -> 1 and the fixed point amplifies the
// map's noise.
func (lin linearisation) cov(P int) []float64 {
	out := make([]float64, P*P)
	S := lin.nw.S
	if S == nil {
		for _, l := range lin.nw.Free {
			out[l*P+l] = math.Inf(1)
		}
		return out
	}
	var t, c mat.Dense
	t.Mul(S, lin.covG)
	c.Mul(&t, S.T())
	for a, l := range lin.nw.Free {
		for b, k := range lin.nw.Free {
			out[l*P+k] = c.At(a, b)
		}
	}
	return out
}

// Linearisation is the SE map of Solve linearised at a point Q0 (Linearise), and the fixed
// point it predicts nearby.
type Linearisation struct {
	Alpha float64
	Q0    []float64 // the point
	// G is the map at Q0, G_l = q-hat_l / (1 + q-hat_l) with q-hat_l = alpha F_l(Q0), and GErr
	// its Monte Carlo standard error over the replicates (0 for a frozen layer).
	G, GErr []float64
	// Q is the fixed point of the linearised map, one Newton step from Q0:
	//
	//	Q = Q0 + (I - J)^{-1} (G(Q0) - Q0),   J_lk = dG_l / dQ_k at Q0,
	//
	// and QErr its Monte Carlo standard error, from Cov(Q) = (I - J)^{-1} Cov(G) (I - J)^{-T}
	// (the map's noise at Q0 carried to the fixed point, as Point.QErr). Both are NaN where
	// I - J is singular.
	Q, QErr []float64
	// J is the Jacobian J_lk = dG_l/dQ_k at Q0 (P x P, row-major; 0 in a frozen layer's row and
	// column). With it the fixed point with some layers held (at GAMP's values, say) is one
	// linear solve on the others: (I - J)_FF dQ_F = (G - Q0)_F + J_FH dQ_H.
	J []float64
	// Samples is the number of draws per evaluation, and Evaluations the map's evaluations:
	// 1 + 2 P_free (G and the central differences of J).
	Samples, Evaluations int
}

// Linearise evaluates the SE map of Solve at Q0 (diagonal overlaps in [0, 1); a frozen
// layer's entry is kept) and linearises it there, with J by central differences on the same
// draws (as QErr). Where Q0 is within the linearisation's reach of a fixed point, Q is that
// fixed point to first order and G - Q0 against GErr says whether Q0 is one.
//
// It is the cheap way to a fixed point at many samples, or to test a point from elsewhere (a
// GAMP run's overlaps): 1 + 2 P evaluations of the map, where Solve iterates it tens to
// hundreds of times. At L = 3, alpha = 1.5 and 32 000 samples an affine fit of 7 evaluations
// left residuals of 1e-4 (docs/validation/smi-se.md), so one step from a point 0.05 away lands within the
// fixed point's own error; from farther, apply it again from Q. It needs Replicates >= 2
// (the errors are their spread).
func Linearise(ch *smi.Deep, alpha float64, Q0 []float64, o Options) (Linearisation, error) {
	if err := o.validate(ch); err != nil {
		return Linearisation{}, err
	}
	P := ch.P()
	switch {
	case !(alpha > 0) || math.IsInf(alpha, 0):
		return Linearisation{}, fmt.Errorf("SMI SE: alpha = %g: need alpha > 0", alpha)
	case len(Q0) != P:
		return Linearisation{}, fmt.Errorf("SMI SE: %d overlaps at L = %d", len(Q0), P)
	case o.Replicates < 2:
		return Linearisation{}, fmt.Errorf("SMI SE: linearising needs Replicates >= 2, got %d", o.Replicates)
	}
	for l, q := range Q0 {
		if !(q >= 0 && q < 1) {
			return Linearisation{}, fmt.Errorf("SMI SE: Q_%d%d = %g: need 0 <= Q < 1", l+1, l+1, q)
		}
	}
	o.Samples = o.Replicates * o.perReplicate(o.Samples)
	f, err := fisher(ch, Q0, o)
	if err != nil {
		return Linearisation{}, fmt.Errorf("SMI SE at alpha = %g: %w", alpha, err)
	}
	r := Linearisation{Alpha: alpha, Q0: slices.Clone(Q0), G: make([]float64, P), GErr: make([]float64, P),
		Q: slices.Clone(Q0), QErr: make([]float64, P), Samples: o.Samples, Evaluations: 1}
	qhat := o.update(r.G, Q0, f.F.mean, alpha)
	lin, err := linearise(ch, alpha, Q0, qhat, f.F.cov, o)
	if err != nil {
		return r, fmt.Errorf("SMI SE at alpha = %g: %w", alpha, err)
	}
	r.Evaluations += 2 * len(lin.nw.Free)
	r.J = lin.J
	cov := lin.cov(P)
	step := make([]float64, P)
	if lin.nw.S != nil {
		lin.nw.Step(step, Q0, r.G)
	}
	for a, l := range lin.nw.Free {
		r.GErr[l] = math.Sqrt(math.Max(lin.covG.At(a, a), 0))
		r.QErr[l] = math.Sqrt(math.Max(cov[l*P+l], 0))
		r.Q[l] += step[l]
		if lin.nw.S == nil {
			r.Q[l], r.QErr[l] = math.NaN(), math.NaN()
		}
	}
	return r, nil
}
