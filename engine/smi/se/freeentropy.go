package se

import (
	"math"

	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/smi"
)

// The free entropy of the SMI state evolution (docs/theory/smi.md 2.1), per D, for the
// Gaussian prior w*_l ~ N(0, 1) and diagonal overlaps:
//
//	Phi(Q, q-hat; alpha) = psi_in(q-hat) - tr(Q q-hat)/2 + alpha psi_out(Q),
//	psi_in(q-hat)        = sum_l (q-hat_l - log(1 + q-hat_l)) / 2,
//	psi_out(Q)           = E_{xi, eta} log Z_out(y; omega, V),  V = I - Q + epsilon I.
//
// psi_in is E_{w*, xi} log int dw N(w; 0, 1) exp(-q-hat w^2/2 + w (q-hat w* + sqrt(q-hat) xi))
// = -log(1 + q-hat)/2 + E b^2 / (2 (1 + q-hat)) with E b^2 = q-hat^2 + q-hat (docs/theory/smi.md
// 2.1). The form tr[q-hat (I + q-hat)^{-1}]/2 - log det(I + q-hat)/2 that some write-ups use
// is wrong: its derivative in q-hat_l is -Q_l / (2 (1 + q-hat_l)) < 0, while the stationarity of Phi in q-hat must give the SE's prior
// update, d psi_in/d q-hat_l = Q_l/2 <=> Q_l = q-hat_l/(1 + q-hat_l) (TestPsiInStationarity,
// and the envelope identity TestSMIEnvelope, which that form fails). The
// channel's stationarity d psi_out/dQ_l = E[sum_tokens g_out,l^2]/2 (half the average that
// Fisher returns) gives q-hat = alpha E[sum_tokens g_out,l^2]: the fixed points of the SE are the stationary points of Phi, and by the
// envelope theorem dPhi/dalpha along a branch of fixed points is psi_out (TestSMIEnvelope).
//
// Z_out is the density of the pair +-u of pre-activations that the output y fixes
// (smi.DeepMoments.LogZ, Gaussian normalisations included), not a density of y: the Jacobian
// of u -> y depends on y alone, whose law (that of the teacher's outputs) does not depend on
// Q, so it adds alpha times a Q-independent constant to Phi, the same at every fixed point of
// one alpha. The
// Bayes-optimal fixed point is the one of largest Phi.

// PsiIn returns the prior part of the free entropy for the Gaussian prior,
// psi_in(q-hat) = sum_l (q-hat_l - log(1 + q-hat_l)) / 2 (see the comment above), whose
// derivative in q-hat_l is Q_l/2 with Q_l = q-hat_l/(1 + q-hat_l).
func PsiIn(qhat []float64) float64 {
	var s float64
	for _, h := range qhat {
		s += (h - math.Log1p(h)) / 2
	}
	return s
}

// FreeEntropy returns Phi(Q, q-hat; alpha) = psi_in(q-hat) - sum_l Q_l q-hat_l / 2 +
// alpha psi_out for the diagonal overlaps Q, their conjugates q-hat and the channel average
// psiOut = psi_out(Q) (PsiOut). At a fixed point of the SE it is the free entropy of that
// branch (Point.FreeEntropy).
func FreeEntropy(alpha float64, Q, qhat []float64, psiOut float64) float64 {
	phi := PsiIn(qhat) + alpha*psiOut
	for l := range Q {
		phi -= Q[l] * qhat[l] / 2
	}
	return phi
}

// CoexistGap is the absolute part of Options.Coexist: max(1e-3, 100 Tol).
func (o Options) CoexistGap() float64 { return math.Max(1e-3, 100*o.Tol) }

// Coexist reports whether the fixed points u and i reached from the two starts are two
// distinct fixed points, not one reached twice: both converged, and some layer's Q_ll differs
// by more than CoexistGap, by more than 1e-2 of the larger, and, where the two were solved at
// different sample counts (Options.MCError) or either stopped by the noise rule
// (Point.NoiseLimited, within about half its QErr of the fixed point), by more than 4 times the
// combined standard error hypot(QErr_u, QErr_i). On one sample count the two solves iterate the
// same deterministic map (common random numbers), so that otherwise one fixed point is reached
// from both ends to about Tol.
func (o Options) Coexist(u, i Point) bool {
	if !u.Converged || !i.Converged {
		return false
	}
	for l := range u.Q {
		if !fixedpoint.Distinct(u.Q[l], i.Q[l], o.CoexistGap()) {
			continue
		}
		loose := u.Samples != i.Samples || u.NoiseLimited || i.NoiseLimited
		if loose && !(math.Abs(u.Q[l]-i.Q[l]) > 4*math.Hypot(u.QErr[l], i.QErr[l])) {
			continue
		}
		return true
	}
	return false
}

// Branches are the fixed points of the SMI SE reached from both starts at one alpha.
type Branches struct {
	Uninformed, Informed Point
	// Coexist is true where the two are distinct (Options.Coexist): two stable fixed points
	// (the damped iteration converges only to stable ones).
	Coexist bool
}

// Optimal returns the Bayes-optimal fixed point, the one of larger free entropy, with Start,
// Coexist and Other set (Point). Where the branches do not coexist it is the uninformed one
// with Start = Both, so the published curves are reproduced unchanged. It is converged only
// if both solves converged: where one did not, nothing is known of a second branch, and the
// uninformed point is returned unconverged. Its Iterations are those of both solves.
func (b Branches) Optimal() Point {
	n := b.Uninformed.Iterations + b.Informed.Iterations
	if !b.Uninformed.Converged || !b.Informed.Converged {
		p := b.Uninformed
		p.Start, p.Iterations, p.Converged = Both, n, false
		p.FreeEntropy, p.FreeEntropyErr = math.NaN(), math.NaN()
		return p
	}
	if !b.Coexist {
		p := b.Uninformed
		p.Start, p.Iterations = Both, n
		return p
	}
	best, other := b.Uninformed, b.Informed
	if b.Informed.FreeEntropy > b.Uninformed.FreeEntropy {
		best, other = b.Informed, b.Uninformed
	}
	best.Coexist, best.Other, best.Iterations = true, &other, n
	return best
}

// SolveBranches solves the SMI SE at alpha from the uninformed start (continued from
// o's curve start, as Solve) and from the informed one, Q = QInformed I (o.Start is ignored),
// with the free entropy of each fixed point.
func SolveBranches(ch *smi.Deep, alpha float64, o Options) (Branches, error) {
	var b Branches
	var err error
	ou, oi := o, o
	ou.Start, oi.Start = Uninformed, Informed
	oi.start = nil
	if b.Uninformed, err = Solve(ch, alpha, ou); err != nil {
		return b, err
	}
	if b.Informed, err = Solve(ch, alpha, oi); err != nil {
		return b, err
	}
	b.Coexist = o.Coexist(b.Uninformed, b.Informed)
	return b, nil
}
