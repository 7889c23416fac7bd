package se

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aimtheory/aim/engine/root"
	"github.com/aimtheory/aim/engine/smi"
)

// Stability returns, for each layer l, the linear-stability coefficient
//
//	F_l = E_y || Cov(z_l | y, omega, V) V_ll^{-1} - I_M ||_F^2 / V_ll^2
//
// (docs/theory/smi.md 2.3: Cov is the M x M covariance of layer l's pre-activations across tokens),
// at the diagonal overlaps Q with omega = Q^{1/2} xi, V = I - Q + epsilon I and the data drawn
// from the channel. Around Q_ll = 0 the SE is q-hat_ll ~ alpha F_l Q_ll, so layer l's overlap
// grows from 0 when alpha F_l > 1: at Q = 0 this is the weak-recovery threshold
// alpha_l = 1/F_l, and with the later layers at their fixed point it is the conditional
// (grand-staircase) threshold of an earlier layer. Only the layers with Q_ll = 0 are
// meaningful. With o.Draws (L >= 3) the covariances come from the two independent halves of
// each sample's importance sampling, Cov_a and Cov_b, and the average of
// tr((Cov_a/V - I)(Cov_b/V - I)^T) has no bias from their noise (the square of one estimate
// would be biased up by its variance); what is left is the O(1/n) bias of each
// self-normalised covariance.
func Stability(ch *smi.Deep, Q []float64, o Options) ([]float64, error) {
	if err := o.validate(ch); err != nil {
		return nil, err
	}
	F, err := stability(ch, Q, o)
	return F.mean, err
}

// stability is Stability with the covariance of the average over the replicates.
func stability(ch *smi.Deep, Q []float64, o Options) (average, error) {
	P, M := ch.P(), ch.M
	pm := P * M
	V := make([]float64, P*P)
	for l := 0; l < P; l++ {
		V[l*P+l] = 1 - Q[l] + o.Epsilon
	}
	var batch *smi.SampleBatch
	if o.Draws > 0 {
		var err error
		if batch, err = sampleAll(ch, Q, V, o); err != nil {
			return average{}, err
		}
	}
	return smiAverage(ch, o, P, func(acc []float64, w *smiWorker, xi, eta []float64) error {
		// Cov/v - I of layer k's tokens from ca and cb: the same matrix (the cubature), or two
		// independent halves' (sampled), whose product has the mean ||E[Cov]/v - I||_F^2.
		ca, cb := w.cov, w.cov
		if batch != nil {
			if err := w.halves(batch, o.Draws/2); err != nil {
				return err
			}
			cb = w.cov2
			w.half[0].Cov(ca)
			w.half[1].Cov(cb)
		} else {
			if err := w.posterior(ch, Q, V, xi, eta); err != nil {
				return err
			}
			w.m.Cov(ca)
		}
		for k := 0; k < P; k++ {
			v := V[k*P+k]
			var s float64
			for a := 0; a < M; a++ {
				for b := 0; b < M; b++ {
					i := (k*M+a)*pm + k*M + b
					x, y := ca[i]/v, cb[i]/v
					if a == b {
						x--
						y--
					}
					s += x * y
				}
			}
			acc[k] += s / (v * v)
		}
		return nil
	})
}

// SolveCurve solves the SMI state evolution at each alpha in increasing order, starting each
// point from the previous fixed point (with every free overlap at least o.Init, so that a
// layer below its threshold can still turn on): continuation saves most iterations along a
// curve. The points come back in the order of alphas. With o.MCError every point starts again
// at o.Samples draws. With o.Start = Informed every point starts at QInformed I (continuation
// cannot raise it); with Both the uninformed solve is continued along the uninformed branch.
func SolveCurve(ch *smi.Deep, alphas []float64, o Options, progress func(Point)) ([]Point, error) {
	order := make([]int, len(alphas))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(alphas[a], alphas[b]) })
	out := make([]Point, len(alphas))
	var start []float64
	for _, i := range order {
		oi := o
		oi.start = start
		pt, err := Solve(ch, alphas[i], oi)
		if err != nil {
			return nil, err
		}
		out[i] = pt
		// Continue the uninformed branch (the reported point may be the informed one).
		cont := pt
		if pt.Start == Informed && pt.Other != nil {
			cont = *pt.Other
		}
		start = append([]float64(nil), cont.Q...)
		if progress != nil {
			progress(pt)
		}
	}
	return out, nil
}

