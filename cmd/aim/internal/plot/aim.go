package plot

// aim.go: the figures of aim se, amp and gd and their traces.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// aimXLabel is the x label of each x variable of the AIM figures.
var aimXLabel = map[string]string{
	"alpha":     "Sample complexity " + figure.Alpha + " = N/D^{2}",
	"alpha-rho": "Sample complexity " + figure.AlphaBarR + " = N/(D R) = " + figure.Alpha + "/" + figure.Rho,
	"alpha-bar": figure.AlphaBar + " = " + figure.Alpha + " (T^{2} + T " + figure.Minus + " 2)",
}

// aimX is the x value of a row: alpha, alpha-bar = alpha (T^2 + T - 2) or alpha/rho.
func aimX(t *table.Table, i int, mode string) float64 {
	switch mode {
	case "alpha-bar":
		return t.V(i, "alpha_bar")
	case "alpha-rho":
		if t.Kind == table.SE {
			return t.V(i, "alpha_r")
		}
		return t.V(i, "alpha") / t.V(i, "rho")
	}
	return t.V(i, "alpha")
}

// noiseTitle returns ", Δ = x" for a table whose first row has label noise Delta = x > 0 (a
// table without the noise column is noiseless), else "".
func noiseTitle(t *table.Table) string {
	if t.Rows() == 0 {
		return ""
	}
	if d := t.V(0, "noise"); d > 0 { // NaN (no column, an empty cell) is noiseless
		return fmt.Sprintf(", %s = %g", figure.Delta, d)
	}
	return ""
}

// teacherOf is the teacher of row i, the law of S: mp where the table has no teacher column
// or the cell is empty (a file from before the power-law teacher).
func teacherOf(t *table.Table, i int) string {
	if s := t.S(i, "teacher"); s != "" {
		return s
	}
	return "mp"
}

// theoryDOf is the D of row i of a theory table (aim se, aim erm): a power-law teacher's, whose
// theory is at a given D; 0 for the MP teacher's (an empty cell, or no column), which has none.
func theoryDOf(t *table.Table, i int) float64 {
	if d := t.V(i, "D"); !math.IsNaN(d) {
		return d
	}
	return 0
}

// teacherTitle returns ", teacher powerlaw:1.25" for a table whose first row has a teacher other
// than mp, else "".
func teacherTitle(t *table.Table) string {
	if t.Rows() == 0 || teacherOf(t, 0) == "mp" {
		return ""
	}
	return ", teacher " + teacherOf(t, 0)
}

// dLabel is ", D = 60" for a power-law teacher's theory at D (D > 0), else "".
func dLabel(D float64) string {
	if D > 0 {
		return ", D = " + wholeNum(D)
	}
	return ""
}

// theoryAt is the model and the dimension of simulation runs, which the theory lines beside
// them must share: the channel, T, beta, the label noise and the teacher, and the runs' D, at
// which a power-law teacher's theory is computed.
type theoryAt struct {
	channel, teacher  string
	T, beta, noise, D float64
}

// runsAt returns the theoryAt of row i of a simulation table (aim amp, aim gd).
func runsAt(t *table.Table, i int) theoryAt {
	return theoryAt{channel: t.S(i, "channel"), teacher: teacherOf(t, i), T: t.V(i, "T"), beta: t.V(i, "beta"), noise: noiseOf(t, i), D: t.V(i, "D")}
}

// matches reports whether row i of a theory table is the theory of the runs: the same teacher,
// noise, and channel, T and beta where both tables have them, and, for a power law (a row with
// a D), the same D.
func (a theoryAt) matches(t *table.Table, i int) bool {
	if teacherOf(t, i) != a.teacher || !sameValue(noiseOf(t, i), a.noise) {
		return false
	}
	if c := t.S(i, "channel"); c != "" && a.channel != "" && c != a.channel {
		return false
	}
	for _, v := range []struct {
		name string
		want float64
	}{{"T", a.T}, {"beta", a.beta}} {
		if got := t.V(i, v.name); !math.IsNaN(got) && !math.IsNaN(v.want) && !sameValue(got, v.want) {
			return false
		}
	}
	D := theoryDOf(t, i)
	return D == 0 || sameValue(D, a.D)
}

// channelInfo returns the first row's channel (without the -paper mark), whether it is the
// paper-compat form, T and beta.
func channelInfo(t *table.Table) (name string, paper bool, T, beta float64) {
	if t.Rows() == 0 {
		return "", false, math.NaN(), math.NaN()
	}
	name = t.S(0, "channel")
	paper = strings.HasSuffix(name, "-paper")
	return strings.TrimSuffix(name, "-paper"), paper, t.V(0, "T"), t.V(0, "beta")
}

