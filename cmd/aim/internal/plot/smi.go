package plot

// smi.go: the figures of aim smi se, thresholds, amp (and its trace) and sgd.

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// The SMI's labels: the x axis, the overlaps Q_ll and the cosine of a layer.
var (
	alphaSMI    = "Sample complexity " + figure.Alpha + " = N/D"
	qll         = figure.Sub("Q", "ℓℓ")
	cosineLabel = "cosine |" + figure.Sub("M", "ℓℓ") + "| / √(" + qll + " ‖" + figure.Sub("w", "ℓ") + "^{*}‖^{2} / D)"
)

// layerSym returns the symbol of layer l (from 0) of a layer's quantity: Q_{11} (twice the
// index) or α_{1}.
func layerSym(sym string, l int, twice bool) string {
	i := fmt.Sprint(l + 1)
	if twice {
		i += i
	}
	return figure.Sub(sym, i)
}

// byAlpha returns the row indices of t sorted by alpha (stable).
func byAlpha(t *table.Table) []int {
	idx := make([]int, t.Rows())
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return t.V(idx[a], "alpha") < t.V(idx[b], "alpha") })
	return idx
}

// smiSEFigure draws the paper's figure: Q_ll against alpha (solid, one colour per layer), e_gen
// (dashed black), the last-layer-only e_gen (dashed, the next colour) and the thresholds of
// the first table: from th (an `aim smi thresholds` CSV) when given, else from its manifest.
func smiSEFigure(ses []*table.Table, thCSV *table.Table, o Options) (*figure.Figure, error) {
	t0 := ses[0]
	f := &figure.Figure{
		Title:  "SMI state evolution",
		XLabel: alphaSMI, YLabel: "Overlap " + qll,
		YMin: 0, YMax: 1.05,
	}
	if t0.Rows() > 0 {
		f.Title = fmt.Sprintf("SMI state evolution: L = %d, M = %s, c = %g, %s = %g", t0.L, wholeNum(t0.V(0, "M")), t0.V(0, "c"), figure.Beta, t0.V(0, "beta"))
	}
	o.applyAxes(f, false, false)
	amax := 0.0
	for _, t := range ses {
		suffix := ""
		if len(ses) > 1 {
			suffix = " (" + t.Name() + ")"
		}
		idx := byAlpha(t)
		for l := 0; l < t.L; l++ {
			q := table.LayerNames("Q", t.L, true)[l]
			s := figure.Series{Label: layerSym("Q", l, true) + suffix, Group: l}
			for _, i := range idx {
				if t.S(i, "converged") == "true" {
					s.X, s.Y = append(s.X, t.V(i, "alpha")), append(s.Y, t.V(i, q))
				}
			}
			f.Series = append(f.Series, s)
		}
		hasGen := false
		for i := 0; i < t.Rows(); i++ {
			hasGen = hasGen || !math.IsNaN(t.V(i, "gen_error"))
			if a := t.V(i, "alpha"); t == t0 && a > amax {
				amax = a
			}
		}
		if hasGen {
			f.YLabel = "Overlap " + qll + ", generalisation error " + figure.EGen
			gen := figure.Series{Label: figure.EGen + suffix, Group: -1, Dashed: true}
			last := figure.Series{Label: figure.EGen + ", last layer only" + suffix, Group: t.L, Dashed: true}
			for _, i := range idx {
				if t.S(i, "converged") == "true" {
					gen.X, gen.Y = append(gen.X, t.V(i, "alpha")), append(gen.Y, t.V(i, "gen_error"))
					last.X, last.Y = append(last.X, t.V(i, "alpha")), append(last.Y, t.V(i, "gen_error_last_layer"))
				}
			}
			f.Series = append(f.Series, gen)
			if t.L > 1 {
				f.Series = append(f.Series, last)
			}
		}
	}
	th := t0.Th
	if thCSV != nil {
		var err error
		if th, err = smiThresholdsAt(thCSV, t0); err != nil {
			return nil, err
		}
	}
	if th != nil {
		for l := 0; l < t0.L && l < len(th.Stability); l++ {
			a := th.Stability[l]
			var fb float64 = math.NaN()
			if l < len(th.Fallback) {
				fb = th.Fallback[l]
			}
			switch {
			case !math.IsInf(a, 0) && a <= 1.5*amax:
				f.VLines = append(f.VLines, figure.VLine{X: a, Group: l, Label: "weak recovery " + figure.Sub(figure.Alpha, "ℓ")})
			case !math.IsNaN(fb) && !math.IsInf(fb, 0) && th.FromCSV:
				f.VLines = append(f.VLines, figure.VLine{X: fb, Group: l, Label: "conditional " + figure.Sub(figure.Alpha, "ℓ")})
			case !math.IsNaN(fb):
				// The layer turns on conditionally (the grand staircase), far below its stability
				// threshold at Q = 0: mark where the curve shows it.
				f.VLines = append(f.VLines, figure.VLine{X: fb, Group: l, Label: "onset of " + qll})
			}
		}
	}
	f.YMax = legendRoom(1, len(f.Series)+len(f.VLines))
	return f, nil
}

