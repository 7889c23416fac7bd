package se

import (
	"errors"
	"fmt"
	"math"

	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/root"
)

// Transition is a first-order transition of the single-layer SE at one rho: an interval of
// alpha where two stable fixed points coexist (SolveBranches), the uninformed branch of larger
// error and the informed one of smaller error.
type Transition struct {
	// Found is false when no two stable fixed points coexist at any alpha of the scanned grid
	// (then every other field is NaN): the transition, if any, is continuous.
	Found bool
	// AlphaSpinodal is the lower end of the coexistence interval, where the informed branch
	// appears; NaN when it lies below the grid.
	AlphaSpinodal float64
	// AlphaIT is the information-theoretic threshold: the alpha where the free entropies of the
	// two branches cross, Phi_informed(alpha) = Phi_uninformed(alpha). Above it the
	// Bayes-optimal error is the informed branch's. NaN when they do not cross on the interval.
	AlphaIT float64
	// AlphaAlg is the algorithmic threshold: the upper end of the coexistence interval, where
	// the uninformed branch (the one AMP follows from a random start) disappears and its error
	// jumps down; NaN when it lies above the grid.
	AlphaAlg float64
}

// FirstOrder looks for a first-order transition of the single-layer SE at rho on the
// increasing grid alphas: it solves both branches at every grid point, takes the first run of
// coexisting points, and refines its ends (the jumps of |m_uninformed - m_informed|) and the
// crossing of the free entropies inside it with engine/root to relative tolerance relTol (the
// ends, saddle-nodes where the iteration crawls, to the solver's resolution at most). The
// channel must implement aim.Entropic. A grid too coarse to land inside a narrow coexistence
// interval misses it: Found = false means none at the grid's resolution.
func FirstOrder(ch aim.Channel, rho float64, alphas []float64, relTol float64, o Options) (Transition, error) {
	nan := math.NaN()
	tr := Transition{AlphaSpinodal: nan, AlphaIT: nan, AlphaAlg: nan}
	for i := 1; i < len(alphas); i++ {
		if !(alphas[i] > alphas[i-1]) {
			return tr, fmt.Errorf("first-order transition: the alpha grid must increase (alpha[%d] = %g <= %g)", i, alphas[i], alphas[i-1])
		}
	}
	// The ends are jumps located to the solver's resolution: 1e-6 relative at best.
	endTol := math.Max(relTol, 1e-6)
	// split(alpha) > 0 where the branches coexist. Next to a spinodal (a saddle-node) the
	// iteration slows down without bound and may stop at its cap: then its last iterate, which
	// sits in the bottleneck, decides, and the end is located to the solver's resolution.
	var branches []Branches
	split := func(a float64) (float64, error) {
		var m [2]float64
		for i, m0 := range []float64{m0(Uninformed), m0(Informed)} {
			v, _, err := solveScalar(seMap(ch, rho, a), m0, o)
			if err != nil && !errors.Is(err, ErrNotConverged) {
				return nan, err
			}
			m[i] = v
		}
		return coexistSign(o, m[0], m[1]), nil
	}
	// crossing(alpha) = Phi_informed - Phi_uninformed inside the coexistence interval.
	crossing := func(a float64) (float64, error) {
		b, err := SolveBranches(ch, rho, a, o)
		if err != nil {
			return nan, err
		}
		if !b.Coexist {
			return nan, fmt.Errorf("first-order transition at rho = %g: the branches merge at alpha = %g inside the coexistence interval", rho, a)
		}
		return b.PhiInformed - b.PhiUninformed, nil
	}
	k0, k1 := -1, -1
	for i, a := range alphas {
		// The scan solves both starts; the free entropies only where they coexist.
		var b Branches
		ou, oi := o, o
		ou.Start, oi.Start = Uninformed, Informed
		var err error
		if b.Uninformed, err = Solve(ch, rho, a, ou); err != nil {
			return tr, err
		}
		if b.Informed, err = Solve(ch, rho, a, oi); err != nil {
			return tr, err
		}
		if b.Coexist = o.Coexist(b.Uninformed.MMSE, b.Informed.MMSE); b.Coexist {
			if b, err = SolveBranches(ch, rho, a, o); err != nil {
				return tr, err
			}
		}
		branches = append(branches, b)
		if b.Coexist && k0 < 0 {
			k0 = i
		}
		if k0 >= 0 {
			if !b.Coexist {
				break
			}
			k1 = i
		}
	}
	if k0 < 0 {
		return tr, nil
	}
	tr.Found = true
	val := func(b Branches) float64 { return coexistSign(o, b.Uninformed.MMSE, b.Informed.MMSE) }
	var err error
	if k0 > 0 {
		if tr.AlphaSpinodal, err = root.Find(split, alphas[k0-1], alphas[k0], val(branches[k0-1]), val(branches[k0]), endTol, 200); err != nil {
			return tr, fmt.Errorf("spinodal at rho = %g: %w", rho, err)
		}
	}
	if k1+1 < len(alphas) {
		if tr.AlphaAlg, err = root.Find(split, alphas[k1], alphas[k1+1], val(branches[k1]), val(branches[k1+1]), endTol, 200); err != nil {
			return tr, fmt.Errorf("algorithmic threshold at rho = %g: %w", rho, err)
		}
	}
	// The crossing, on the coexisting grid points and just inside the refined ends.
	as := append([]float64(nil), alphas[k0:k1+1]...)
	fs := make([]float64, len(as))
	for i := range as {
		fs[i] = branches[k0+i].PhiInformed - branches[k0+i].PhiUninformed
	}
	for _, end := range []struct {
		a     float64
		first bool
	}{{tr.AlphaSpinodal * (1 + 4*endTol), true}, {tr.AlphaAlg * (1 - 4*endTol), false}} {
		if math.IsNaN(end.a) || (end.first && end.a >= as[0]) || (!end.first && end.a <= as[len(as)-1]) {
			continue
		}
		f, err := crossing(end.a)
		if err != nil {
			continue // the branches merge there already: no end point
		}
		if end.first {
			as, fs = append([]float64{end.a}, as...), append([]float64{f}, fs...)
		} else {
			as, fs = append(as, end.a), append(fs, f)
		}
	}
	for i := 0; i+1 < len(as); i++ {
		if fs[i] == 0 || math.Signbit(fs[i]) != math.Signbit(fs[i+1]) {
			if tr.AlphaIT, err = root.Find(crossing, as[i], as[i+1], fs[i], fs[i+1], relTol, 200); err != nil {
				return tr, fmt.Errorf("information-theoretic threshold at rho = %g: %w", rho, err)
			}
			break
		}
	}
	return tr, nil
}

// coexistSign is +1 where Options.Coexist holds for (mu, mi) and -1 elsewhere: the function
// whose jumps are the ends of the coexistence interval.
func coexistSign(o Options, mu, mi float64) float64 {
	if o.Coexist(mu, mi) {
		return 1
	}
	return -1
}
