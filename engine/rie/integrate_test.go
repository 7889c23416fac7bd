package rie

import (
	"math"
	"testing"
)

// TestIntegrate checks Spectrum.Integrate against identities of any spectrum: the mass 1, the
// mean sqrt(rho) and second moment 1 + rho + Delta, ∫ mu^3 against IntegralMuCubed, and for the
// Hilbert part h the symmetrised double integrals ∫ h mu = 0 and ∫ x h mu = 1/2; and a cut at x0
// splits the mass exactly (from x0 plus the rest from -inf). One and two bulks.
func TestIntegrate(t *testing.T) {
	for _, c := range []struct{ rho, delta float64 }{{0.5, 0.3}, {0.5, 0.02}, {2, 1}} {
		sp, err := New(c.rho, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		in := func(F Integrand, from float64) float64 {
			v, e := sp.Integrate(F, from, 1e-12)
			if e > 1e-9 {
				t.Errorf("rho %g Delta %g: error estimate %g", c.rho, c.delta, e)
			}
			return v
		}
		inf := math.Inf(-1)
		checks := []struct {
			name      string
			got, want float64
		}{
			{"mass", in(func(_, mu, _ float64) float64 { return mu }, inf), 1},
			{"mean", in(func(x, mu, _ float64) float64 { return x * mu }, inf), math.Sqrt(c.rho)},
			{"second moment", in(func(x, mu, _ float64) float64 { return x * x * mu }, inf), 1 + c.rho + c.delta},
			{"mu^3", in(func(_, mu, _ float64) float64 { return mu * mu * mu }, inf), sp.IntegralMuCubed()},
			{"h mu", in(func(_, mu, h float64) float64 { return h * mu }, inf), 0},
			{"x h mu", in(func(x, mu, h float64) float64 { return x * h * mu }, inf), 0.5},
		}
		e := sp.Edges()
		cut := 0.5 * (e[0] + e[len(e)-1])
		above := in(func(_, mu, _ float64) float64 { return mu }, cut)
		below := 0.0
		for k := 0; k < len(e); k += 2 {
			v, _ := sp.bulkIntegral(k/2, func(x, mu float64) float64 {
				if x < cut {
					return mu
				}
				return 0
			}, 1e-10)
			below += v
		}
		checks = append(checks, struct {
			name      string
			got, want float64
		}{"split mass", above + below, 1})
		for _, k := range checks {
			tol := 1e-10
			if k.name == "split mass" {
				tol = 1e-6 // the indicator's jump inside the rule
			}
			if math.Abs(k.got-k.want) > tol {
				t.Errorf("rho %g Delta %g: %s = %.12g, want %.12g", c.rho, c.delta, k.name, k.got, k.want)
			}
		}
	}
}
