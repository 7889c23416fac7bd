package main

// figures.go: the figures of every command, built from tables (table.go). A run command builds
// its figure from the table of the rows it writes to its CSV; `aim plot` builds the same
// figure from the same CSV read back, so the two are drawn by the same code from the same
// numbers.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
)

// plotOptions are the choices `aim plot` offers over a figure; the zero value ("auto"
// everywhere) is the run command's own figure.
type plotOptions struct {
	x     string // "", "auto", "alpha", "alpha-bar" or "alpha-rho"
	axes  string // "", "auto", "lin", "logx", "logy" or "loglog"
	title string // "" for the automatic title
}

func (o plotOptions) xMode(auto string) string {
	if o.x == "" || o.x == "auto" {
		return auto
	}
	return o.x
}

// applyAxes sets the log axes: the layout's own choice under "auto".
func (o plotOptions) applyAxes(f *figure.Figure, logx, logy bool) {
	switch o.axes {
	case "lin":
		logx, logy = false, false
	case "logx":
		logx, logy = true, false
	case "logy":
		logx, logy = false, true
	case "loglog":
		logx, logy = true, true
	}
	f.LogX, f.LogY = logx, logy
}

// buildFigure draws tables on one figure. The layout follows the kinds: GD points (with the SE
// lines and AMP points beside them), else AMP points (with the SE lines), else SE lines with
// their thresholds; the SMI kinds likewise; a trace or a thresholds-against-c CSV alone. An
// impossible combination is a usage error.
func buildFigure(tables []*csvTable, o plotOptions) (*figure.Figure, error) {
	if len(tables) == 0 {
		return nil, usagef("no CSV to plot")
	}
	by := map[csvKind][]*csvTable{}
	aim, smi := 0, 0
	for _, t := range tables {
		by[t.kind] = append(by[t.kind], t)
		switch t.kind {
		case kindSE, kindAMP, kindGD:
			aim++
		case kindSMISE, kindSMIAMP:
			smi++
		}
	}
	alone := func(t *csvTable) error {
		if len(tables) > 1 {
			return usagef("%s is an %s CSV, which is plotted alone (got %d files)", t.path, t.kind, len(tables))
		}
		if o.x != "" && o.x != "auto" {
			return usagef("--x %s: the x axis of an %s CSV is fixed", o.x, t.kind)
		}
		return nil
	}
	var f *figure.Figure
	switch {
	case len(by[kindAMPTrace])+len(by[kindGDTrace])+len(by[kindSMIAMPTrace])+len(by[kindSMISGD]) > 0:
		for _, t := range tables {
			if err := alone(t); err != nil {
				return nil, err
			}
		}
		t := tables[0]
		switch t.kind {
		case kindAMPTrace:
			f = ampTraceFigure(t, o)
		case kindGDTrace:
			f = gdTraceFigure(t, o)
		case kindSMIAMPTrace:
			f = smiAMPTraceFigure(t, o)
		default:
			f = smiSGDFigure(t, o)
		}
	case aim > 0 && (smi > 0 || len(by[kindSMIThresholds]) > 0):
		return nil, usagef("aim se/amp/gd CSVs and aim smi CSVs cannot share a figure (different models)")
	case aim > 0:
		if o.x != "" && o.x != "auto" && o.x != "alpha" && o.x != "alpha-bar" && o.x != "alpha-rho" {
			return nil, usagef("--x %q: want alpha, alpha-bar or alpha-rho", o.x)
		}
		switch {
		case len(by[kindGD]) > 0:
			f = gdFigure(by[kindGD], by[kindSE], by[kindAMP], o)
		case len(by[kindAMP]) > 0:
			f = ampFigure(by[kindAMP], by[kindSE], o)
		default:
			f = seFigure(by[kindSE], o)
		}
	default: // SMI
		if o.x != "" && o.x != "auto" && o.x != "alpha" {
			return nil, usagef("--x %s: aim smi CSVs are drawn against alpha = N/D (or c, for thresholds)", o.x)
		}
		ths := by[kindSMIThresholds]
		switch {
		case len(ths) > 1:
			return nil, usagef("one aim smi thresholds CSV at a time (got %d)", len(ths))
		case len(ths) == 1 && len(by[kindSMIAMP]) > 0:
			return nil, usagef("%s: an aim smi thresholds CSV draws alone or with an aim smi se CSV", ths[0].path)
		case len(ths) == 1 && len(by[kindSMISE]) == 0:
			if o.x == "alpha" {
				return nil, usagef("--x alpha: an aim smi thresholds CSV is drawn against c")
			}
			f = smiThresholdsFigure(ths[0], o)
		case len(by[kindSMIAMP]) > 0:
			var err error
			if f, err = smiAMPFigure(by[kindSMIAMP], by[kindSMISE], o); err != nil {
				return nil, err
			}
		default:
			var th *csvTable
			if len(ths) == 1 {
				th = ths[0]
			}
			var err error
			if f, err = smiSEFigure(by[kindSMISE], th, o); err != nil {
				return nil, err
			}
		}
	}
	if o.title != "" {
		f.Title = o.title
	}
	return f, nil
}