// smiThresholdsAt returns the thresholds of an `aim smi thresholds` table at the L, M, beta and c
// of an `aim smi se` table: the stability thresholds, and the conditional ones where those are
// out of range.
func smiThresholdsAt(th, se *table.Table) (*table.Thresholds, error) {
	if th.L != se.L || se.Rows() == 0 {
		return nil, fmt.Errorf("%s has L = %d layers, %s has L = %d", th.Path, th.L, se.Path, se.L)
	}
	for i := 0; i < th.Rows(); i++ {
		if th.V(i, "M") == se.V(0, "M") && th.V(i, "beta") == se.V(0, "beta") && th.V(i, "c") == se.V(0, "c") {
			out := &table.Thresholds{FromCSV: true, Fallback: table.NaNs(th.L)}
			for l, name := range table.LayerNames("alpha_stability_", th.L, false) {
				out.Stability = append(out.Stability, th.V(i, name))
				if l < th.L-1 {
					out.Fallback[l] = th.V(i, table.LayerNames("alpha_conditional_", th.L-1, false)[l])
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s has no row at M = %g, beta = %g, c = %g (those of %s)", th.Path, se.V(0, "M"), se.V(0, "beta"), se.V(0, "c"), se.Path)
}

// smiThresholdsFigure draws the thresholds against c: the stability thresholds solid (one
// colour per layer) and the conditional ones dashed (the next colours); log x when the
// positive c span more than a decade, log y when the thresholds do.
func smiThresholdsFigure(t *table.Table, o Options) *figure.Figure {
	f := &figure.Figure{Title: "SMI weak-recovery thresholds", XLabel: "Skip strength c", YLabel: "Threshold " + figure.Alpha + " = N/D"}
	if t.Rows() > 0 {
		f.Title = fmt.Sprintf("SMI weak-recovery thresholds: L = %d, M = %s, %s = %g", t.L, wholeNum(t.V(0, "M")), figure.Beta, t.V(0, "beta"))
	}
	cmin, cmax := math.Inf(1), 0.0
	for i := 0; i < t.Rows(); i++ {
		if v := t.V(i, "c"); v > 0 {
			cmin, cmax = math.Min(cmin, v), math.Max(cmax, v)
		}
	}
	idx := make([]int, t.Rows())
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return t.V(idx[a], "c") < t.V(idx[b], "c") })
	add := func(label string, group int, dashed bool, col string) {
		line := figure.Series{Label: label, Group: group, Dashed: dashed} // one entry with its points
		pts := figure.Series{Label: label, Group: group, Points: true}
		for _, i := range idx {
			if v := t.V(i, col); !math.IsNaN(v) && !math.IsInf(v, 0) {
				line.X, line.Y = append(line.X, t.V(i, "c")), append(line.Y, v)
				pts.X, pts.Y = append(pts.X, t.V(i, "c")), append(pts.Y, v)
			}
		}
		f.Series = append(f.Series, line, pts)
	}
	for l, col := range table.LayerNames("alpha_stability_", t.L, false) {
		add(fmt.Sprintf("stability %s = 1/%s", layerSym(figure.Alpha, l, false), layerSym("F", l, false)), l, false, col)
	}
	for l, col := range table.LayerNames("alpha_conditional_", t.L-1, false) {
		add("conditional "+layerSym(figure.Alpha, l, false)+" (dashed)", t.L+l, true, col)
	}
	ymin, ymax := math.Inf(1), 0.0
	for _, s := range f.Series {
		for _, y := range s.Y {
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
	}
	o.applyAxes(f, cmax > 10*cmin, ymin > 0 && ymax > 10*ymin)
	return f
}

// smiAMPFigure draws, per run set of the `aim smi amp` tables (runSets: one M, c, beta and D,
// its seeds gathered from every table), the mean final m_ll = |M_ll|/(||w*_l||^2/D) per layer
// against alpha with its standard error over seeds, and as lines the SE Q_ll of the first
// `aim smi se` table of the set's model. The legend names what varies between the sets.
func smiAMPFigure(amps, ses []*table.Table, o Options) (*figure.Figure, error) {
	t0 := amps[0]
	for _, t := range append(slices.Clone(ses), amps...) {
		if t.L != t0.L {
			return nil, fmt.Errorf("%s has L = %d layers, %s has L = %d", t.Path, t.L, t0.Path, t0.L)
		}
	}
	sets := runSets(amps, smiRunCols, false)
	names := namesOf(sets, smiRunCols)
	f := &figure.Figure{
		Title:  "GAMP (SMI)",
		XLabel: alphaSMI, YLabel: "Overlap " + figure.Sub("m", "ℓℓ") + " (GAMP, points), " + qll + " (SE, lines)",
		YMin: 0, YMax: 1.05,
	}
	if len(sets) > 0 {
		f.Title = fmt.Sprintf("GAMP%s: L = %d", names.atD(), t0.L)
		for _, col := range []string{"M", "c", "beta"} {
			if v := names.common(col); v != "" {
				f.Title += ", " + runWords(col, v)
			}
		}
	}
	o.applyAxes(f, false, false)
	// theory returns the first SE table of a set's model (M, c, beta).
	theory := func(s *runSet) *table.Table {
		r := s.first()
		for _, se := range ses {
			if se.Rows() > 0 && sameValue(se.V(0, "M"), r.t.V(r.i, "M")) && sameValue(se.V(0, "c"), r.t.V(r.i, "c")) && sameValue(se.V(0, "beta"), r.t.V(r.i, "beta")) {
				return se
			}
		}
		return nil
	}
	sharing := map[*table.Table]int{}
	for _, s := range sets {
		if se := theory(s); se != nil {
			sharing[se]++
		}
	}
	drawn := map[*table.Table]bool{}
	L := t0.L
	for k, s := range sets {
		suffix := names.suffix(s)
		if se := theory(s); se != nil && !drawn[se] {
			drawn[se] = true
			// A table beside one set shares its legend entries; one beside several (runs at
			// several D) has its own.
			prefix, lineSuffix := "", suffix
			if sharing[se] > 1 {
				prefix, lineSuffix = "SE ", names.suffix(s, "D")
			}
			q11 := table.LayerNames("Q", L, true)
			var idx []int
			for _, i := range byAlpha(se) {
				if !math.IsNaN(se.V(i, q11[0])) { // an unconverged point has no values
					idx = append(idx, i)
				}
			}
			for l := 0; l < L; l++ {
				line := figure.Series{Label: fmt.Sprintf("%slayer %d%s", prefix, l+1, lineSuffix), Group: k*L + l}
				for _, i := range idx {
					line.X, line.Y = append(line.X, se.V(i, "alpha")), append(line.Y, se.V(i, q11[l]))
				}
				f.Series = append(f.Series, line)
			}
		}
		alphas := slices.Clone(s.alphas)
		slices.Sort(alphas)
		for l, col := range table.LayerNames("m", L, true) {
			pts := figure.Series{Label: fmt.Sprintf("layer %d%s", l+1, suffix), Group: k*L + l, Points: true}
			for _, a := range alphas {
				if m, se, ok := s.mean(a, col); ok {
					pts.X, pts.Y, pts.YErr = append(pts.X, a), append(pts.Y, m), append(pts.YErr, se)
				}
			}
			f.Series = append(f.Series, pts)
		}
	}
	f.YMax = legendRoom(1, len(f.Series))
	return f, nil
}

// smiAMPTraceFigure draws the cosines against the iteration for the first seed at each alpha:
// one colour per alpha, the last layer solid and the earlier layers dashed.
func smiAMPTraceFigure(t *table.Table, o Options) *figure.Figure {
	seed := math.NaN()
	if t.Rows() > 0 {
		seed = t.V(0, "seed")
	}
	if s, ok := t.Param("seed"); ok {
		seed = s
	}
	f := &figure.Figure{
		Title:  fmt.Sprintf("GAMP, seed %s: cosines (last layer solid)", wholeNum(seed)),
		XLabel: "iteration", YLabel: cosineLabel,
		YMin: 0, YMax: 1.05,
	}
	if D, ok := t.Param("D"); ok {
		f.Title = fmt.Sprintf("GAMP at D = %s, seed %s: cosines (last layer solid)", wholeNum(D), wholeNum(seed))
	}
	o.applyAxes(f, false, false)
	cos := table.LayerNames("cos", t.L, false)
	for gi, a := range distinctValues(t, "alpha") {
		for l := 0; l < t.L; l++ {
			s := figure.Series{Label: fmt.Sprintf("%s = %g, layer %d", figure.Alpha, a, l+1), Group: gi, Dashed: l < t.L-1}
			for i := 0; i < t.Rows(); i++ {
				if t.V(i, "alpha") == a && t.V(i, "seed") == seed {
					s.X, s.Y = append(s.X, t.V(i, "iteration")), append(s.Y, t.V(i, cos[l]))
				}
			}
			if len(s.X) > 0 {
				f.Series = append(f.Series, s)
			}
		}
	}
	f.YMax = legendRoom(1, len(f.Series))
	return f
}

// smiSGDFigure draws the cosine of every layer against the update on a log axis (the paper's
// Fig. 2 bottom): one colour per layer, one line per seed.
func smiSGDFigure(t *table.Table, o Options) *figure.Figure {
	f := &figure.Figure{
		Title:  fmt.Sprintf("SGD: L = %d", t.L),
		XLabel: "SGD update", YLabel: cosineLabel,
		YMin: 0, YMax: 1.05,
	}
	D, okD := t.Param("D")
	alpha, okA := t.Param("alpha")
	M, okM := t.Param("M")
	c, okC := t.Param("c")
	if okD && okA && okM && okC {
		f.Title = fmt.Sprintf("SGD at D = %s, %s = %g: L = %d, M = %s, c = %g", wholeNum(D), figure.Alpha, alpha, t.L, wholeNum(M), c)
	}
	o.applyAxes(f, true, false)
	cos := table.LayerNames("cos", t.L, false)
	for si, seed := range distinctValues(t, "seed") {
		for l := 0; l < t.L; l++ {
			s := figure.Series{Group: l}
			if si == 0 {
				s.Label = fmt.Sprintf("layer %d", l+1)
			}
			for i := 0; i < t.Rows(); i++ {
				if t.V(i, "seed") == seed {
					s.X, s.Y = append(s.X, t.V(i, "update")), append(s.Y, t.V(i, cos[l]))
				}
			}
			f.Series = append(f.Series, s)
		}
	}
	f.YMax = legendRoom(1, t.L)
	return f
}
