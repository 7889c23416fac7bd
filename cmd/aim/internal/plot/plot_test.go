package plot

import (
	"math"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
)

// TestMeanStderr checks the points' statistics against hand values.
func TestMeanStderr(t *testing.T) {
	for _, tc := range []struct {
		xs         []float64
		mean, serr float64
	}{
		{[]float64{2}, 2, 0},
		{[]float64{1, 3}, 2, 1},                // sample sd sqrt(2), over sqrt(2)
		{[]float64{1, 2, 3, 4}, 2.5, 0.645497}, // sd sqrt(5/3), over 2
	} {
		m, s := meanStderr(tc.xs)
		if m != tc.mean || math.Abs(s-tc.serr) > 1e-6 {
			t.Errorf("%v: %g ± %g, want %g ± %g", tc.xs, m, s, tc.mean, tc.serr)
		}
	}
}

// TestLegendRoom checks the top of the y axis that keeps a legend of n entries clear of the
// data: 1.05 for no entry, and a larger share of the axis as the legend grows, to 60%.
func TestLegendRoom(t *testing.T) {
	for n, want := range map[int]float64{0: 1.05, 1: 240.0 / 221, 10: 1 / (1 - 118.0/240), 40: 2.5} {
		if got := legendRoom(1, n); math.Abs(got-want) > 1e-12 {
			t.Errorf("n = %d: %g, want %g", n, got, want)
		}
	}
}

// TestBuildNothing checks that an empty list of tables is refused.
func TestBuildNothing(t *testing.T) {
	if f, err := Build(nil, Options{}); f != nil || err == nil || !strings.Contains(err.Error(), "no CSV to plot") {
		t.Errorf("%v, %v", f, err)
	}
}

// TestCoincident: thresholds of one kind at one x for several rho (alpha_PR = 0.25 at rho = 1
// and 2) are said in the legend, one note per shared x; distinct ones add nothing.
func TestCoincident(t *testing.T) {
	v := func(xs ...float64) []figure.VLine {
		var out []figure.VLine
		for i, x := range xs {
			out = append(out, figure.VLine{X: x, Group: i})
		}
		return out
	}
	for _, c := range []struct {
		xs, rhos []float64
		want     string
	}{
		{[]float64{0.1, 0.2, 0.2499999992918092, 0.24999999999994996}, []float64{0.2, 0.5, 1, 2}, " (ρ = 1, 2 coincide)"},
		{[]float64{0.25, 0.1, 0.25 * (1 + 1e-12), 0.1}, []float64{1, 0.2, 2, 0.3}, " (ρ = 1, 2 coincide; ρ = 0.2, 0.3 coincide)"},
		{[]float64{0.1, 0.2}, []float64{0.2, 0.5}, ""},
		{[]float64{0.25, 0.2501}, []float64{1, 2}, ""},
	} {
		if got := coincident(v(c.xs...), c.rhos); got != c.want {
			t.Errorf("%v at rho %v: %q, want %q", c.xs, c.rhos, got, c.want)
		}
	}
}