// ---------------------------------------------------------------------------------------------
// aim se, amp, gd

// aimXLabel is the x label of each x variable of the AIM figures.
var aimXLabel = map[string]string{
	"alpha":     "Sample complexity alpha = N/D^2",
	"alpha-rho": "Sample complexity alpha-bar = N/(D R) = alpha/rho",
	"alpha-bar": "alpha-bar = alpha (T^2 + T - 2)",
}

// aimX is the x value of a row: alpha, alpha-bar = alpha (T^2 + T - 2) or alpha/rho.
func aimX(t *csvTable, i int, mode string) float64 {
	switch mode {
	case "alpha-bar":
		return t.v(i, "alpha_bar")
	case "alpha-rho":
		if t.kind == kindSE {
			return t.v(i, "alpha_r")
		}
		return t.v(i, "alpha") / t.v(i, "rho")
	}
	return t.v(i, "alpha")
}

// channelInfo returns the first row's channel (without the -paper mark), whether it is the
// paper-compat form, T and beta.
func channelInfo(t *csvTable) (name string, paper bool, T, beta float64) {
	if t.rows() == 0 {
		return "", false, math.NaN(), math.NaN()
	}
	name = t.s(0, "channel")
	paper = strings.HasSuffix(name, "-paper")
	return strings.TrimSuffix(name, "-paper"), paper, t.v(0, "T"), t.v(0, "beta")
}

// aimAutoAxes: log-log for hardmax, linear for softmax.
func aimAutoAxes(tables ...[]*csvTable) bool {
	for _, ts := range tables {
		for _, t := range ts {
			if name, _, _, _ := channelInfo(t); name == "hardmax" {
				return true
			}
		}
	}
	return false
}

