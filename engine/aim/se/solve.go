// Package se solves the state evolution (SE) of Bayes-optimal learning in the single-layer
// attention-indexed model (docs/theory/aim.md section 2): the scalar overlap q of the RIE prior side
// coupled to the output channel through q-hat, the rho -> 0 rescaled SE, the perfect-recovery and
// weak-recovery thresholds, the Bayes-optimal generalisation error on the outputs y, and the free
// entropy Phi that selects between fixed points reached from the uninformed and informed starts
// (freeentropy.go; first-order transitions in transition.go).
package se

import (
	"errors"
	"fmt"
	"math"

	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/rie"
)

// ErrNotConverged is wrapped by the error a solver returns when it reaches its iteration cap
// before the convergence test holds. The Point it returns beside it has Converged = false and
// must not be reported as a result.
var ErrNotConverged = errors.New("state evolution did not converge")

// Options control the damped fixed-point iteration of the state evolution (engine/fixedpoint),
// written in the estimation errors m = Q0 - q:
//
//	m <- (1 - Damping) G(m) + Damping m.
type Options struct {
	// Damping theta in [0, 1): the weight kept on the old iterate (fixedpoint's convention).
	Damping float64
	// Tol bounds the estimated distance to the fixed point, |G(m) - m| / (1 - slope).
	Tol float64
	// MaxIter caps the number of evaluations of the map G.
	MaxIter int
	// Accelerate adds the solver's Aitken jumps, accepted only when they lower the residual; it
	// matters near alpha_PR, where the map's slope tends to 1 and plain iteration crawls.
	Accelerate bool
	// Start is the starting point: Uninformed (the zero value, m = 1), Informed (m =
	// MInformed) or Both (see SolveBranches; Solve then returns the Bayes-optimal fixed point).
	Start Start
}

// DefaultOptions returns damping 0.5, tolerance 1e-12, 20000 iterations, with acceleration.
func DefaultOptions() Options {
	return Options{Damping: 0.5, Tol: 1e-12, MaxIter: 20000, Accelerate: true}
}

// solver returns the fixed-point options of the SE on the estimation errors m in [0, 1]; the
// solver validates them.
func (o Options) solver() fixedpoint.Options {
	return fixedpoint.Options{Damping: o.Damping, Tol: o.Tol, MaxIter: o.MaxIter, Accelerate: o.Accelerate, Lower: 0, Upper: 1}
}

// Overlaps are the order parameters of the AIM state evolution in the solver's variable: the
// estimation errors m = Q0 - q of the packed upper triangle of a symmetric L x L overlap
// matrix, row by row. The single-layer AIM has L = 1 and one m; a model of L attention layers
// would iterate the L(L+1)/2 entries with the same solver.
type Overlaps struct {
	L    int
	MMSE []float64 // m_ab = Q0_ab - q_ab, a <= b, packed
}

// NewOverlaps returns the L x L overlaps with every m_ab = m (the field MMSE).
func NewOverlaps(L int, m float64) Overlaps {
	o := Overlaps{L: L, MMSE: make([]float64, L*(L+1)/2)}
	for i := range o.MMSE {
		o.MMSE[i] = m
	}
	return o
}

// Point is one solved point of a state evolution curve.
type Point struct {
	Alpha      float64 // sample complexity alpha = N/D^2 (alpha-bar_r = N/(D R) in the rescaled SE)
	Rho        float64 // rank ratio rho = R/D (0 in the rescaled SE)
	MMSE       float64 // estimation error m = Q0 - q = lim ||S_hat - S||_F^2 / D
	Q          float64 // overlap q = Tr(S S_hat)/D
	QHat       float64 // conjugate q-hat = 2 alpha FisherSum(q, Q0 - q); +Inf at perfect recovery
	Iterations int     // evaluations of the SE map
	Converged  bool
}

