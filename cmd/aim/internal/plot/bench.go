package plot

import (
	"fmt"
	"math"
	"slices"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// benchFigure draws an `aim bench` CSV: the median seconds of one iteration against D on
// log-log axes, one colour per (device, algorithm, tokens), the line dashed for streamed
// tokens, the x axis labelled at every D, and a black dashed reference line t(D) = t_0 (D/D_0)^4 through the slowest
// point (D_0, t_0): the cost of an iteration grows like alpha T D^4.
func benchFigure(t *table.Table, o Options) *figure.Figure {
	f := &figure.Figure{Title: "aim bench: one iteration (median)", XLabel: "D", YLabel: "seconds per iteration"}
	o.applyAxes(f, true, true)
	series := map[string]int{} // (device, algorithm, tokens) -> index of its points in f.Series
	var order []string
	d0, t0 := math.NaN(), math.NaN()
	dmin, dmax := math.Inf(1), math.Inf(-1)
	for i := 0; i < t.Rows(); i++ {
		dev, algo, tokens := t.S(i, "device"), t.S(i, "algorithm"), t.S(i, "tokens")
		D, sec := t.V(i, "D"), t.V(i, "seconds_median")
		if !(D > 0) || !(sec > 0) {
			continue
		}
		key := dev + " " + algo + " " + tokens
		k, ok := series[key]
		if !ok {
			g := len(series)
			k = len(f.Series)
			series[key] = k
			order = append(order, key)
			f.Series = append(f.Series, figure.Series{Label: key, Group: g, Points: true},
				figure.Series{Label: key, Group: g, Dashed: tokens == "streamed"}) // one entry, marker and line
		}
		for _, j := range []int{k, k + 1} {
			f.Series[j].X, f.Series[j].Y = append(f.Series[j].X, D), append(f.Series[j].Y, sec)
		}
		if math.IsNaN(t0) || sec > t0 {
			d0, t0 = D, sec
		}
		dmin, dmax = math.Min(dmin, D), math.Max(dmax, D)
		if !slices.Contains(f.XTicks, D) {
			f.XTicks = append(f.XTicks, D)
		}
	}
	if len(order) > 0 && dmin < dmax {
		ref := figure.Series{Label: figure.Sup("D", "4"), Group: -1, Dashed: true}
		for _, D := range []float64{dmin, dmax} {
			ref.X, ref.Y = append(ref.X, D), append(ref.Y, t0*math.Pow(D/d0, 4))
		}
		f.Series = append(f.Series, ref)
	}
	if alpha, ok := t.Param("alpha"); ok {
		T, _ := t.Param("T")
		f.Title = fmt.Sprintf("aim bench: one iteration (median), alpha = %g, T = %s", alpha, wholeNum(T))
	}
	return f
}