// wholeNum formats a whole number (a dimension, a count, a seed) as the run commands' %d does.
func wholeNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// distinctValues returns the values of a column in the order they first appear (NaN skipped).
func distinctValues(t *csvTable, name string) []float64 {
	var out []float64
	seen := map[float64]bool{}
	for i := 0; i < t.rows(); i++ {
		v := t.v(i, name)
		if !math.IsNaN(v) && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// seFigure draws `aim se` tables: one line per rho (rho = 0, the rescaled limit, in black),
// and each table's thresholds: alpha_PR per rho in the rho's colour, or alpha-bar_c for a
// rescaled table.
func seFigure(ses []*csvTable, o plotOptions) *figure.Figure {
	rescaled := false
	for _, t := range ses {
		for i := 0; i < t.rows(); i++ {
			rescaled = rescaled || t.v(i, "rho") == 0
		}
	}
	auto := "alpha"
	if rescaled {
		auto = "alpha-rho"
	}
	mode := o.xMode(auto)
	f := &figure.Figure{YLabel: "Estimation error (MMSE on S)", XLabel: aimXLabel[mode], Title: "State evolution"}
	if name, paper, T, beta := channelInfo(ses[0]); name != "" {
		m := ""
		if paper {
			m = ", paper-compat"
		}
		f.Title = fmt.Sprintf("State evolution: %s%s, T = %s", name, m, wholeNum(T))
		if name == "softmax" {
			f.Title += fmt.Sprintf(", beta = %g", beta)
		}
	}
	o.applyAxes(f, aimAutoAxes(ses), aimAutoAxes(ses))
	if !f.LogY {
		f.YMin, f.YMax = 0, 1.05 // the estimation error runs from 1 (alpha = 0) to 0
	}
	for k, t := range ses {
		suffix := ""
		if len(ses) > 1 {
			suffix = " (" + t.name() + ")"
		}
		var rhos []float64 // the positive rhos, whose index is the colour
		byRho := map[float64]*figure.Series{}
		var order []float64
		for i := 0; i < t.rows(); i++ {
			r := t.v(i, "rho")
			if math.IsNaN(r) {
				continue
			}
			s, ok := byRho[r]
			if !ok {
				s = &figure.Series{Label: "rho -> 0" + suffix, Group: -1, Dashed: k > 0}
				if r != 0 {
					s.Group = len(rhos)
					s.Label = fmt.Sprintf("rho = %g", r) + suffix
					rhos = append(rhos, r)
				}
				byRho[r] = s
				order = append(order, r)
			}
			s.X = append(s.X, aimX(t, i, mode))
			s.Y = append(s.Y, t.v(i, "mmse"))
		}
		for _, r := range order {
			f.Series = append(f.Series, *byRho[r])
		}
		if t.th == nil {
			continue
		}
		tRescaled := len(order) > len(rhos)
		if tRescaled {
			if mode == "alpha-rho" && !math.IsNaN(t.th.alphaBarC) {
				f.VLines = append(f.VLines, figure.VLine{X: t.th.alphaBarC, Group: -1, Label: fmt.Sprintf("alpha-bar_c = %.4f", t.th.alphaBarC)})
			}
			continue
		}
		_, _, T, _ := channelInfo(t)
		for gi, r := range rhos {
			a, ok := t.th.alphaPRAt(r)
			if !ok || math.IsInf(a, 0) || math.IsNaN(a) {
				continue
			}
			x := a
			switch mode {
			case "alpha-bar":
				x = a * (T*T + T - 2)
			case "alpha-rho":
				x = a / r
			}
			f.VLines = append(f.VLines, figure.VLine{X: x, Group: gi, Label: fmt.Sprintf("alpha_PR(rho = %g) = %.4g", r, a)})
		}
	}
	return f
}

// simWindow returns the x range of the SE lines beside simulation points: up to 1.1 times the
// largest x (from half the smallest x on a log axis).
func simWindow(sims []*csvTable, mode string, logx bool) func(x float64) bool {
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, t := range sims {
		for i := 0; i < t.rows(); i++ {
			x := aimX(t, i, mode)
			if x > 0 && !math.IsInf(x, 0) {
				xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			}
		}
	}
	if !(xmin <= xmax) {
		return func(x float64) bool { return x > 0 }
	}
	const tol = 1e-9
	if logx {
		return func(x float64) bool { return x >= xmin/2*(1-tol) && x <= 1.1*xmax*(1+tol) }
	}
	return func(x float64) bool { return x > 0 && x <= 1.1*xmax*(1+tol) }
}

// seLine returns the SE line at rho from the first of the tables that has it, inside the window.
func seLine(ses []*csvTable, rho float64, mode string, in func(float64) bool, label string, group int) (figure.Series, bool) {
	s := figure.Series{Label: label, Group: group}
	for _, t := range ses {
		found := false
		for i := 0; i < t.rows(); i++ {
			if t.v(i, "rho") != rho {
				continue
			}
			found = true
			if x := aimX(t, i, mode); in(x) {
				s.X, s.Y = append(s.X, x), append(s.Y, t.v(i, "mmse"))
			}
		}
		if found {
			return s, true
		}
	}
	return s, false
}

// groupRows returns the rows of t at rho, grouped by alpha in the order the alphas first
// appear.
func groupRows(t *csvTable, rho float64) (alphas []float64, rows map[float64][]int) {
	rows = map[float64][]int{}
	for i := 0; i < t.rows(); i++ {
		if t.v(i, "rho") != rho {
			continue
		}
		a := t.v(i, "alpha")
		if math.IsNaN(a) {
			continue
		}
		if _, ok := rows[a]; !ok {
			alphas = append(alphas, a)
		}
		rows[a] = append(rows[a], i)
	}
	return alphas, rows
}

// ampFigure draws, per rho of the `aim amp` tables, the SE line of the `aim se` tables and
// the mean final error of the runs that did not diverge, with its standard error, per alpha.
func ampFigure(amps, ses []*csvTable, o plotOptions) *figure.Figure {
	mode := o.xMode("alpha")
	f := &figure.Figure{XLabel: aimXLabel[mode], YLabel: "Estimation error ||S_hat - S||^2 / D", Title: "GAMP-RIE beside state evolution"}
	if t := amps[0]; t.rows() > 0 {
		f.Title = fmt.Sprintf("GAMP-RIE at D = %s beside state evolution: %s, T = %s", wholeNum(t.v(0, "D")), t.s(0, "channel"), wholeNum(t.v(0, "T")))
	}
	o.applyAxes(f, aimAutoAxes(amps, ses), aimAutoAxes(amps, ses))
	if !f.LogY {
		f.YMin, f.YMax = 0, 1.05
	}
	in := simWindow(amps, mode, f.LogX)
	for _, t := range amps {
		for gi, r := range distinctValues(t, "rho") {
			alphas, rows := groupRows(t, r)
			if line, ok := seLine(ses, r, mode, in, fmt.Sprintf("SE rho = %g", r), gi); ok {
				f.Series = append(f.Series, line)
			}
			pts := figure.Series{Label: fmt.Sprintf("AMP D = %s rho = %g", wholeNum(t.v(0, "D")), r), Group: gi, Points: true}
			for _, a := range alphas {
				var s, s2, n float64
				for _, i := range rows[a] {
					if e := t.v(i, "error"); !math.IsNaN(e) {
						s += e
						s2 += e * e
						n++
					}
				}
				if n == 0 {
					continue
				}
				mean := s / n
				stderr := 0.0
				if n > 1 {
					stderr = math.Sqrt(math.Max(0, s2/n-mean*mean) * n / (n - 1) / n)
				}
				pts.X, pts.Y, pts.YErr = append(pts.X, aimX(t, rows[a][0], mode)), append(pts.Y, mean), append(pts.YErr, stderr)
			}
			f.Series = append(f.Series, pts)
		}
	}
	return f
}

// meanOf returns the mean and standard error over rows of a column, skipping empty cells.
func meanOf(t *csvTable, rows []int, name string) (float64, float64, bool) {
	var xs []float64
	for _, i := range rows {
		if v := t.v(i, name); !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0, 0, false
	}
	m, s := meanStderr(xs)
	return m, s, true
}

// gdFigure draws, per rho of the `aim gd` tables, the SE line, GD single (the mean over seeds
// of each run's mean student error), GD averaged, and the AMP points of `aim amp` tables,
// against alpha-bar = alpha (T^2 + T - 2) unless o says otherwise.
func gdFigure(gds, ses, amps []*csvTable, o plotOptions) *figure.Figure {
	mode := o.xMode("alpha-bar")
	f := &figure.Figure{XLabel: aimXLabel[mode], YLabel: "Estimation error ||S_hat - S||^2 / D", Title: "Gradient descent"}
	if t := gds[0]; t.rows() > 0 {
		f.Title = fmt.Sprintf("Gradient descent at D = %s (%s steps, lr %g): %s, T = %s", wholeNum(t.v(0, "D")), wholeNum(t.v(0, "steps")), t.v(0, "lr"), t.s(0, "channel"), wholeNum(t.v(0, "T")))
	}
	o.applyAxes(f, false, false)
	if !f.LogY {
		f.YMin, f.YMax = 0, 1.05
	}
	in := simWindow(gds, mode, f.LogX)
	for _, t := range gds {
		for gi, r := range distinctValues(t, "rho") {
			alphas, rows := groupRows(t, r)
			if line, ok := seLine(ses, r, mode, in, fmt.Sprintf("SE rho = %g", r), gi); ok {
				f.Series = append(f.Series, line)
			}
			restarts := t.v(0, "restarts")
			single := figure.Series{Label: fmt.Sprintf("GD single rho = %g", r), Group: gi + 3, Points: true}
			avg := figure.Series{Label: fmt.Sprintf("GD averaged (%s) rho = %g", wholeNum(restarts), r), Group: gi + 5, Points: true}
			for _, a := range alphas {
				m, s, ok := meanOf(t, rows[a], "error_single")
				if !ok {
					continue
				}
				x := aimX(t, rows[a][0], mode)
				single.X, single.Y, single.YErr = append(single.X, x), append(single.Y, m), append(single.YErr, s)
				m, s, _ = meanOf(t, rows[a], "error")
				avg.X, avg.Y, avg.YErr = append(avg.X, x), append(avg.Y, m), append(avg.YErr, s)
			}
			f.Series = append(f.Series, single)
			if restarts > 1 {
				f.Series = append(f.Series, avg)
			}
			ampS := figure.Series{Label: fmt.Sprintf("AMP rho = %g", r), Group: -1, Points: true}
			for _, at := range amps {
				aAlphas, aRows := groupRows(at, r)
				for _, a := range aAlphas {
					if m, s, ok := meanOf(at, aRows[a], "error"); ok {
						ampS.X, ampS.Y, ampS.YErr = append(ampS.X, aimX(at, aRows[a][0], mode)), append(ampS.Y, m), append(ampS.YErr, s)
					}
				}
			}
			if len(ampS.X) > 0 {
				f.Series = append(f.Series, ampS)
			}
		}
	}
	return f
}

// gdTraceFigure draws the training error of the first student of every run against the step.
func gdTraceFigure(t *csvTable, o plotOptions) *figure.Figure {
	f := &figure.Figure{Title: "Training curves: error of the first student", XLabel: "step", YLabel: "||S - S*||^2 / D"}
	if D, ok := t.param("D"); ok {
		f.Title = fmt.Sprintf("Training curves at D = %s: error of the first student", wholeNum(D))
	}
	o.applyAxes(f, false, true)
	traceRuns(t, "step", "error", func(run int, first bool, i int) figure.Series {
		s := figure.Series{Group: run}
		if first {
			s.Label = fmt.Sprintf("rho = %g, alpha = %g", t.v(i, "rho"), t.v(i, "alpha"))
		}
		return s
	}, f)
	return f
}

// ampTraceFigure draws the error of every GAMP-RIE run against the iteration, one colour per
// (rho, alpha).
func ampTraceFigure(t *csvTable, o plotOptions) *figure.Figure {
	f := &figure.Figure{Title: "GAMP-RIE iterations", XLabel: "iteration", YLabel: "Estimation error ||S_hat - S||^2 / D"}
	if D, ok := t.param("D"); ok {
		f.Title = fmt.Sprintf("GAMP-RIE iterations at D = %s", wholeNum(D))
	}
	o.applyAxes(f, false, true)
	points := map[[2]float64]int{}
	traceRuns(t, "iter", "error", func(_ int, first bool, i int) figure.Series {
		key := [2]float64{t.v(i, "rho"), t.v(i, "alpha")}
		g, ok := points[key]
		if !ok {
			g = len(points)
			points[key] = g
		}
		s := figure.Series{Group: g}
		if first {
			s.Label = fmt.Sprintf("rho = %g, alpha = %g", key[0], key[1])
		}
		return s
	}, f)
	return f
}

// traceRuns adds one series per run (rows of the same rho, alpha and seed, in the order they
// first appear) of y against x; series makes the series of a run from its index, whether it
// has the first row's seed, and its first row.
func traceRuns(t *csvTable, x, y string, series func(run int, first bool, i int) figure.Series, f *figure.Figure) {
	if t.rows() == 0 {
		return
	}
	seed0 := t.v(0, "seed")
	index := map[[3]float64]int{}
	for i := 0; i < t.rows(); i++ {
		key := [3]float64{t.v(i, "rho"), t.v(i, "alpha"), t.v(i, "seed")}
		k, ok := index[key]
		if !ok {
			k = len(f.Series)
			index[key] = k
			f.Series = append(f.Series, series(len(index)-1, key[2] == seed0, i))
		}
		s := &f.Series[k]
		s.X, s.Y = append(s.X, t.v(i, x)), append(s.Y, t.v(i, y))
	}
}

// ---------------------------------------------------------------------------------------------
// aim smi

// byAlpha returns the row indices of t sorted by alpha (stable).
func byAlpha(t *csvTable) []int {
	idx := make([]int, t.rows())
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return t.v(idx[a], "alpha") < t.v(idx[b], "alpha") })
	return idx
}