// solveScalar solves the single-layer SE m = G(m) on [0, 1] from m0 with engine/fixedpoint. It
// returns the last iterate, the number of evaluations of G, and ErrNotConverged (wrapped)
// when MaxIter is reached.
func solveScalar(G func(m float64) (float64, error), m0 float64, o Options) (float64, int, error) {
	return solveScalarIn(G, m0, o, o.solver())
}

// solveScalarIn is solveScalar with the fixed-point options fo (a domain other than [0, 1]).
func solveScalarIn(G func(m float64) (float64, error), m0 float64, o Options, fo fixedpoint.Options) (float64, int, error) {
	x0 := NewOverlaps(1, m0)
	r, err := fixedpoint.Solve(func(dst, m []float64) error {
		g, err := G(m[0])
		dst[0] = g
		return err
	}, x0.MMSE, fo)
	if err != nil && r.X == nil {
		return math.NaN(), r.Evals, fmt.Errorf("se: %w", err)
	}
	if errors.Is(err, fixedpoint.ErrNotConverged) {
		err = fmt.Errorf("%w: %v", ErrNotConverged, err)
	}
	if r.Converged {
		return r.GX[0], r.Evals, nil
	}
	return r.X[0], r.Evals, err
}

// qHat returns q-hat = 2 alpha FisherSum(Q0 - m, m), +Inf when m = 0.
func qHat(ch aim.Channel, alpha, Q0, m float64) (float64, error) {
	if m <= 0 {
		return math.Inf(1), nil
	}
	f, err := ch.FisherSum(Q0-m, m)
	if err != nil {
		return math.NaN(), err
	}
	return 2 * alpha * f, nil
}

// Solve returns the fixed point of the single-layer SE (docs/theory/aim.md 2.1)
//
//	q-hat = 2 alpha FisherSum(q, Q0 - q),   q = Q0 - mmse_S(1/q-hat; rho),   Q0 = 1 + rho,
//
// reached from o.Start: the uninformative start q = rho (m = 1, the zero value), the informed
// start m = MInformed, or Both, which returns the fixed point of largest free entropy
// (SolveBranches, Branches.Optimal). On ErrNotConverged the Point is still returned, with
// Converged = false.
func Solve(ch aim.Channel, rho, alpha float64, o Options) (Point, error) {
	if err := checkRhoAlpha(rho, alpha); err != nil {
		return Point{}, err
	}
	if o.Start == Both {
		return solveBoth(ch, rho, alpha, o)
	}
	Q0 := 1 + rho
	m, n, err := solveScalar(seMap(ch, rho, alpha), m0(o.Start), o)
	return finish(ch, rho, alpha, Q0, m, n, err)
}

// SolvePrior is Solve for a teacher of any rotationally invariant law (rie.Prior, from
// aim.Params.Prior: a power-law spectrum):
//
//	q-hat = 2 alpha FisherSum(q, Q0 - q),   q = Q0 - mmse(1/q-hat),
//
// with Q0 = (1/D) Tr S^2 and mmse the RIE's error of that prior (rie.Noisy.MMSE), from the
// uninformed start m = Q0 - mean^2 (the error of E S) or the informed one. MP(rho) is Solve
// itself; for another prior the Point's Rho is the fraction of nonzero eigenvalues when the
// prior lists them, and Start Both (the free entropy) is refused: it is computed for MP only.
func SolvePrior(ch aim.Channel, prior rie.Prior, alpha float64, o Options) (Point, error) {
	if mp, ok := prior.(rie.MP); ok {
		return Solve(ch, mp.Rho, alpha, o)
	}
	if o.Start == Both {
		return Point{}, errors.New("se: the free entropy (both starts) is computed for the Marchenko-Pastur teacher only")
	}
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return Point{}, fmt.Errorf("se: alpha = %g, need 0 < alpha < inf", alpha)
	}
	Q0, mean := prior.Q0(), prior.Mean()
	v := Q0 - mean*mean
	G := func(m float64) (float64, error) {
		qh, err := qHat(ch, alpha, Q0, m)
		if err != nil {
			return math.NaN(), err
		}
		if math.IsInf(qh, 1) {
			return 0, nil
		}
		sp, err := prior.Noisy(1 / qh)
		if err != nil {
			return math.NaN(), err
		}
		return sp.MMSE(), nil
	}
	start := v
	if o.Start == Informed {
		start = MInformed
	}
	fo := o.solver()
	fo.Upper = v
	m, n, err := solveScalarIn(G, start, o, fo)
	rank := math.NaN()
	if e, ok := prior.(rie.Eigenvalues); ok {
		k := 0
		for _, w := range e {
			if w != 0 {
				k++
			}
		}
		rank = float64(k) / float64(len(e))
	}
	return finish(ch, rank, alpha, Q0, m, n, err)
}

