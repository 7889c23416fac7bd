// Package fixedpoint is aim's one solver of fixed points x = G(x) of vector-valued maps: the
// state evolutions of both models (the AIM's estimation error, the SMI's P overlaps) are
// solved here, with one damping convention, one acceleration and one stopping rule.
//
// Damping. Theta in [0, 1) is the weight kept on the old iterate:
//
//	x_{t+1} = (1 - theta) G(x_t) + theta x_t.
//
// (The SMI paper and the authors' code write rho = 1 - theta, the weight on the new iterate;
// the command line translates at its edge.)
//
// Stopping. The iteration stops when every free coordinate's estimated distance to the fixed
// point is below Tol. For a map of slope s in a coordinate the distance from x to the fixed
// point is |G(x) - x| / (1 - s); s is estimated from the ratio r of the last two damped steps,
// r = theta + (1 - theta) s, when that gives 0 < s < 1 (clamped at 0.999), and the distance is
// the plain residual |G(x) - x| otherwise. Near a threshold s tends to 1 and the residual alone
// would stop far from the fixed point; elsewhere the two agree.
//
// Noise. A Monte Carlo map (the SMI state evolution with sampled channel integrals) is not
// smooth below its own standard error: one draw of heavy weight moves G by a sizeable part of
// that error when x moves by 1e-4, and the iterates then jitter about the fixed point without
// settling to Tol. With Options.Noise, a coordinate has also settled when its last damped step
// reversed direction (the step ratio r < 0: jitter, not a monotone approach, which a slow
// approach near a threshold would be) and its residual |G(x) - x| is at most NoiseFactor
// times the standard error of G(x). The fixed point is then known to within NoiseFactor of
// its own Monte Carlo error (the same (1 - s)^{-1} carries both), so iterating longer refines
// nothing; Result.NoiseLimited records that the rule was used.
//
// Acceleration (Aitken's delta-squared, accepted on the residual). After three damped steps
// since the last jump, every coordinate whose step ratio r is in (0, 1) and was the same one
// step earlier (|r - r'| < 0.1 (1 - r): a geometric approach, not the transient away from an
// unstable point) jumps to x + step r / (1 - r), clamped to [Lower, Upper]. The jump is kept
// only when the residual there is smaller than at the damped iterate; otherwise the iteration
// goes on from the damped iterate. Near a threshold, where plain iteration crawls, this is what
// makes the solver fast.
//
// Newton's method (Options.Jacobian). Where the map is flat (slope near 1, as in the SMI state
// evolution where a layer rises behind a sharp one) and each evaluation is costly, damped
// iteration needs tens to hundreds of evaluations; Newton's step x + (I - J)^{-1}(G(x) - x)
// (type Newton) needs a few, each with the Jacobian's cost. It finds any fixed point, stable or
// not (at the uninformative point Q = 0 of a layer above its threshold it stays there), so it is
// for refining a point already near the stable one: a damped solve's answer at more samples, or
// a point from elsewhere. It takes no damping and no jumps; it stops when every free
// coordinate's step is below Tol or, with Noise, within NoiseFactor of the step's own standard
// error.
package fixedpoint

import (
	"errors"
	"fmt"
	"math"
)

// ErrNotConverged is wrapped by the error Solve returns when MaxIter evaluations of G pass
// before the stopping rule holds. The Result beside it holds the last iterate.
var ErrNotConverged = errors.New("fixed-point iteration did not converge")

// ErrDiverged is wrapped by the error Solve returns when G produces NaN or an infinity.
var ErrDiverged = errors.New("fixed-point iteration diverged")

// Map evaluates G: it writes G(x) into dst (len(dst) = len(x)); it must not keep x or dst.
type Map func(dst, x []float64) error

// Options control Solve.
type Options struct {
	Damping    float64 // theta in [0, 1): the weight on the old iterate
	Tol        float64 // stopping tolerance on the estimated distance to the fixed point
	MaxIter    int     // cap on the evaluations of G
	Accelerate bool    // Aitken jumps (see the package comment)
	// Lower and Upper bound every coordinate (the map's domain); the jumps are clamped to them.
	Lower, Upper float64
	// Frozen coordinates keep their starting value and are not tested (nil: none).
	Frozen []bool
	// Noise, when set, is called after every evaluation of G and writes into dst the standard
	// error of each coordinate of the value G has just written (a Monte Carlo map; see the
	// package comment). nil: G is exact and only Tol stops the iteration.
	Noise func(dst []float64)
	// Jacobian, when set, makes Solve take Newton steps (see the package comment) instead of
	// damped ones: after each evaluation G(x) = gx it writes J_ij = dG_i/dx_j at x into J
	// (n x n, row-major). Damping and Accelerate are then unused.
	Jacobian func(J, x, gx []float64) error
}

// NoiseFactor is the largest residual, in standard errors of G, at which a jittering
// coordinate of a Monte Carlo map has settled (Options.Noise).
const NoiseFactor = 0.5

// Validate reports the first option out of range.
func (o Options) Validate(n int) error {
	switch {
	case !(o.Damping >= 0 && o.Damping < 1):
		return fmt.Errorf("fixed point: damping %g outside [0, 1) (the weight on the old iterate)", o.Damping)
	case !(o.Tol > 0):
		return fmt.Errorf("fixed point: tolerance %g must be positive", o.Tol)
	case o.MaxIter < 1:
		return fmt.Errorf("fixed point: iteration cap %d must be at least 1", o.MaxIter)
	case !(o.Lower < o.Upper):
		return fmt.Errorf("fixed point: domain [%g, %g] is empty", o.Lower, o.Upper)
	case o.Frozen != nil && len(o.Frozen) != n:
		return fmt.Errorf("fixed point: %d frozen flags for %d coordinates", len(o.Frozen), n)
	}
	return nil
}