// smiSEFigure draws the paper's figure: Q_ll against alpha (solid, one colour per layer), e_gen
// (dashed black), the last-layer-only e_gen (dashed, the next colour) and the thresholds of
// the first table: from th (an `aim smi thresholds` CSV) when given, else from its manifest.
func smiSEFigure(ses []*csvTable, thCSV *csvTable, o plotOptions) (*figure.Figure, error) {
	t0 := ses[0]
	f := &figure.Figure{
		Title:  "SMI state evolution",
		XLabel: "Sample complexity alpha = N/D", YLabel: "Overlap Q_ll, generalisation error",
		YMin: 0, YMax: 1.05,
	}
	if t0.rows() > 0 {
		f.Title = fmt.Sprintf("SMI state evolution: L = %d, M = %s, c = %g, beta = %g", t0.L, wholeNum(t0.v(0, "M")), t0.v(0, "c"), t0.v(0, "beta"))
	}
	o.applyAxes(f, false, false)
	amax := 0.0
	for _, t := range ses {
		suffix := ""
		if len(ses) > 1 {
			suffix = " (" + t.name() + ")"
		}
		idx := byAlpha(t)
		for l := 0; l < t.L; l++ {
			q := layerCols("Q", t.L, true)[l]
			s := figure.Series{Label: fmt.Sprintf("Q_%d%d", l+1, l+1) + suffix, Group: l}
			for _, i := range idx {
				if t.s(i, "converged") == "true" {
					s.X, s.Y = append(s.X, t.v(i, "alpha")), append(s.Y, t.v(i, q))
				}
			}
			f.Series = append(f.Series, s)
		}
		hasGen := false
		for i := 0; i < t.rows(); i++ {
			hasGen = hasGen || !math.IsNaN(t.v(i, "gen_error"))
			if a := t.v(i, "alpha"); t == t0 && a > amax {
				amax = a
			}
		}
		if hasGen {
			gen := figure.Series{Label: "e_gen" + suffix, Group: -1, Dashed: true}
			last := figure.Series{Label: "e_gen, last layer only" + suffix, Group: t.L, Dashed: true}
			for _, i := range idx {
				if t.s(i, "converged") == "true" {
					gen.X, gen.Y = append(gen.X, t.v(i, "alpha")), append(gen.Y, t.v(i, "gen_error"))
					last.X, last.Y = append(last.X, t.v(i, "alpha")), append(last.Y, t.v(i, "gen_error_last_layer"))
				}
			}
			f.Series = append(f.Series, gen)
			if t.L > 1 {
				f.Series = append(f.Series, last)
			}
		}
	}
	th := t0.th
	if thCSV != nil {
		var err error
		if th, err = smiThresholdsAt(thCSV, t0); err != nil {
			return nil, err
		}
	}
	if th != nil {
		for l := 0; l < t0.L && l < len(th.stability); l++ {
			a := th.stability[l]
			var fb float64 = math.NaN()
			if l < len(th.fallback) {
				fb = th.fallback[l]
			}
			switch {
			case !math.IsInf(a, 0) && a <= 1.5*amax:
				f.VLines = append(f.VLines, figure.VLine{X: a, Group: l, Label: fmt.Sprintf("alpha_%d = %.4g", l+1, a)})
			case !math.IsNaN(fb) && !math.IsInf(fb, 0) && th.fromCSV:
				f.VLines = append(f.VLines, figure.VLine{X: fb, Group: l, Label: fmt.Sprintf("conditional alpha_%d = %.4g", l+1, fb)})
			case !math.IsNaN(fb):
				// The layer turns on conditionally (the grand staircase), far below its stability
				// threshold at Q = 0: mark where the curve shows it.
				f.VLines = append(f.VLines, figure.VLine{X: fb, Group: l, Label: fmt.Sprintf("onset of Q_%d%d = %.4g", l+1, l+1, fb)})
			}
		}
	}
	f.YMax = legendRoom(1, len(f.Series)+len(f.VLines))
	return f, nil
}

