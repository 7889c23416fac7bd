package se

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/engine/aim"
)

// TestLinearInvariants: the state evolution of the linear channel (the quadratic network,
// docs/theory/aim.md 2.8) over a grid of rho, alpha and Delta: 0 <= mmse <= 1, mmse
// non-increasing in alpha and non-decreasing in Delta, mmse -> 1 as alpha -> 0 (within 1e-3 of
// 1 at alpha = 1e-4), mmse = 0 past alpha_PR without noise and > 0 at every alpha with it, and
// the q-hat equation q-hat = 2 alpha/(V + Delta/2) at every point.
func TestLinearInvariants(t *testing.T) {
	alphas := []float64{1e-4, 0.02, 0.08, 0.15, 0.25, 0.35, 0.45, 0.55, 0.8}
	deltas := []float64{0, 0.01, 0.25, 1, 4}
	for _, rho := range []float64{0.1, 0.5, 1, 3} {
		prev := make([]float64, len(alphas)) // mmse at the previous (smaller) Delta
		for _, delta := range deltas {
			ch, err := aim.NewLinear(delta)
			if err != nil {
				t.Fatal(err)
			}
			pr := rho - rho*rho/2
			if rho >= 1 {
				pr = 0.5
			}
			last := math.Inf(1)
			for i, alpha := range alphas {
				p, err := Solve(ch, rho, alpha, DefaultOptions())
				if err != nil || !p.Converged {
					t.Fatalf("rho %g Delta %g alpha %g: %v (converged %v)", rho, delta, alpha, err, p.Converged)
				}
				m := p.MMSE
				switch {
				case !(m >= 0 && m <= 1):
					t.Errorf("rho %g Delta %g alpha %g: mmse %g outside [0, 1]", rho, delta, alpha, m)
				case m > last+1e-9:
					t.Errorf("rho %g Delta %g alpha %g: mmse %g above %g at the smaller alpha", rho, delta, alpha, m, last)
				case delta > 0 && m < prev[i]-1e-9:
					t.Errorf("rho %g Delta %g alpha %g: mmse %g below %g at the smaller Delta", rho, delta, alpha, m, prev[i])
				case alpha == 1e-4 && 1-m > 1e-3:
					t.Errorf("rho %g Delta %g alpha %g: mmse %g, want about 1", rho, delta, alpha, m)
				case delta == 0 && alpha > pr*1.02 && m > 1e-9:
					t.Errorf("rho %g alpha %g past alpha_PR %g: mmse %g, want 0", rho, alpha, pr, m)
				case delta > 0 && !(m > 0):
					t.Errorf("rho %g Delta %g alpha %g: mmse %g, want > 0 with noise", rho, delta, alpha, m)
				}
				if m > 1e-9 {
					if want := 2 * alpha / (m + delta/2); math.Abs(p.QHat-want) > 1e-6*want {
						t.Errorf("rho %g Delta %g alpha %g: q-hat %g, 2 alpha/(V + Delta/2) = %g", rho, delta, alpha, p.QHat, want)
					}
				}
				last, prev[i] = m, m
			}
		}
	}
}