// Onsets reads the onset of each layer's overlap off an SE curve: the first alpha where
// Q_ll exceeds level, extrapolated linearly to Q_ll = 0 with the next grid point (the
// continuous transitions of docs/theory/smi.md 2.4 grow linearly from their threshold). NaN where the
// overlap never exceeds level.
func Onsets(points []Point, level float64) []float64 {
	if len(points) == 0 {
		return nil
	}
	P := len(points[0].Q)
	idx := make([]int, len(points))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(points[a].Alpha, points[b].Alpha) })
	out := make([]float64, P)
	for l := 0; l < P; l++ {
		out[l] = math.NaN()
		for k, i := range idx {
			if points[i].Q[l] <= level {
				continue
			}
			a, q := points[i].Alpha, points[i].Q[l]
			switch {
			case k+1 < len(idx) && points[idx[k+1]].Q[l] > q:
				a2, q2 := points[idx[k+1]].Alpha, points[idx[k+1]].Q[l]
				out[l] = a - q*(a2-a)/(q2-q)
			case k > 0:
				out[l] = points[idx[k-1]].Alpha
			default:
				out[l] = a
			}
			if k > 0 && out[l] < points[idx[k-1]].Alpha {
				out[l] = points[idx[k-1]].Alpha // a jump: the onset lies between the two points
			}
			break
		}
	}
	return out
}

// Thresholds are the weak-recovery thresholds of docs/theory/smi.md 2.3 for each layer.
type Thresholds struct {
	// Stability[l] = 1/F_l(Q = 0): where Q_ll = 0 stops being stable with every overlap at 0.
	Stability []float64
	// Conditional[l], for l < L-1: where Q_ll = 0 stops being stable with the later layers
	// l+1..L at their fixed point (the SE restricted to them) — the grand staircase. NaN for the
	// last layer (its conditional threshold is its Stability).
	Conditional []float64
}

// ConditionalThreshold returns the alpha in [lo, hi] where layer l (0-based, l < L-1) turns
// unstable with layers l+1..L at the fixed point Q*(alpha) of the SE restricted to them:
// alpha F_l(Q*(alpha)) = 1 (Stability), found by engine/root (the Illinois variant of regula falsi) to
// relative tolerance relTol. It is an error if the root is not bracketed by [lo, hi]. The
// restricted SE and F use o.Samples draws (o.MCError does not apply) and skip the fixed point's
// standard errors.
func ConditionalThreshold(ch *smi.Deep, l int, lo, hi, relTol float64, o Options) (float64, error) {
	P := ch.P()
	if l < 0 || l >= P-1 {
		return 0, fmt.Errorf("SMI conditional threshold: layer %d: need 1 <= layer < L = %d", l+1, P)
	}
	frozen := make([]bool, P)
	for k := 0; k <= l; k++ {
		frozen[k] = true
	}
	var start []float64
	h := func(alpha float64) (float64, error) {
		oo := o
		oo.Frozen = frozen
		oo.start = start
		oo.noError, oo.MCError = true, 0
		pt, err := Solve(ch, alpha, oo)
		if err != nil {
			return 0, err
		}
		if !pt.Converged {
			return 0, fmt.Errorf("SMI conditional threshold of layer %d: the restricted SE at alpha = %g: %w in %d iterations", l+1, alpha, ErrNotConverged, pt.Iterations)
		}
		start = pt.Q
		F, err := Stability(ch, pt.Q, o)
		if err != nil {
			return 0, err
		}
		return alpha*F[l] - 1, nil
	}
	flo, err := h(lo)
	if err != nil {
		return 0, err
	}
	fhi, err := h(hi)
	if err != nil {
		return 0, err
	}
	a, err := root.Find(h, lo, hi, flo, fhi, relTol, 40)
	if errors.Is(err, root.ErrNotBracketed) {
		return 0, fmt.Errorf("SMI conditional threshold of layer %d: alpha F - 1: %w", l+1, err)
	}
	if err != nil && !math.IsNaN(a) {
		return a, nil // 40 evaluations: the bracket's midpoint, as before
	}
	return a, err
}
