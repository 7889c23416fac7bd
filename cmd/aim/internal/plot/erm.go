package plot

// erm.go: the figures of aim erm: the test error of empirical risk minimisation with weight
// decay against alpha beside the Bayes-optimal error (and aim gd points), and the limiting
// spectrum of its estimator.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// ermCurve is one (rho, noise, teacher, D) of aim erm tables: the lambdas drawn at it share its
// colours. D is a power-law teacher's, whose theory is at a given D (0 for mp).
type ermCurve struct {
	rho, noise float64
	teacher    string
	D          float64
}

// has reports whether row i of an aim erm table is at curve c.
func (c ermCurve) has(t *table.Table, i int) bool {
	return sameValue(t.V(i, "rho"), c.rho) && sameValue(noiseOf(t, i), c.noise) && teacherOf(t, i) == c.teacher && theoryDOf(t, i) == c.D
}

// label is ", teacher powerlaw:1.25 at D = 60" for a power-law teacher's curve, else "".
func (c ermCurve) label() string {
	if c.teacher == "mp" {
		return ""
	}
	s := ", teacher " + c.teacher
	if c.D > 0 {
		s += " at D = " + wholeNum(c.D)
	}
	return s
}

// ermCurves returns the (rho, noise, teacher, D) of the rows of ts in the order they first
// appear.
func ermCurves(ts []*table.Table) []ermCurve {
	var out []ermCurve
	seen := map[ermCurve]bool{}
	for _, t := range ts {
		for i := 0; i < t.Rows(); i++ {
			c := ermCurve{t.V(i, "rho"), noiseOf(t, i), teacherOf(t, i), theoryDOf(t, i)}
			if math.IsNaN(c.rho) || math.IsNaN(c.noise) || seen[c] {
				continue
			}
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// noiseOf is the label noise of row i: 0 where the table has no noise column or the cell is
// empty (a noiseless run).
func noiseOf(t *table.Table, i int) float64 {
	if d := t.V(i, "noise"); !math.IsNaN(d) {
		return d
	}
	return 0
}

// lambdaOf is the weight decay of row i: 0 where the table has no weight_decay column (an aim
// gd CSV from before weight decay) or the cell is empty.
func lambdaOf(t *table.Table, i int) float64 {
	if l := t.V(i, "weight_decay"); !math.IsNaN(l) {
		return l
	}
	return 0
}

// sameValue reports whether two values are the same as the CSVs write them (12 significant
// digits).
func sameValue(a, b float64) bool { return table.FormatFloat(a) == table.FormatFloat(b) }

// lambdaLabel is the legend label of a weight decay: "λ = 0.1".
func lambdaLabel(l float64) string { return fmt.Sprintf("%s = %g", figure.Lambda, l) }

// curveTitle is ": ρ = 0.5, Δ = 0.25" for a figure of one (rho, noise) (with a power-law
// teacher's, its teacher and D), else "".
func curveTitle(cs []ermCurve) string {
	if len(cs) != 1 {
		return ""
	}
	return fmt.Sprintf(": %s = %g, %s = %g", figure.Rho, cs[0].rho, figure.Delta, cs[0].noise) + cs[0].label()
}

// curveSuffix is ", ρ = 0.5, Δ = 0.25" in a legend of several (rho, noise) (with a power-law
// teacher's, its teacher and D), else "".
func curveSuffix(cs []ermCurve, c ermCurve) string {
	if len(cs) < 2 {
		return ""
	}
	return fmt.Sprintf(", %s = %g, %s = %g", figure.Rho, c.rho, figure.Delta, c.noise) + c.label()
}

// lambdaIndex returns the index of l in *ls, appending it when absent.
func lambdaIndex(ls *[]float64, l float64) int {
	for k, v := range *ls {
		if sameValue(v, l) {
			return k
		}
	}
	*ls = append(*ls, l)
	return len(*ls) - 1
}

// The penalties of aim erm (erm.Penalty's words): the regulariser of the estimator.
const (
	nuclear = "nuclear" // lambda Tr S over PSD S: weight decay on W
	ridge   = "ridge"   // lambda ||S||_F^2: weight decay on S trained itself (aim gd --direct)
)

// penaltyOf is the penalty of row i of an aim erm table: nuclear where the table has no
// penalty column (a file from before ridge) or the cell is empty.
func penaltyOf(t *table.Table, i int) string {
	if p := t.S(i, "penalty"); p != "" {
		return p
	}
	return nuclear
}

// gdPenaltyOf is the penalty of the estimator row i of an aim gd table trains: ridge for a
// direct student (its direct column true), nuclear otherwise (and without the column).
func gdPenaltyOf(t *table.Table, i int) string {
	if d, err := strconv.ParseBool(t.S(i, "direct")); err == nil && d {
		return ridge
	}
	return nuclear
}

// penaltyWords is how a title names a penalty's weight decay.
var penaltyWords = map[string]string{nuclear: "nuclear-norm", ridge: "ridge"}

// ermLine is one line of an ERM figure's legend and colours: a penalty and a weight decay.
type ermLine struct {
	penalty string
	lambda  float64
}

// lineIndex returns the index of (penalty, l) in *ls, appending it when absent.
func lineIndex(ls *[]ermLine, penalty string, l float64) int {
	for k, v := range *ls {
		if v.penalty == penalty && sameValue(v.lambda, l) {
			return k
		}
	}
	*ls = append(*ls, ermLine{penalty, l})
	return len(*ls) - 1
}

// ermModel is "softmax T = 2" when the ERM tables are the softmax's (their channel column; a
// table without it is the linear channel's), else "": the title puts it before the curve's rho
// and noise.
func ermModel(erms []*table.Table) string {
	for _, t := range erms {
		if t.Rows() > 0 && t.S(0, "channel") == "softmax" {
			return fmt.Sprintf("softmax T = %s, ", wholeNum(t.V(0, "T")))
		}
	}
	return ""
}

// ermFigure draws `aim erm` tables: per (rho, noise), the test error against alpha, one line
// per penalty and weight decay lambda, the Bayes-optimal error as a dashed black line, and the
// points of `aim gd` tables (the mean and standard error over seeds of their error column at
// each alpha) in the colour of the line of their penalty (ridge for a direct student, nuclear
// otherwise) and lambda (0 for a CSV without weight_decay): only the points of a penalty some
// line has. GD runs of one line that differ in anything else (D, precision, schedule: their
// run sets) are told apart in the legend, the second and later in colours of their own. The title names the penalty when every line has one, else the legend does. Beside
// the nuclear line at lambda = 0, the thresholds of the tables' manifests (table.Thresholds):
// alpha_c dotted (noiseless labels, where perfect recovery exists) and, with label noise,
// alpha_interp dash-dotted, in that line's colour.
func ermFigure(erms, gds []*table.Table, o Options) *figure.Figure {
	curves := ermCurves(erms)
	// The (penalty, lambda) in the order they first appear, those of the lines first: the
	// colour of a (curve, line) is its index among the curves times the lines, plus the line's.
	var lines []ermLine
	penalties := map[string]bool{}
	for _, t := range erms {
		for i := 0; i < t.Rows(); i++ {
			if l := t.V(i, "weight_decay"); !math.IsNaN(l) {
				lineIndex(&lines, penaltyOf(t, i), l)
				penalties[penaltyOf(t, i)] = true
			}
		}
	}
	// gdRow reports whether row i of an aim gd table is drawn at curve c: a run at its rho,
	// noise and teacher (a power law's at its D) whose penalty some line has.
	gdRow := func(t *table.Table, i int, c ermCurve) bool {
		return sameValue(t.V(i, "rho"), c.rho) && sameValue(noiseOf(t, i), c.noise) && penalties[gdPenaltyOf(t, i)] &&
			teacherOf(t, i) == c.teacher && (c.D == 0 || sameValue(t.V(i, "D"), c.D))
	}
	title := "ERM with weight decay"
	mixed := len(penalties) > 1
	if !mixed {
		for p := range penalties {
			title = "ERM with " + penaltyWords[p] + " weight decay"
		}
	}
	ct := curveTitle(curves)
	if model := ermModel(erms); model != "" {
		ct = ": " + model + strings.TrimPrefix(ct, ": ")
	}
	f := &figure.Figure{XLabel: aimXLabel["alpha"], YLabel: figure.ErrorLabel, Title: title + ct}
	// The GD runs drawn: the run sets (runSets, by weight decay and student kind too) at some
	// curve, named in the legend by what varies between them but the curve's rho and noise.
	var gdSets []*runSet
	for _, s := range runSets(gds, append(slices.Clone(gdRunCols), "direct"), true) {
		r := s.first()
		if slices.ContainsFunc(curves, func(c ermCurve) bool { return gdRow(r.t, r.i, c) }) {
			gdSets = append(gdSets, s)
		}
	}
	gdNames := namesOf(gdSets, append(slices.Clone(gdRunCols), "direct"))
	if len(gdSets) > 0 {
		f.Title = fmt.Sprintf("%s (lines), GD%s (points)", title, gdNames.atD()) + ct
	}
	o.applyAxes(f, false, false)
	if !f.LogY {
		f.YMin, f.YMax = 0, math.SmallestNonzeroFloat64 // the y axis starts at 0
	}
	for _, s := range gdSets {
		r := s.first()
		lineIndex(&lines, gdPenaltyOf(r.t, r.i), s.lambda)
	}
	// label is the legend label of a line: its penalty only when the figure has several.
	label := func(what string, li int) string {
		if mixed {
			return what + " " + lines[li].penalty + " " + lambdaLabel(lines[li].lambda)
		}
		return what + " " + lambdaLabel(lines[li].lambda)
	}
	group := func(ci, li int) int { return ci*len(lines) + li }
	for ci, c := range curves {
		suffix := curveSuffix(curves, c)
		var th *table.Thresholds // of the first table with a nuclear lambda = 0 line at c
		for k, t := range erms {
			tsuffix := suffix
			if len(erms) > 1 {
				tsuffix += " (" + t.Name() + ")"
			}
			byLine := map[int]*figure.Series{}
			var order []int
			var bo *figure.Series
			for i := 0; i < t.Rows(); i++ {
				if !c.has(t, i) {
					continue
				}
				l := t.V(i, "weight_decay")
				if math.IsNaN(l) {
					continue
				}
				li := lineIndex(&lines, penaltyOf(t, i), l)
				s, ok := byLine[li]
				if !ok {
					s = &figure.Series{Label: label("ERM", li) + tsuffix, Group: group(ci, li), Dashed: k > 0}
					byLine[li] = s
					order = append(order, li)
					if th == nil && t.Th != nil && lines[li].penalty == nuclear && l == 0 {
						th = t.Th
					}
				}
				x := t.V(i, "alpha")
				s.X, s.Y = append(s.X, x), append(s.Y, t.V(i, "test_error"))
				// The Bayes-optimal error depends on (rho, noise, alpha) only: from the rows of
				// the first line.
				if li == order[0] {
					if bo == nil {
						bo = &figure.Series{Label: "Bayes-optimal" + tsuffix, Group: -1, Dashed: true}
					}
					bo.X, bo.Y = append(bo.X, x), append(bo.Y, t.V(i, "bo_error"))
				}
			}
			for _, li := range order {
				f.Series = append(f.Series, *byLine[li])
			}
			if bo != nil {
				f.Series = append(f.Series, *bo)
			}
		}
		if th != nil {
			g := group(ci, lineIndex(&lines, nuclear, 0))
			if a, ok := table.RhoAt(th.PerfectRecovery, c.rho); ok && c.noise == 0 && !math.IsNaN(a) && !math.IsInf(a, 0) {
				f.VLines = append(f.VLines, figure.VLine{X: a, Group: g, Label: figure.AlphaC + suffix, Style: figure.VDotted})
			}
			if a, ok := table.RhoAt(th.Interpolation, c.rho); ok && c.noise > 0 && !math.IsNaN(a) && !math.IsInf(a, 0) {
				f.VLines = append(f.VLines, figure.VLine{X: a, Group: g, Label: figure.AlphaInt + suffix, Style: figure.VDashDot})
			}
		}
		// The GD sets at this curve, in the colour of their line; a second set of one line
		// (runs at another D, say) in a colour of its own.
		variants := map[int]int{}
		for _, gs := range gdSets {
			r := gs.first()
			if !gdRow(r.t, r.i, c) {
				continue
			}
			li := lineIndex(&lines, gdPenaltyOf(r.t, r.i), gs.lambda)
			g := group(ci, li) + variants[li]*len(curves)*len(lines)
			variants[li]++
			pts := figure.Series{Label: label("GD", li) + suffix + gdNames.suffix(gs, "noise", "teacher", "direct"), Group: g, Points: true}
			for _, a := range gs.alphas {
				if m, se, ok := gs.mean(a, "error"); ok {
					pts.X, pts.Y, pts.YErr = append(pts.X, a), append(pts.Y, m), append(pts.YErr, se)
				}
			}
			if len(pts.X) > 0 {
				f.Series = append(f.Series, pts)
			}
		}
	}
	return f
}

// Histogram is a normalised histogram of the eigenvalues of students' S at one (rho, lambda),
// drawn beside the predicted density of an `aim erm --spectrum` table: bin k spans [Edges[k],
// Edges[k+1]] with height Density[k] = (eigenvalues in the bin) / (N bin width), N counting
// every eigenvalue, those below the cut (Below, as a fraction of N) included, so that its area
// is the share above the cut, as the predicted density's is 1 - atom. Cut 0 is none (the ridge
// penalty's, whose spectrum has no atom): every eigenvalue is binned.
type Histogram struct {
	Rho, Lambda float64
	Edges       []float64 // len(Density) + 1, increasing
	Density     []float64
	N           int     // the eigenvalues, below the cut included
	Below       float64 // the fraction of them below the cut, left out of the bins
	Cut         float64 // the cut (1e-6; 0: none)
}

// ERMSpectrumFigure draws an `aim erm --spectrum` table: the density of the continuous part of
// the estimator's limiting spectrum, one line per (rho, noise, lambda) with its atom at 0 in
// the legend (the nuclear penalty's; the ridge penalty's spectrum has none, and the title says
// ridge), and each histogram of hists as a dashed step line in the colour of the line of its
// rho and lambda, whose share below the cut the line's legend gives beside the atom.
func ERMSpectrumFigure(t *table.Table, hists []Histogram, o Options) *figure.Figure {
	curves := ermCurves([]*table.Table{t})
	f := &figure.Figure{XLabel: "Eigenvalue of Ŝ", YLabel: "Density (continuous part)", Title: "Spectrum of the ERM estimator"}
	ridgeRows := t.Rows() > 0 && penaltyOf(t, 0) == ridge
	if ridgeRows {
		f.Title = "Spectrum of the ridge ERM estimator"
	}
	if t.Rows() > 0 {
		f.Title += fmt.Sprintf(" at %s = %g", figure.Alpha, t.V(0, "alpha"))
	}
	f.Title += curveTitle(curves)
	o.applyAxes(f, false, false)
	if !f.LogY {
		f.YMin, f.YMax = 0, math.SmallestNonzeroFloat64
	}
	var lambdas []float64
	for i := 0; i < t.Rows(); i++ {
		if l := t.V(i, "weight_decay"); !math.IsNaN(l) {
			lambdaIndex(&lambdas, l)
		}
	}
	for ci, c := range curves {
		suffix := curveSuffix(curves, c)
		lines := map[int]*figure.Series{}
		atoms := map[int]float64{}
		var order []int
		for i := 0; i < t.Rows(); i++ {
			l := t.V(i, "weight_decay")
			if math.IsNaN(l) || !c.has(t, i) {
				continue
			}
			li := lambdaIndex(&lambdas, l)
			s, ok := lines[li]
			if !ok {
				s = &figure.Series{Group: ci*len(lambdas) + li}
				lines[li], atoms[li] = s, t.V(i, "atom")
				order = append(order, li)
			}
			s.X, s.Y = append(s.X, t.V(i, "x")), append(s.Y, t.V(i, "density"))
		}
		for _, li := range order {
			s := lines[li]
			s.Label = fmt.Sprintf("ERM %s: atom %.3g", lambdaLabel(lambdas[li]), atoms[li])
			if ridgeRows {
				s.Label = "ERM " + lambdaLabel(lambdas[li])
			}
			var steps []figure.Series
			for _, h := range hists {
				if !sameValue(h.Rho, c.rho) || !sameValue(h.Lambda, lambdas[li]) || len(h.Edges) != len(h.Density)+1 {
					continue
				}
				if h.Cut > 0 {
					s.Label += fmt.Sprintf(", GD %.3g below %s", h.Below, cutLabel(h.Cut))
				}
				st := figure.Series{Label: fmt.Sprintf("GD %s (%d eigenvalues)", lambdaLabel(h.Lambda), h.N) + suffix, Group: s.Group, Dashed: true}
				for k, d := range h.Density {
					st.X = append(st.X, h.Edges[k], h.Edges[k+1])
					st.Y = append(st.Y, d, d)
				}
				steps = append(steps, st)
			}
			s.Label += suffix
			f.Series = append(f.Series, *s)
			f.Series = append(f.Series, steps...)
		}
	}
	if o.Title != "" || o.TitleSet {
		f.Title = o.Title
	}
	f.Size = o.Size
	return f
}

// cutLabel writes the eigenvalue cut of a histogram: "10^{-6}" for a power of ten.
func cutLabel(c float64) string {
	if e := math.Log10(c); c > 0 && e == math.Round(e) {
		return "10^{" + strings.ReplaceAll(fmt.Sprintf("%g", e), "-", figure.Minus) + "}"
	}
	return fmt.Sprintf("%g", c)
}
