package plot

import (
	"math"
	"strings"
	"testing"
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