// smiThresholdsAt returns the thresholds of an `aim smi thresholds` table at the L, M, beta and c
// of an `aim smi se` table: the stability thresholds, and the conditional ones where those are
// out of range.
func smiThresholdsAt(th, se *csvTable) (*figThresholds, error) {
	if th.L != se.L || se.rows() == 0 {
		return nil, usagef("%s has L = %d layers, %s has L = %d", th.path, th.L, se.path, se.L)
	}
	for i := 0; i < th.rows(); i++ {
		if th.v(i, "M") == se.v(0, "M") && th.v(i, "beta") == se.v(0, "beta") && th.v(i, "c") == se.v(0, "c") {
			out := &figThresholds{fromCSV: true, fallback: nanSlice(th.L)}
			for l, name := range layerCols("alpha_stability_", th.L, false) {
				out.stability = append(out.stability, th.v(i, name))
				if l < th.L-1 {
					out.fallback[l] = th.v(i, layerCols("alpha_conditional_", th.L-1, false)[l])
				}
			}
			return out, nil
		}
	}
	return nil, usagef("%s has no row at M = %g, beta = %g, c = %g (those of %s)", th.path, se.v(0, "M"), se.v(0, "beta"), se.v(0, "c"), se.path)
}

// smiThresholdsFigure draws the thresholds against c: the stability thresholds solid (one
// colour per layer) and the conditional ones dashed (the next colours); log x when the
// positive c span more than a decade, log y when the thresholds do.
func smiThresholdsFigure(t *csvTable, o plotOptions) *figure.Figure {
	f := &figure.Figure{Title: "SMI weak-recovery thresholds", XLabel: "Skip strength c", YLabel: "Threshold alpha = N/D"}
	if t.rows() > 0 {
		f.Title = fmt.Sprintf("SMI weak-recovery thresholds: L = %d, M = %s, beta = %g", t.L, wholeNum(t.v(0, "M")), t.v(0, "beta"))
	}
	cmin, cmax := math.Inf(1), 0.0
	for i := 0; i < t.rows(); i++ {
		if v := t.v(i, "c"); v > 0 {
			cmin, cmax = math.Min(cmin, v), math.Max(cmax, v)
		}
	}
	idx := make([]int, t.rows())
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return t.v(idx[a], "c") < t.v(idx[b], "c") })
	add := func(label string, group int, dashed bool, col string) {
		line := figure.Series{Group: group, Dashed: dashed}
		pts := figure.Series{Label: label, Group: group, Points: true}
		for _, i := range idx {
			if v := t.v(i, col); !math.IsNaN(v) && !math.IsInf(v, 0) {
				line.X, line.Y = append(line.X, t.v(i, "c")), append(line.Y, v)
				pts.X, pts.Y = append(pts.X, t.v(i, "c")), append(pts.Y, v)
			}
		}
		f.Series = append(f.Series, line, pts)
	}
	for l, col := range layerCols("alpha_stability_", t.L, false) {
		add(fmt.Sprintf("stability alpha_%d = 1/F_%d", l+1, l+1), l, false, col)
	}
	for l, col := range layerCols("alpha_conditional_", t.L-1, false) {
		add(fmt.Sprintf("conditional alpha_%d (dashed)", l+1), t.L+l, true, col)
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

// smiAMPFigure draws the mean final m_ll = |M_ll|/(||w*_l||^2/D) per layer against alpha with
// its standard error over seeds, and the SE Q_ll of the `aim smi se` tables as lines.
func smiAMPFigure(amps, ses []*csvTable, o plotOptions) (*figure.Figure, error) {
	t0 := amps[0]
	f := &figure.Figure{
		Title:  "GAMP (SMI)",
		XLabel: "Sample complexity alpha = N/D", YLabel: "Overlap m_ll (AMP), Q_ll (SE)",
		YMin: 0, YMax: 1.05,
	}
	if t0.rows() > 0 {
		f.Title = fmt.Sprintf("GAMP at D = %s: L = %d, M = %s, c = %g, beta = %g", wholeNum(t0.v(0, "D")), t0.L, wholeNum(t0.v(0, "M")), t0.v(0, "c"), t0.v(0, "beta"))
	}
	o.applyAxes(f, false, false)
	for _, se := range ses {
		if se.L != t0.L {
			return nil, usagef("%s has L = %d layers, %s has L = %d", se.path, se.L, t0.path, t0.L)
		}
		q11 := layerCols("Q", se.L, true)
		var idx []int
		for _, i := range byAlpha(se) {
			if !math.IsNaN(se.v(i, q11[0])) { // an unconverged point has no values
				idx = append(idx, i)
			}
		}
		for l := 0; l < se.L; l++ {
			s := figure.Series{Label: fmt.Sprintf("SE Q_%d%d", l+1, l+1), Group: l}
			for _, i := range idx {
				s.X, s.Y = append(s.X, se.v(i, "alpha")), append(s.Y, se.v(i, q11[l]))
			}
			f.Series = append(f.Series, s)
		}
	}
	for _, t := range amps {
		if t.L != t0.L {
			return nil, usagef("%s has L = %d layers, %s has L = %d", t.path, t.L, t0.path, t0.L)
		}
		alphas := distinctValues(t, "alpha")
		sort.Float64s(alphas)
		for l, col := range layerCols("m", t.L, true) {
			pts := figure.Series{Label: fmt.Sprintf("AMP m_%d%d", l+1, l+1), Group: l, Points: true}
			for _, a := range alphas {
				var ms []float64
				for i := 0; i < t.rows(); i++ {
					if v := t.v(i, col); t.v(i, "alpha") == a && !math.IsNaN(v) {
						ms = append(ms, v)
					}
				}
				if len(ms) == 0 {
					continue
				}
				m, s := meanStderr(ms)
				pts.X, pts.Y, pts.YErr = append(pts.X, a), append(pts.Y, m), append(pts.YErr, s)
			}
			f.Series = append(f.Series, pts)
		}
	}
	f.YMax = legendRoom(1, len(f.Series))
	return f, nil
}

// smiAMPTraceFigure draws the cosines against the iteration for the first seed at each alpha:
// one colour per alpha, the last layer solid and the earlier layers dashed.
func smiAMPTraceFigure(t *csvTable, o plotOptions) *figure.Figure {
	seed := math.NaN()
	if t.rows() > 0 {
		seed = t.v(0, "seed")
	}
	if s, ok := t.param("seed"); ok {
		seed = s
	}
	f := &figure.Figure{
		Title:  fmt.Sprintf("GAMP, seed %s: cosines (last layer solid)", wholeNum(seed)),
		XLabel: "iteration", YLabel: "cosine |M_ll| / sqrt(Q_ll ||w*_l||^2 / D)",
		YMin: 0, YMax: 1.05,
	}
	if D, ok := t.param("D"); ok {
		f.Title = fmt.Sprintf("GAMP at D = %s, seed %s: cosines (last layer solid)", wholeNum(D), wholeNum(seed))
	}
	o.applyAxes(f, false, false)
	cos := layerCols("cos", t.L, false)
	for gi, a := range distinctValues(t, "alpha") {
		for l := 0; l < t.L; l++ {
			s := figure.Series{Label: fmt.Sprintf("alpha = %g, layer %d", a, l+1), Group: gi, Dashed: l < t.L-1}
			for i := 0; i < t.rows(); i++ {
				if t.v(i, "alpha") == a && t.v(i, "seed") == seed {
					s.X, s.Y = append(s.X, t.v(i, "iteration")), append(s.Y, t.v(i, cos[l]))
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
func smiSGDFigure(t *csvTable, o plotOptions) *figure.Figure {
	f := &figure.Figure{
		Title:  fmt.Sprintf("SGD: L = %d", t.L),
		XLabel: "SGD update", YLabel: "cosine |M_ll| / sqrt(Q_ll ||w*_l||^2 / D)",
		YMin: 0, YMax: 1.05,
	}
	D, okD := t.param("D")
	alpha, okA := t.param("alpha")
	M, okM := t.param("M")
	c, okC := t.param("c")
	if okD && okA && okM && okC {
		f.Title = fmt.Sprintf("SGD at D = %s, alpha = %g: L = %d, M = %s, c = %g", wholeNum(D), alpha, t.L, wholeNum(M), c)
	}
	o.applyAxes(f, true, false)
	cos := layerCols("cos", t.L, false)
	for si, seed := range distinctValues(t, "seed") {
		for l := 0; l < t.L; l++ {
			s := figure.Series{Group: l}
			if si == 0 {
				s.Label = fmt.Sprintf("layer %d", l+1)
			}
			for i := 0; i < t.rows(); i++ {
				if t.v(i, "seed") == seed {
					s.X, s.Y = append(s.X, t.v(i, "update")), append(s.Y, t.v(i, cos[l]))
				}
			}
			f.Series = append(f.Series, s)
		}
	}
	f.YMax = legendRoom(1, t.L)
	return f
}

// openTrace opens a command's trace outputs beside its results (none when path is empty) and
// returns them with the function that removes both on an error.
func openTrace(res *results, path, plot string) (*results, func(error) error, error) {
	var tr *results
	if path != "" {
		var err error
		if tr, err = openResults(path, plot); err != nil {
			res.files.Abort()
			return nil, nil, err
		}
	}
	abort := func(err error) error {
		res.files.Abort()
		if tr != nil {
			tr.files.Abort()
		}
		return err
	}
	return tr, abort, nil
}

// finishTrace writes a trace CSV, its figure when the results have a plot (drawn from the
// rows as aim plot draws the file), and its manifest.
func finishTrace(r *results, columns []string, rows [][]string, params, manifest map[string]any) error {
	if err := writeRows(r.csv.File(), columns, rows); err != nil {
		return err
	}
	var fig *figure.Figure
	if r.plot != nil {
		t, err := tableOf(r.csv.Path(), columns, rows)
		if err != nil {
			return err
		}
		t.params = params
		if fig, err = buildFigure([]*csvTable{t}, plotOptions{}); err != nil {
			return err
		}
	}
	return r.finish(fig, manifest)
}
