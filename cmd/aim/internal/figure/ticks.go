package figure

// ticks.go: tick marks at round values. A linear axis gets 4 to 8 labelled ticks at multiples
// of 1, 2 or 5 times a power of ten, with unlabelled ticks between; a log axis gets its
// decades labelled as powers of ten (10^{−2}, 10^{−1}, 1, 10, 10^{2}), and 2 and 5 times them
// labelled too when fewer than two decades fall in range.

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// linearTicks marks a linear axis.
type linearTicks struct{}

// steps are the round steps of a decade, in the order they are tried.
var steps = []float64{1, 2, 5}

// Ticks returns the ticks between min and max.
func (linearTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: formatTick(min, 0)}}
	}
	step, minor := roundStep(min, max)
	var ticks []plot.Tick
	decimals := int(math.Max(0, -math.Floor(math.Log10(step)+1e-9)))
	for k := math.Ceil(min/minor - 1e-9); k*minor <= max+minor*1e-9; k++ {
		v := k * minor
		if math.Abs(v) < minor*1e-9 {
			v = 0
		}
		t := plot.Tick{Value: v}
		if r := v / step; math.Abs(r-math.Round(r)) < 1e-6 {
			t.Label = formatTick(v, decimals)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// roundStep returns the largest round step that puts at least 4 labelled ticks in [min, max]
// (at most 10), and the minor step, half of it.
func roundStep(min, max float64) (step, minor float64) {
	span := max - min
	p := math.Pow(10, math.Floor(math.Log10(span)))
	for e := p; e >= p/100; e /= 10 {
		for i := len(steps) - 1; i >= 0; i-- {
			s := steps[i] * e
			if n := math.Floor(max/s+1e-9) - math.Ceil(min/s-1e-9) + 1; n >= 4 {
				return s, s / 2
			}
		}
	}
	return p / 100, p / 200
}

// formatTick writes a tick value with a fixed number of decimals and the minus sign U+2212.
func formatTick(v float64, decimals int) string {
	return strings.Replace(strconv.FormatFloat(v, 'f', decimals, 64), "-", Minus, 1)
}

// decade returns the label of 10^k: 1, 10, or 10^{k} (10^{−2}).
func decade(k int) string {
	switch k {
	case 0:
		return "1"
	case 1:
		return "10"
	}
	return Sup("10", formatTick(float64(k), 0))
}

// logTicks marks a log axis; log10 is true when the axis holds log10 of the data (the log y
// axis), false when it holds the data on a log scale (the log x axis).
type logTicks struct{ log10 bool }

// Ticks returns the ticks between min and max (in the axis' units).
func (l logTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := min, max
	if !l.log10 {
		lo, hi = math.Log10(min), math.Log10(max)
	}
	const tol = 1e-9
	few := math.Floor(hi+tol)-math.Ceil(lo-tol)+1 < 2
	var ticks []plot.Tick
	for k := math.Floor(lo); k <= math.Ceil(hi); k++ {
		for m := 1.0; m < 10; m++ {
			e := k + math.Log10(m)
			if e < lo-tol || e > hi+tol {
				continue
			}
			t := plot.Tick{Value: e}
			if !l.log10 {
				t.Value = m * math.Pow(10, k)
			}
			switch {
			case m == 1:
				t.Label = decade(int(k))
			case few && (m == 2 || m == 5):
				t.Label = strconv.FormatFloat(m*math.Pow(10, k), 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
