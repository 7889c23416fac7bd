package fixedpoint

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Newton is a map G linearised at a point x: G(y) ~ G(x) + J (y - x), with J_ij = dG_i/dx_j.
// Its fixed point is one Newton step from x,
//
//	x* = x + (I - J)^{-1} (G(x) - x),
//
// taken over the free coordinates F (the frozen ones keep their value and their columns of J
// are ignored). Solve's Newton mode (Options.Jacobian) and the SMI state evolution's
// linearisation (its Monte Carlo error and `aim smi se --at`) share it.
type Newton struct {
	Free []int      // the free coordinates, in order
	S    *mat.Dense // (I - J_FF)^{-1}, |F| x |F|
}

// ErrSingular is wrapped by NewNewton's error when I - J is singular on the free coordinates
// (a map of slope 1: a threshold, where the linearised fixed point does not exist).
var ErrSingular = errors.New("I - J is singular")

// NewNewton returns the linearisation with Jacobian J (n x n, row-major) over the coordinates
// that frozen (nil: none) does not mark, or an error wrapping ErrSingular.
func NewNewton(J []float64, n int, frozen []bool) (Newton, error) {
	if len(J) != n*n || (frozen != nil && len(frozen) != n) {
		return Newton{}, fmt.Errorf("fixed point: Jacobian of %d entries and %d frozen flags for %d coordinates", len(J), len(frozen), n)
	}
	var nw Newton
	for i := 0; i < n; i++ {
		if frozen == nil || !frozen[i] {
			nw.Free = append(nw.Free, i)
		}
	}
	nf := len(nw.Free)
	if nf == 0 {
		return nw, nil
	}
	ij := mat.NewDense(nf, nf, nil)
	for a, i := range nw.Free {
		for b, j := range nw.Free {
			v := -J[i*n+j]
			if a == b {
				v++
			}
			ij.Set(a, b, v)
		}
	}
	var S mat.Dense
	if err := S.Inverse(ij); err != nil {
		return Newton{}, fmt.Errorf("fixed point: %w (%v)", ErrSingular, err)
	}
	nw.S = &S
	return nw, nil
}

// Step writes the Newton step x* - x = (I - J)^{-1} (gx - x) into step (0 on the frozen
// coordinates), where gx = G(x).
func (nw Newton) Step(step, x, gx []float64) {
	for i := range step {
		step[i] = 0
	}
	for a, i := range nw.Free {
		for b, j := range nw.Free {
			step[i] += nw.S.At(a, b) * (gx[j] - x[j])
		}
	}
}

// StepErr writes into sd the standard error of the step carried from independent standard
// errors se of G(x): sd_i^2 = sum_j S_ij^2 se_j^2 (0 on the frozen coordinates).
func (nw Newton) StepErr(sd, se []float64) {
	for i := range sd {
		sd[i] = 0
	}
	for a, i := range nw.Free {
		v := 0.0
		for b, j := range nw.Free {
			s := nw.S.At(a, b) * se[j]
			v += s * s
		}
		sd[i] = math.Sqrt(v)
	}
}

// solveNewton is Solve with Options.Jacobian: Newton steps from x0 until every free
// coordinate's step is below Tol or (with Noise) within NoiseFactor of its standard error
// (StepErr). The answer is the last point where G was evaluated, whose step is that small;
// Result.Distance is its largest step. Newton's linear model can be wrong far from the fixed
// point or on a map rough at the step's scale (few Monte Carlo draws): a step that leaves the
// domain above (past Upper; below, it is clamped to Lower, where a layer at the trivial fixed
// point sits) or a point whose residual max |G(x) - x| is not below the last one's ends the
// Newton steps, and the damped iteration (the rest of the package) goes on from the last
// point whose residual fell, with the evaluations left.
func solveNewton(G Map, x0 []float64, o Options) (Result, error) {
	n := len(x0)
	x := append([]float64(nil), x0...)
	gx := make([]float64, n)
	J := make([]float64, n*n)
	step := make([]float64, n)
	var se, sd []float64
	if o.Noise != nil {
		se, sd = make([]float64, n), make([]float64, n)
	}
	res := Result{X: x, GX: gx, Distance: math.Inf(1)}
	last, lastResidual := append([]float64(nil), x0...), math.Inf(1) // where the residual last fell
	damped := func() (Result, error) {
		od := o
		od.Jacobian, od.MaxIter = nil, o.MaxIter-res.Evals
		if od.MaxIter < 1 {
			return res, fmt.Errorf("%w after %d evaluations (Newton's step failed, none left for damped iteration)", ErrNotConverged, res.Evals)
		}
		r, err := Solve(G, last, od)
		r.Evals += res.Evals
		return r, err
	}
	for res.Evals < o.MaxIter {
		if err := G(gx, x); err != nil {
			return res, err
		}
		res.Evals++
		r := 0.0
		for i, v := range gx {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return res, fmt.Errorf("%w: G(x)_%d = %g at evaluation %d", ErrDiverged, i, v, res.Evals)
			}
			if o.Frozen == nil || !o.Frozen[i] {
				r = math.Max(r, math.Abs(v-x[i]))
			}
		}
		if !(r < lastResidual) {
			return damped()
		}
		copy(last, x)
		lastResidual = r
		if se != nil {
			o.Noise(se)
		}
		if err := o.Jacobian(J, x, gx); err != nil {
			return res, fmt.Errorf("fixed point: the Jacobian at evaluation %d: %w", res.Evals, err)
		}
		nw, err := NewNewton(J, n, o.Frozen)
		if err != nil {
			return res, fmt.Errorf("Newton step at evaluation %d: %w", res.Evals, err)
		}
		nw.Step(step, x, gx)
		if sd != nil {
			nw.StepErr(sd, se)
		}
		done, byNoise := true, false
		res.Distance = 0
		for _, i := range nw.Free {
			d := math.Abs(step[i])
			res.Distance = math.Max(res.Distance, d)
			switch {
			case d < o.Tol:
			case sd != nil && d <= NoiseFactor*sd[i]:
				byNoise = true
			default:
				done = false
			}
		}
		if done {
			res.Converged, res.NoiseLimited = true, byNoise
			return res, nil
		}
		for _, i := range nw.Free {
			if x[i]+step[i] > o.Upper {
				return damped()
			}
		}
		if res.Evals >= o.MaxIter {
			break
		}
		for _, i := range nw.Free {
			x[i] = math.Max(x[i]+step[i], o.Lower)
		}
	}
	return res, fmt.Errorf("%w after %d Newton steps (step %.3g > tol %.3g)", ErrNotConverged, res.Evals, res.Distance, o.Tol)
}
