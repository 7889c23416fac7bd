package fixedpoint

import "math"

// Steps is the stopping rule of an iteration seen only through the sizes of its steps (GAMP's
// S-hat or What, which are too large to solve for coordinate by coordinate): the estimated
// distance to the fixed point, not the last step, decides convergence.
//
// For an approach at geometric rate r, with step norms s_t = ||x_{t+1} - x_t||, the iterate x_t
// lies sum_k s_t r^k = s_t / (1 - r) from the fixed point: the distance |G(x) - x| / (1 - s)
// of the package comment, written with the damped step and its ratio. r is estimated from the
// ratios of successive step norms: the larger of the last two (one small step is not a
// contraction), clamped to [0, MaxRate]. The steps and distances are squared norms in the
// iteration's own units (||x_new - x||^2 / D), so the distance is step / (1 - r)^2. Where no
// distance can be estimated it is +Inf: before two ratios are known (unless the step is
// exactly zero), and where one of the last two steps did not shrink (ratio >= 1), which is no
// contraction at all: an iterate that wanders (GAMP at finite D jitters about its fixed point
// by the finite-size fluctuation) or cycles.
type Steps struct {
	norms []float64 // the last three step norms, oldest first
}

// MaxRate is the largest contraction rate Steps estimates: a ratio in [MaxRate, 1) counts as
// MaxRate, so the distance is then 1e6 times the step.
const MaxRate = 0.999

// Add records a step (a squared norm) and returns the estimated squared distance to the fixed
// point, in the step's units, and the contraction rate r it used (NaN before two ratios, 1
// where a step did not shrink).
func (s *Steps) Add(step float64) (dist, rate float64) {
	n := math.Sqrt(step)
	s.norms = append(s.norms, n)
	if len(s.norms) > 3 {
		s.norms = s.norms[1:]
	}
	if step == 0 {
		return 0, 0
	}
	if len(s.norms) < 3 {
		return math.Inf(1), math.NaN()
	}
	rate = 0
	for i := 1; i < 3; i++ {
		if s.norms[i-1] == 0 || s.norms[i] >= s.norms[i-1] {
			return math.Inf(1), 1 // a step that did not shrink: no contraction
		}
		rate = math.Max(rate, math.Min(s.norms[i]/s.norms[i-1], MaxRate))
	}
	return step / ((1 - rate) * (1 - rate)), rate
}

// Reset forgets the steps: after a change of the damping, which changes the rate.
func (s *Steps) Reset() { s.norms = s.norms[:0] }
