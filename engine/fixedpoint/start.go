package fixedpoint

import (
	"fmt"
	"math"
)

// Start names the end a state evolution's fixed-point iteration starts from. Each model maps
// it to its own starting point: the AIM's estimation error m0 (engine/aim/se) and the SMI's
// overlaps Q0 (engine/smi/se). One type for both, so that `aim se --start` and
// `aim smi se --start` parse the same words.
type Start int

const (
	// Uninformed starts next to the uninformative point (the AIM: m = 1, q = rho; the SMI:
	// Q = 0.05 I, the authors' start): the published curves' start and the one AMP reaches.
	// It is the zero value.
	Uninformed Start = iota
	// Informed starts next to the planted solution (the AIM: m = 1e-6; the SMI:
	// Q = (1 - 1e-4) I).
	Informed
	// Both solves from both starts; where the two fixed points differ the Bayes-optimal one is
	// the one of largest free entropy.
	Both
)

// String returns "uninformed", "informed" or "both".
func (s Start) String() string {
	switch s {
	case Uninformed:
		return "uninformed"
	case Informed:
		return "informed"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Start(%d)", int(s))
}

// ParseStart parses "uninformed", "informed" or "both".
func ParseStart(s string) (Start, error) {
	for _, v := range []Start{Uninformed, Informed, Both} {
		if s == v.String() {
			return v, nil
		}
	}
	return 0, fmt.Errorf("start %q: want uninformed, informed or both", s)
}

// Distinct reports whether a and b, one quantity of the fixed points reached from the two
// starts, belong to two fixed points rather than one reached twice: |a - b| > gap and
// |a - b| > 1e-2 max(|a|, |b|). Each model sets gap from its solver's tolerance (the AIM's
// deterministic map ends within about Tol of a fixed point; the SMI's Monte Carlo map, on
// common draws, too, but far coarser); the relative part keeps a slowly converging critical
// point from counting as two, since the branches of a first-order transition differ by O(1e-2)
// or more.
func Distinct(a, b, gap float64) bool {
	d := math.Abs(a - b)
	return d > gap && d > 1e-2*math.Max(math.Abs(a), math.Abs(b))
}
