// Package root is aim's one bracketing root finder of scalar functions: the thresholds of both
// models (the AIM's perfect-recovery alpha_PR, the SMI's conditional weak-recovery thresholds)
// are roots of a function of alpha found here.
//
// Find is the Illinois variant of regula falsi: the secant through the bracket's ends, with the
// value at an end that is kept twice in a row halved, so that the bracket shrinks from both
// sides (superlinear convergence, never slower than bisection by more than a constant factor).
// Expand grows a bracket geometrically until the function changes sign.
package root

import (
	"errors"
	"fmt"
	"math"
)

// ErrNotBracketed is wrapped by the errors of Find when f has the same sign at both ends, and
// of Expand when no sign change is found before its limit.
var ErrNotBracketed = errors.New("root not bracketed")

// Func is a scalar function whose root is sought; an error stops the search and is returned.
type Func func(x float64) (float64, error)

// Find returns a root of f in [lo, hi], where f(lo) = flo and f(hi) = fhi have opposite signs
// (or one is 0), to relative tolerance relTol: it stops when the bracket is narrower than
// relTol times the estimate, or at an exact zero, and after maxIter evaluations returns the
// bracket's midpoint with an error. The evaluations of f at the ends are the caller's, so a
// bracket found by Expand costs nothing more.
func Find(f Func, lo, hi, flo, fhi, relTol float64, maxIter int) (float64, error) {
	switch {
	case flo == 0:
		return lo, nil
	case fhi == 0:
		return hi, nil
	case math.IsNaN(flo) || math.IsNaN(fhi):
		return math.NaN(), fmt.Errorf("root: f(%g) = %g, f(%g) = %g", lo, flo, hi, fhi)
	case math.Signbit(flo) == math.Signbit(fhi):
		return math.NaN(), fmt.Errorf("%w by [%g, %g] (f = %g, %g)", ErrNotBracketed, lo, hi, flo, fhi)
	case !(relTol > 0):
		return math.NaN(), fmt.Errorf("root: relative tolerance %g must be positive", relTol)
	}
	side := 0
	for it := 0; it < maxIter; it++ {
		m := (lo*fhi - hi*flo) / (fhi - flo)
		if hi-lo <= relTol*math.Abs(m) {
			return m, nil
		}
		fm, err := f(m)
		if err != nil {
			return math.NaN(), err
		}
		if fm == 0 {
			return m, nil
		}
		if math.Signbit(fm) == math.Signbit(fhi) {
			hi, fhi = m, fm
			if side == 1 {
				flo /= 2
			}
			side = 1
		} else {
			lo, flo = m, fm
			if side == -1 {
				fhi /= 2
			}
			side = -1
		}
	}
	return (lo + hi) / 2, fmt.Errorf("root: bracket [%g, %g] still wider than relative tolerance %g after %d evaluations", lo, hi, relTol, maxIter)
}

// Expand looks for a sign change of f above lo: it evaluates f at hi, hi factor, hi factor^2,
// ... (factor > 1) until f changes sign from f(lo) = flo, and returns the bracket with the
// values at its ends. Past limit it returns ErrNotBracketed (wrapped).
func Expand(f Func, lo, flo, hi, factor, limit float64) (a, b, fa, fb float64, err error) {
	if !(factor > 1) || !(hi > lo) {
		return 0, 0, 0, 0, fmt.Errorf("root: Expand needs factor > 1 and hi > lo, got %g, [%g, %g]", factor, lo, hi)
	}
	for hi <= limit {
		fh, err := f(hi)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if fh == 0 || math.Signbit(fh) != math.Signbit(flo) {
			return lo, hi, flo, fh, nil
		}
		lo, flo, hi = hi, fh, hi*factor
	}
	return 0, 0, 0, 0, fmt.Errorf("%w below %g", ErrNotBracketed, limit)
}