// aimAutoAxes: log-log for hardmax, linear for softmax.
func aimAutoAxes(tables ...[]*table.Table) bool {
	for _, ts := range tables {
		for _, t := range ts {
			if name, _, _, _ := channelInfo(t); name == "hardmax" {
				return true
			}
		}
	}
	return false
}

// rhoLabel is the legend label of a rho: "ρ = 0.5".
func rhoLabel(r float64) string { return fmt.Sprintf("%s = %g", figure.Rho, r) }

// rhoAlphaLabel is the legend label of a (rho, alpha) point: "ρ = 0.5, α = 0.1".
func rhoAlphaLabel(r, a float64) string {
	return fmt.Sprintf("%s, %s = %g", rhoLabel(r), figure.Alpha, a)
}

// wholeNum formats a whole number (a dimension, a count, a seed) as the run commands' %d does.
func wholeNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// distinctValues returns the values of a column in the order they first appear (NaN skipped).
func distinctValues(t *table.Table, name string) []float64 {
	var out []float64
	seen := map[float64]bool{}
	for i := 0; i < t.Rows(); i++ {
		v := t.V(i, name)
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
func seFigure(ses []*table.Table, o Options) *figure.Figure {
	rescaled := false
	for _, t := range ses {
		for i := 0; i < t.Rows(); i++ {
			rescaled = rescaled || t.V(i, "rho") == 0
		}
	}
	auto := "alpha"
	if rescaled {
		auto = "alpha-rho"
	}
	mode := o.xMode(auto)
	f := &figure.Figure{YLabel: figure.ErrorLabel, XLabel: aimXLabel[mode], Title: "State evolution"}
	if name, paper, T, beta := channelInfo(ses[0]); name != "" {
		m := ""
		if paper {
			m = ", paper-compat"
		}
		f.Title = fmt.Sprintf("State evolution: %s%s, T = %s", name, m, wholeNum(T))
		if name == "softmax" {
			f.Title += fmt.Sprintf(", %s = %g", figure.Beta, beta)
		}
		f.Title += noiseTitle(ses[0]) + teacherTitle(ses[0])
	}
	// Tables of one channel at different T (the T comparison of README's hardmax figure) are
	// told apart by T, each in its own colour; others by their file names, dashed after the first.
	byT := len(ses) > 1
	seen := map[float64]bool{}
	name0, _, _, _ := channelInfo(ses[0])
	for _, t := range ses {
		name, _, T, _ := channelInfo(t)
		byT = byT && name == name0 && !seen[T] && len(distinctValues(t, "rho")) == 1
		seen[T] = true
	}
	if byT {
		name, paper, _, _ := channelInfo(ses[0])
		f.Title = "State evolution: " + name
		if paper {
			f.Title += ", paper-compat"
		}
	}
	o.applyAxes(f, aimAutoAxes(ses), aimAutoAxes(ses))
	if !f.LogY {
		f.YMin, f.YMax = 0, 1.05 // the estimation error runs from 1 (alpha = 0) to 0
	}
	for k, t := range ses {
		suffix := ""
		if len(ses) > 1 {
			suffix = " (" + t.Name() + ")"
		}
		if byT {
			_, _, T, _ := channelInfo(t)
			suffix = ", T = " + wholeNum(T)
		}
		// One line per rho, and per D for a power-law teacher, whose theory is at a given D.
		type curve struct{ rho, D float64 }
		var rhos []float64 // the rho of each curve of positive rho, whose index is the colour
		byRho := map[curve]*figure.Series{}
		var order []curve
		for i := 0; i < t.Rows(); i++ {
			r := t.V(i, "rho")
			if math.IsNaN(r) {
				continue
			}
			key := curve{r, theoryDOf(t, i)}
			s, ok := byRho[key]
			if !ok {
				s = &figure.Series{Label: figure.RhoToZero + suffix, Group: -1, Dashed: k > 0 && !byT}
				if byT {
					s.Group = k
				}
				if r != 0 {
					s.Group = len(rhos)
					if byT {
						s.Group = k
					}
					s.Label = rhoLabel(r) + dLabel(key.D) + suffix
					rhos = append(rhos, r)
				}
				byRho[key] = s
				order = append(order, key)
			}
			s.X = append(s.X, aimX(t, i, mode))
			s.Y = append(s.Y, t.V(i, "mmse"))
		}
		for _, key := range order {
			f.Series = append(f.Series, *byRho[key])
		}
		if t.Th == nil {
			continue
		}
		tRescaled := len(order) > len(rhos)
		if tRescaled {
			if mode == "alpha-rho" && !math.IsNaN(t.Th.AlphaBarC) {
				g := -1
				if byT {
					g = k
				}
				f.VLines = append(f.VLines, figure.VLine{X: t.Th.AlphaBarC, Group: g, Label: figure.AlphaBarC})
			}
			continue
		}
		_, _, T, _ := channelInfo(t)
		// alpha_PR per rho, and a first-order transition's thresholds (aim se: se.FirstOrder)
		// where one was found.
		lookup := func(m map[string]float64) func(r float64) (float64, bool) {
			return func(r float64) (float64, bool) { a, ok := m[table.RhoKey(r)]; return a, ok }
		}
		for _, th := range []struct {
			at    func(r float64) (float64, bool)
			label string
			style figure.VStyle
		}{
			{t.Th.AlphaPRAt, figure.AlphaPR + " per " + figure.Rho, figure.VDashed},
			{lookup(t.Th.AlphaIT), figure.AlphaIT + " per " + figure.Rho, figure.VDotted},
			{lookup(t.Th.AlphaAlg), figure.AlphaAlg + " per " + figure.Rho, figure.VDashDot},
		} {
			var vs []figure.VLine
			var at []float64 // the rho of each line
			for gi, r := range rhos {
				a, ok := th.at(r)
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
				vs = append(vs, figure.VLine{X: x, Group: gi, Style: th.style})
				at = append(at, r)
			}
			label := th.label + coincident(vs, at)
			for _, v := range vs {
				v.Label = label
				f.VLines = append(f.VLines, v)
			}
		}
	}
	return f
}

// coincidentTol is the relative distance within which two vertical lines are drawn as one.
// (alpha_PR at rho = 1 and 2 is 1/4 to the root finder's 3e-9.)
const coincidentTol = 1e-4

// coincident returns the legend's note on vertical lines of one kind that fall on one x for
// several rho (at[i] is line i's rho), where the last drawn hides the others:
// " (ρ = 1, 2 coincide)", with one such clause per shared x, or "" where none do.
func coincident(vs []figure.VLine, at []float64) string {
	var notes []string
	done := map[int]bool{}
	for i := range vs {
		if done[i] {
			continue
		}
		same := []string{strconv.FormatFloat(at[i], 'g', -1, 64)}
		for j := i + 1; j < len(vs); j++ {
			if !done[j] && math.Abs(vs[j].X-vs[i].X) <= coincidentTol*math.Abs(vs[i].X) {
				done[j] = true
				same = append(same, strconv.FormatFloat(at[j], 'g', -1, 64))
			}
		}
		if len(same) > 1 {
			notes = append(notes, fmt.Sprintf("%s = %s coincide", figure.Rho, strings.Join(same, ", ")))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// simWindow returns the x range of the SE lines beside simulation points: up to 1.1 times the
// largest x (from half the smallest x on a log axis).
func simWindow(sims []*table.Table, mode string, logx bool) func(x float64) bool {
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, t := range sims {
		for i := 0; i < t.Rows(); i++ {
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

// seLine returns the SE line at rho of the runs' teacher and D (at) from the first of the
// tables that has it, inside the window.
func seLine(ses []*table.Table, rho float64, at theoryAt, mode string, in func(float64) bool, label string, group int) (figure.Series, bool) {
	s := figure.Series{Label: label, Group: group}
	for _, t := range ses {
		found := false
		for i := 0; i < t.Rows(); i++ {
			if t.V(i, "rho") != rho || !at.matches(t, i) {
				continue
			}
			found = true
			if x := aimX(t, i, mode); in(x) {
				s.X, s.Y = append(s.X, x), append(s.Y, t.V(i, "mmse"))
			}
		}
		if found {
			return s, true
		}
	}
	return s, false
}

// ermSELine returns the line of the ERM state evolution beside the GAMP-ERM runs of set rs:
// the test error of the nuclear rows of the `aim erm` tables at the set's rho, weight decay and
// theory (its noise among them), from the first table that has them, or without one the
// se_mmse column of the set's runs (the ERM state evolution at their alphas).
func ermSELine(erms []*table.Table, rs *runSet, mode string, in func(float64) bool, label string, group int) (figure.Series, bool) {
	s := figure.Series{Label: label, Group: group}
	first := rs.first()
	at := runsAt(first.t, first.i)
	// The x of an alpha: alpha-bar by the runs' own ratio alpha_bar/alpha.
	x := func(a float64) float64 {
		switch mode {
		case "alpha-bar":
			return a * first.t.V(first.i, "alpha_bar") / first.t.V(first.i, "alpha")
		case "alpha-rho":
			return a / rs.rho
		}
		return a
	}
	for _, e := range erms {
		found := false
		for i := 0; i < e.Rows(); i++ {
			if !sameValue(e.V(i, "rho"), rs.rho) || !sameValue(e.V(i, "weight_decay"), rs.lambda) || penaltyOf(e, i) != nuclear || !at.matches(e, i) {
				continue
			}
			found = true
			if xi := x(e.V(i, "alpha")); in(xi) {
				s.X, s.Y = append(s.X, xi), append(s.Y, e.V(i, "test_error"))
			}
		}
		if found {
			return s, true
		}
	}
	for _, a := range rs.alphas {
		row := rs.rows[a][0]
		if v := row.t.V(row.i, "se_mmse"); !math.IsNaN(v) {
			s.X, s.Y = append(s.X, aimX(row.t, row.i, mode)), append(s.Y, v)
		}
	}
	return s, len(s.X) > 0
}

// ampFigure draws, per run set of the `aim amp` tables (runSets: a rho at one model, D and
// precision, its seeds gathered from every table), the SE line of the `aim se` tables of the
// same model and the mean final error of the runs that did not diverge, with its standard
// error, per alpha. The legend names what varies between the sets ("ρ = 0.5, D = 400").
// The runs of GAMP for ERM (weight_decay > 0) are drawn per (rho, lambda) beside the line of
// the ERM state evolution (ermSELine: the `aim erm` tables, or their se_mmse column), never
// beside an SE line.
func ampFigure(amps, ses, erms []*table.Table, o Options) *figure.Figure {
	mode := o.xMode("alpha")
	f := &figure.Figure{XLabel: aimXLabel[mode], YLabel: figure.ErrorLabel}
	lines := false               // whether some SE line is drawn: the title says so only then
	rie, ermRuns := false, false // which algorithms the points are
	o.applyAxes(f, aimAutoAxes(amps, ses), aimAutoAxes(amps, ses))
	if !f.LogY {
		f.YMin, f.YMax = 0, 1.05
	}
	in := simWindow(amps, mode, f.LogX)
	sets := runSets(amps, ampRunCols, true)
	names := namesOf(sets, ampRunCols)
	// How many sets each theory line is drawn beside (runs at several D or precisions share one).
	sharing := map[lineKey]int{}
	for _, s := range sets {
		sharing[lineOf(s)]++
	}
	drawn := map[lineKey]bool{}
	for g, s := range sets {
		r, l := s.rho, s.lambda
		first := s.first()
		at := runsAt(first.t, first.i)
		base := rhoLabel(r)
		if l > 0 {
			base = fmt.Sprintf("%s, %s", lambdaLabel(l), rhoLabel(r))
		}
		label := base + names.suffix(s)
		if l > 0 {
			ermRuns = true
			label = "GAMP-ERM " + label
		} else {
			rie = true
		}
		if k := lineOf(s); !drawn[k] {
			drawn[k] = true
			// A line beside one set shares its legend entry (the ERM line has its own); a line
			// shared by several sets names only the columns that vary between lines.
			lineSuffix := names.suffix(s)
			if sharing[k] > 1 {
				lineSuffix = names.suffix(s, theoryFree(at)...)
			}
			var line figure.Series
			var ok bool
			switch {
			case l > 0:
				line, ok = ermSELine(erms, s, mode, in, "ERM SE "+base+lineSuffix, g)
			case sharing[k] > 1:
				line, ok = seLine(ses, r, at, mode, in, "SE "+base+lineSuffix, g)
			default:
				line, ok = seLine(ses, r, at, mode, in, label, g)
			}
			if ok {
				f.Series = append(f.Series, line)
				lines = true
			}
		}
		pts := figure.Series{Label: label, Group: g, Points: true}
		for _, a := range s.alphas {
			if mean, stderr, ok := s.mean(a, "error"); ok {
				row := s.rows[a][0]
				pts.X, pts.Y, pts.YErr = append(pts.X, aimX(row.t, row.i, mode)), append(pts.Y, mean), append(pts.YErr, stderr)
			}
		}
		f.Series = append(f.Series, pts)
	}
	name := "GAMP-RIE"
	switch {
	case ermRuns && rie:
		name = "GAMP-RIE and GAMP for ERM"
	case ermRuns:
		name = "GAMP for ERM"
	}
	f.Title = name + names.atD()
	if lines {
		f.Title += " (points), state evolution (lines)"
	}
	f.Title += names.modelTitle()
	return f
}

// meanOver returns the mean and standard error of the values v(0), ..., v(n-1) that are not
// NaN, and false where none is.
func meanOver(n int, v func(k int) float64) (float64, float64, bool) {
	var xs []float64
	for k := range n {
		if x := v(k); !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return 0, 0, false
	}
	m, s := meanStderr(xs)
	return m, s, true
}

// gdFigure draws, per run set of the `aim gd` tables (a rho at one model, D, precision and
// schedule), the SE line, GD single (the mean over seeds of each run's mean student error), GD
// averaged, and the AMP points of `aim amp` tables at its rho, against alpha, as every AIM
// figure, unless o says otherwise.
func gdFigure(gds, ses, amps []*table.Table, o Options) *figure.Figure {
	mode := o.xMode("alpha")
	sets := runSets(gds, gdRunCols, false)
	names := namesOf(sets, gdRunCols)
	f := &figure.Figure{XLabel: aimXLabel[mode], YLabel: figure.ErrorLabel, Title: "Gradient descent" + names.atD()}
	var schedule []string
	if v := names.common("steps"); v != "" {
		schedule = append(schedule, runWords("steps", v))
	}
	if v := names.common("lr"); v != "" {
		schedule = append(schedule, runWords("lr", v))
	}
	if len(schedule) > 0 {
		f.Title += " (" + strings.Join(schedule, ", ") + ")"
	}
	f.Title += names.modelTitle()
	o.applyAxes(f, false, false)
	if !f.LogY {
		f.YMin, f.YMax = 0, 1.05
	}
	in := simWindow(gds, mode, f.LogX)
	ampSets := runSets(amps, ampRunCols, false)
	ampNames := namesOf(ampSets, ampRunCols)
	// Colours: the SE lines take 0, 1, ... in the order they first appear, a set k of runs 3 + k
	// for its single students and 3 + max(2, sets) + k for its averages.
	var lineKeys []lineKey
	avgBase := 3 + max(2, len(sets))
	ampDrawn := map[*runSet]bool{}
	for k, s := range sets {
		r := s.rho
		first := s.first()
		at := runsAt(first.t, first.i)
		if lk := lineOf(s); !slices.Contains(lineKeys, lk) {
			lineKeys = append(lineKeys, lk)
			if line, ok := seLine(ses, r, at, mode, in, "SE "+rhoLabel(r)+names.suffix(s, append(theoryFree(at), "optimizer", "steps", "lr", "restarts")...), len(lineKeys)-1); ok {
				f.Series = append(f.Series, line)
			}
		}
		suffix := names.suffix(s)
		restarts := first.t.V(first.i, "restarts")
		single := figure.Series{Label: "GD single " + rhoLabel(r) + suffix, Group: 3 + k, Points: true}
		avg := figure.Series{Label: fmt.Sprintf("GD averaged (%s) %s", wholeNum(restarts), rhoLabel(r)) + suffix, Group: avgBase + k, Points: true}
		for _, a := range s.alphas {
			m, se, ok := s.mean(a, "error_single")
			if !ok {
				continue
			}
			row := s.rows[a][0]
			x := aimX(row.t, row.i, mode)
			single.X, single.Y, single.YErr = append(single.X, x), append(single.Y, m), append(single.YErr, se)
			m, se, _ = s.mean(a, "error")
			avg.X, avg.Y, avg.YErr = append(avg.X, x), append(avg.Y, m), append(avg.YErr, se)
		}
		f.Series = append(f.Series, single)
		if restarts > 1 {
			f.Series = append(f.Series, avg)
		}
		// The AMP runs at this rho, after the first GD set that has it.
		for _, as := range ampSets {
			if ampDrawn[as] || !sameValue(as.rho, r) {
				continue
			}
			ampDrawn[as] = true
			pts := figure.Series{Label: "AMP " + rhoLabel(r) + ampNames.suffix(as), Group: -1, Points: true}
			for _, a := range as.alphas {
				if m, se, ok := as.mean(a, "error"); ok {
					row := as.rows[a][0]
					pts.X, pts.Y, pts.YErr = append(pts.X, aimX(row.t, row.i, mode)), append(pts.Y, m), append(pts.YErr, se)
				}
			}
			if len(pts.X) > 0 {
				f.Series = append(f.Series, pts)
			}
		}
	}
	return f
}

// gdTraceFigure draws the training error of the first student of every run against the step.
func gdTraceFigure(t *table.Table, o Options) *figure.Figure {
	f := &figure.Figure{Title: "Training curves: error of the first student", XLabel: "step", YLabel: figure.ErrorLabel}
	if D, ok := t.Param("D"); ok {
		f.Title = fmt.Sprintf("Training curves at D = %s: error of the first student", wholeNum(D))
	}
	o.applyAxes(f, false, true)
	traceRuns(t, "step", "error", func(run int, first bool, i int) figure.Series {
		s := figure.Series{Group: run}
		if first {
			s.Label = rhoAlphaLabel(t.V(i, "rho"), t.V(i, "alpha"))
		}
		return s
	}, f)
	return f
}

// ampTraceFigure draws the error of every GAMP-RIE run against the iteration, one colour per
// (rho, alpha).
func ampTraceFigure(t *table.Table, o Options) *figure.Figure {
	f := &figure.Figure{Title: "GAMP-RIE iterations", XLabel: "iteration", YLabel: figure.ErrorLabel}
	if D, ok := t.Param("D"); ok {
		f.Title = fmt.Sprintf("GAMP-RIE iterations at D = %s", wholeNum(D))
	}
	o.applyAxes(f, false, true)
	points := map[[2]float64]int{}
	traceRuns(t, "iter", "error", func(_ int, first bool, i int) figure.Series {
		key := [2]float64{t.V(i, "rho"), t.V(i, "alpha")}
		g, ok := points[key]
		if !ok {
			g = len(points)
			points[key] = g
		}
		s := figure.Series{Group: g}
		if first {
			s.Label = rhoAlphaLabel(key[0], key[1])
		}
		return s
	}, f)
	return f
}

// traceRuns adds one series per run (rows of the same rho, alpha and seed, in the order they
// first appear) of y against x; series makes the series of a run from its index, whether it
// has the first row's seed, and its first row.
func traceRuns(t *table.Table, x, y string, series func(run int, first bool, i int) figure.Series, f *figure.Figure) {
	if t.Rows() == 0 {
		return
	}
	seed0 := t.V(0, "seed")
	index := map[[3]float64]int{}
	for i := 0; i < t.Rows(); i++ {
		key := [3]float64{t.V(i, "rho"), t.V(i, "alpha"), t.V(i, "seed")}
		k, ok := index[key]
		if !ok {
			k = len(f.Series)
			index[key] = k
			f.Series = append(f.Series, series(len(index)-1, key[2] == seed0, i))
		}
		s := &f.Series[k]
		s.X, s.Y = append(s.X, t.V(i, x)), append(s.Y, t.V(i, y))
	}
}

// aimThresholdsFigure draws an `aim thresholds` table: alpha-bar_c against T, with its error
// bars (hardmax T > 2), beside the softmax channel's 1/K for scale.
func aimThresholdsFigure(t *table.Table, o Options) *figure.Figure {
	f := &figure.Figure{Title: "Weak-recovery threshold (" + figure.RhoToZero + ")", XLabel: "Tokens per sequence T",
		YLabel: figure.AlphaBarC + " = N/(D R)"}
	o.applyAxes(f, false, true)
	name := ""
	if t.Rows() > 0 {
		name = t.S(0, "channel")
	}
	ch := figure.Series{Label: name, Group: 0, Points: true}
	line := figure.Series{Label: name, Group: 0}
	sm := figure.Series{Label: "softmax 1/K, K = " + figure.Sup("T", "2") + " + T " + figure.Minus + " 2", Group: 1, Dashed: true}
	for i := 0; i < t.Rows(); i++ {
		T, v := t.V(i, "T"), t.V(i, "alpha_bar_c")
		ch.X, ch.Y, ch.YErr = append(ch.X, T), append(ch.Y, v), append(ch.YErr, t.V(i, "alpha_bar_c_err"))
		line.X, line.Y = append(line.X, T), append(line.Y, v)
		sm.X, sm.Y = append(sm.X, T), append(sm.Y, t.V(i, "alpha_bar_c_softmax"))
	}
	f.Series = append(f.Series, line, ch)
	if name != "softmax" {
		f.Series = append(f.Series, sm)
	}
	return f
}
