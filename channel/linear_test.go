package channel

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// TestLinearGOut checks g_out of the linear channel against d/d omega log Z_out, with
// Z_out(y; omega, V) = E_xi N(y; sqrt(2)(omega + sqrt(V) xi), Delta) integrated by
// Gauss-Hermite quadrature and differentiated by central differences; at Delta = 0 against
// E[u - omega | y]/V with u = y/sqrt(2) observed exactly.
func TestLinearGOut(t *testing.T) {
	for _, c := range []struct{ delta, y, omega, V float64 }{
		{0.25, 0.7, -0.3, 0.8},
		{0.25, -2.1, 0.4, 0.05},
		{1, 3, 1, 1.5},
		{0.01, 0.2, 0.1, 0.3},
	} {
		l, err := NewLinear(c.delta)
		if err != nil {
			t.Fatal(err)
		}
		logZ := func(omega float64) float64 {
			f := func(xi float64) float64 {
				m := math.Sqrt2 * (omega + math.Sqrt(c.V)*xi)
				return math.Exp(-(c.y-m)*(c.y-m)/(2*c.delta)-xi*xi/2) / math.Sqrt(2*math.Pi*c.delta) / math.Sqrt(2*math.Pi)
			}
			return math.Log(quad.Fixed(f, math.Inf(-1), math.Inf(1), 200, nil, 0))
		}
		const h = 1e-4
		want := (logZ(c.omega+h) - logZ(c.omega-h)) / (2 * h)
		g := []float64{0}
		l.GOut(g, []float64{c.y}, []float64{c.omega}, c.V)
		if math.Abs(g[0]-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("%+v: g_out = %.12g, d log Z_out/d omega = %.12g", c, g[0], want)
		}
	}
	l, _ := NewLinear(0)
	g := []float64{0}
	l.GOut(g, []float64{0.9}, []float64{0.2}, 0.4)
	if want := (0.9/math.Sqrt2 - 0.2) / 0.4; math.Abs(g[0]-want) > 1e-15 {
		t.Errorf("noiseless g_out = %.17g, want %.17g", g[0], want)
	}
	y := []float64{0}
	l.Output(y, []float64{-1.25})
	if y[0] != -1.25 {
		t.Errorf("Output = %g, want h = -1.25", y[0])
	}
}