// seMap is the single-layer SE map G(m) = mmse_S(1/q-hat(m); rho).
func seMap(ch aim.Channel, rho, alpha float64) func(m float64) (float64, error) {
	Q0 := 1 + rho
	return func(m float64) (float64, error) {
		qh, err := qHat(ch, alpha, Q0, m)
		if err != nil {
			return math.NaN(), err
		}
		return priorMMSE(1/qh, rho)
	}
}

// SolveRescaled returns the fixed point of the rho -> 0 rescaled SE at alpha-bar_r = N/(D R)
// (docs/theory/aim.md 2.3, the code's SE_hardmax_rho=0.py): Q0 = 1,
//
//	t = 1/q-hat_r,  q-hat_r = 2 alpha-bar_r FisherSum(q, 1 - q),  q = (1 - t)^2 for t < 1, else 0,
//
// i.e. the spiked-Wigner form mmse = t (2 - t). It starts from q = 0.
func SolveRescaled(ch aim.Channel, alphaR float64, o Options) (Point, error) {
	if !(alphaR > 0) || math.IsInf(alphaR, 0) {
		return Point{}, fmt.Errorf("se: alpha-bar_r = %g, need 0 < alpha-bar_r < inf", alphaR)
	}
	G := func(m float64) (float64, error) {
		qh, err := qHat(ch, alphaR, 1, m)
		if err != nil {
			return math.NaN(), err
		}
		t := 1 / qh
		if t >= 1 {
			return 1, nil
		}
		return t * (2 - t), nil
	}
	m, n, err := solveScalar(G, m0(o.Start), o)
	return finish(ch, 0, alphaR, 1, m, n, err)
}

func finish(ch aim.Channel, rho, alpha, Q0, m float64, n int, err error) (Point, error) {
	p := Point{Alpha: alpha, Rho: rho, MMSE: m, Q: Q0 - m, Iterations: n, Converged: err == nil}
	if err != nil {
		p.MMSE, p.Q, p.QHat = math.NaN(), math.NaN(), math.NaN()
		return p, fmt.Errorf("se %s: rho = %g, alpha = %g: %w", ch.Name(), rho, alpha, err)
	}
	qh, qerr := qHat(ch, alpha, Q0, m)
	if qerr != nil {
		return p, qerr
	}
	p.QHat = qh
	return p, nil
}

func checkRhoAlpha(rho, alpha float64) error {
	if !(rho > 0) || math.IsInf(rho, 0) {
		return fmt.Errorf("se: rho = %g, need 0 < rho < inf", rho)
	}
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return fmt.Errorf("se: alpha = %g, need 0 < alpha < inf", alpha)
	}
	return nil
}

// priorMMSE returns mmse_S(Delta; rho), the RIE denoising error of MP(rho) observed through
// Gaussian (GOE) noise of variance Delta, with the limits Delta = 0 (error 0) and Delta = inf
// (error 1, the prior variance once the known mean sqrt(rho) I is removed).
func priorMMSE(delta, rho float64) (float64, error) {
	switch {
	case delta == 0:
		return 0, nil
	case math.IsInf(delta, 1):
		return 1, nil
	}
	return rie.MMSE(delta, rho)
}