// Result is the outcome of Solve.
type Result struct {
	X         []float64 // the fixed point (the last iterate when not converged)
	GX        []float64 // G(X)
	Evals     int       // evaluations of G
	Distance  float64   // the estimated distance to the fixed point at X (max over coordinates)
	Converged bool
	// NoiseLimited: some coordinate settled by the noise rule (Options.Noise), not by Tol.
	NoiseLimited bool
}

// Solve iterates the damped map from x0 until the stopping rule holds (see the package
// comment). It returns the Result and, when it did not converge, an error wrapping
// ErrNotConverged (or ErrDiverged, or G's own error) with the Result's last iterate.
func Solve(G Map, x0 []float64, o Options) (Result, error) {
	n := len(x0)
	if err := o.Validate(n); err != nil {
		return Result{}, err
	}
	if o.Jacobian != nil {
		return solveNewton(G, x0, o)
	}
	free := func(i int) bool { return o.Frozen == nil || !o.Frozen[i] }
	theta := o.Damping
	x := append([]float64(nil), x0...)
	gx := make([]float64, n)
	step := make([]float64, n)      // the last damped step, per coordinate
	ratio := make([]float64, n)     // step_t / step_{t-1}
	prevRatio := make([]float64, n) // the ratio one step earlier
	y := make([]float64, n)
	gy := make([]float64, n)
	var nx, ny []float64 // the standard errors of gx and gy (Options.Noise)
	if o.Noise != nil {
		nx, ny = make([]float64, n), make([]float64, n)
	}
	res := Result{}
	eval := func(dst, noise, at []float64) error {
		if err := G(dst, at); err != nil {
			return err
		}
		res.Evals++
		for i, v := range dst {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: G(x)_%d = %g at evaluation %d", ErrDiverged, i, v, res.Evals)
			}
		}
		if o.Noise != nil {
			o.Noise(noise)
		}
		return nil
	}
	// dist returns coordinate i's estimated distance to the fixed point at x with G(x) = g.
	dist := func(i int, x, g []float64) float64 {
		d := math.Abs(g[i] - x[i])
		// The slope s of G from the damped step ratio r = theta + (1 - theta) s.
		if s := (ratio[i] - theta) / (1 - theta); s > 0 && s < 1 {
			d /= 1 - math.Min(s, 0.999)
		}
		return d
	}
	// distance returns the largest over the free coordinates.
	distance := func(x, g []float64) float64 {
		d := 0.0
		for i := range x {
			if free(i) {
				d = math.Max(d, dist(i, x, g))
			}
		}
		return d
	}
	// settled reports whether every free coordinate meets Tol or, with Noise, the noise rule,
	// and whether the noise rule was needed.
	settled := func() (ok, byNoise bool) {
		for i := range x {
			if !free(i) {
				continue
			}
			switch {
			case dist(i, x, gx) < o.Tol:
			case nx != nil && ratio[i] < 0 && math.Abs(gx[i]-x[i]) <= NoiseFactor*nx[i]:
				byNoise = true
			default:
				return false, false
			}
		}
		return true, byNoise
	}
	finish := func(err error) (Result, error) {
		res.X, res.GX = x, gx
		res.Distance = distance(x, gx)
		return res, err
	}
	if err := eval(gx, nx, x); err != nil {
		return finish(err)
	}
	sinceJump := 0
	for {
		if ok, byNoise := settled(); ok {
			res.Converged, res.NoiseLimited = true, byNoise
			return finish(nil)
		}
		if res.Evals >= o.MaxIter {
			return finish(fmt.Errorf("%w after %d evaluations (distance %.3g > tol %.3g)", ErrNotConverged, res.Evals, distance(x, gx), o.Tol))
		}
		// The damped step.
		for i := range x {
			if !free(i) {
				y[i] = x[i]
				continue
			}
			y[i] = (1-theta)*gx[i] + theta*x[i]
			s := y[i] - x[i]
			r := 0.0
			if step[i] != 0 {
				r = s / step[i]
			}
			prevRatio[i], ratio[i], step[i] = ratio[i], r, s
		}
		if err := eval(gy, ny, y); err != nil {
			x, gx = y, gy
			return finish(err)
		}
		x, y = y, x
		gx, gy = gy, gx
		nx, ny = ny, nx
		sinceJump++
		if !o.Accelerate || sinceJump < 3 || res.Evals >= o.MaxIter {
			continue
		}
		// The Aitken jump, into y, tested on the residual.
		jumped := false
		for i := range x {
			y[i] = x[i]
			if !free(i) {
				continue
			}
			if r := ratio[i]; r > 0 && r < 1 && math.Abs(r-prevRatio[i]) < 0.1*(1-r) {
				y[i] = math.Min(math.Max(x[i]+step[i]*r/(1-r), o.Lower), o.Upper)
				jumped = jumped || y[i] != x[i]
			}
		}
		if !jumped {
			continue
		}
		sinceJump = 0
		if err := eval(gy, ny, y); err != nil {
			return finish(err)
		}
		if maxResidual(gy, y) < maxResidual(gx, x) {
			x, y = y, x
			gx, gy = gy, gx
			nx, ny = ny, nx
			for i := range step {
				step[i], ratio[i], prevRatio[i] = 0, 0, 0
			}
		}
	}
}

// maxResidual returns max_i |g_i - x_i|.
func maxResidual(g, x []float64) float64 {
	m := 0.0
	for i := range x {
		m = math.Max(m, math.Abs(g[i]-x[i]))
	}
	return m
}
