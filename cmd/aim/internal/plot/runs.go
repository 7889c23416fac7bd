package plot

// runs.go: the runs of aim amp, aim gd and aim smi amp tables grouped into what one legend
// entry draws.

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// ampRunCols are the columns of an aim amp table, beyond rho, the weight decay and alpha,
// whose values tell runs apart on one figure: the model, the dimension and the precision of
// the products. Runs that differ in any of them are never averaged together.
var ampRunCols = []string{"channel", "T", "beta", "noise", "teacher", "D", "precision"}

// smiRunCols are those of an aim smi amp table: the model (its L is the table's, the same
// for every table of a figure) and D.
var smiRunCols = []string{"M", "c", "beta", "D"}

// gdRunCols adds gradient descent's schedule.
var gdRunCols = append(slices.Clone(ampRunCols), "optimizer", "steps", "lr", "restarts")

// runCell returns the value of a run column in row i as the legend writes it: the cell as
// written, with the defaults of tables from before the column (mp teacher, no noise, fp64).
func runCell(t *table.Table, i int, col string) string {
	s := t.S(i, col)
	switch {
	case col == "teacher":
		return teacherOf(t, i)
	case s != "":
		return s
	case col == "noise":
		return "0"
	case col == "precision":
		return "fp64"
	}
	return s
}

// runWords names a run column's value in a legend or a title: "T = 3", "D = 400",
// "precision tf32".
func runWords(col, v string) string {
	switch col {
	case "T", "D", "M", "c":
		return col + " = " + v
	case "beta":
		return figure.Beta + " = " + v
	case "noise":
		return figure.Delta + " = " + v
	case "teacher":
		return "teacher " + v
	case "precision":
		return "precision " + v
	case "steps":
		return v + " steps"
	case "lr":
		return "lr " + v
	case "restarts":
		return v + " restarts"
	}
	return v // channel, optimizer
}

// runRow is row i of table t.
type runRow struct {
	t *table.Table
	i int
}

// runSet is the runs of simulation tables that one legend entry draws: those at one rho and
// one weight decay whose run columns agree, grouped by alpha in the order the alphas first
// appear. The runs of one set may come from several tables (seeds run apart).
type runSet struct {
	vals        []string // the run columns' values
	rho, lambda float64
	alphas      []float64
	rows        map[float64][]runRow
}

// first returns the first row of the set.
func (s *runSet) first() runRow { return s.rows[s.alphas[0]][0] }

// mean returns the mean of a column over the runs at alpha that have it, and its standard
// error.
func (s *runSet) mean(alpha float64, name string) (float64, float64, bool) {
	rows := s.rows[alpha]
	return meanOver(len(rows), func(k int) float64 { return rows[k].t.V(rows[k].i, name) })
}

// runSets groups the rows of the tables with a finite rho (where they have the column) and
// alpha into run sets by the columns cols, rho and (withLambda) the weight decay. The sets are
// ordered by their columns' values, then their weight decay, then their rho, each in the order
// it first appears, so that the colours of one table's sets follow its grid.
func runSets(ts []*table.Table, cols []string, withLambda bool) []*runSet {
	var keys, lambdas, rhos []string
	index := func(list *[]string, v string) int {
		if k := slices.Index(*list, v); k >= 0 {
			return k
		}
		*list = append(*list, v)
		return len(*list) - 1
	}
	type id struct{ key, lambda, rho int }
	byID := map[id]*runSet{}
	var ids []id
	for _, t := range ts {
		hasRho := slices.Contains(t.Header, "rho") // the SMI's tables have none: rho 0
		for i := 0; i < t.Rows(); i++ {
			rho, alpha := 0.0, t.V(i, "alpha")
			if hasRho {
				rho = t.V(i, "rho")
			}
			if math.IsNaN(rho) || math.IsNaN(alpha) {
				continue
			}
			vals := make([]string, len(cols))
			for c, col := range cols {
				vals[c] = runCell(t, i, col)
			}
			lambda := 0.0
			if withLambda {
				lambda = lambdaOf(t, i)
			}
			k := id{index(&keys, strings.Join(vals, "\x00")), index(&lambdas, table.FormatFloat(lambda)), index(&rhos, table.FormatFloat(rho))}
			s, ok := byID[k]
			if !ok {
				s = &runSet{vals: vals, rho: rho, lambda: lambda, rows: map[float64][]runRow{}}
				byID[k] = s
				ids = append(ids, k)
			}
			if _, ok := s.rows[alpha]; !ok {
				s.alphas = append(s.alphas, alpha)
			}
			s.rows[alpha] = append(s.rows[alpha], runRow{t, i})
		}
	}
	slices.SortStableFunc(ids, func(a, b id) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.lambda, b.lambda), cmp.Compare(a.rho, b.rho))
	})
	sets := make([]*runSet, len(ids))
	for k, i := range ids {
		sets[k] = byID[i]
	}
	return sets
}

// runNames tells the run sets of a figure apart: which of their columns vary.
type runNames struct {
	cols []string
	vary []bool
	sets []*runSet
}

// namesOf returns the runNames of sets grouped by cols.
func namesOf(sets []*runSet, cols []string) runNames {
	n := runNames{cols: cols, vary: make([]bool, len(cols)), sets: sets}
	for c := range cols {
		for _, s := range sets {
			n.vary[c] = n.vary[c] || s.vals[c] != sets[0].vals[c]
		}
	}
	return n
}

// common returns the value the sets share in col, or "" where it varies or there is no set.
func (n runNames) common(col string) string {
	c := slices.Index(n.cols, col)
	if c < 0 || n.vary[c] || len(n.sets) == 0 {
		return ""
	}
	return n.sets[0].vals[c]
}

// suffix returns ", T = 3, D = 400" for set s: the columns that vary between the sets, except
// those of skip.
func (n runNames) suffix(s *runSet, skip ...string) string {
	var b strings.Builder
	for c, col := range n.cols {
		if n.vary[c] && !slices.Contains(skip, col) {
			b.WriteString(", " + runWords(col, s.vals[c]))
		}
	}
	return b.String()
}

// modelTitle returns ": softmax, T = 2, Δ = 0.1, teacher powerlaw:1.25, precision tf32", the
// part of a simulation figure's title the sets share: the channel and T, a nonzero noise, a
// teacher other than mp and a precision other than fp64 ("" where nothing is shared).
func (n runNames) modelTitle() string {
	var parts []string
	if v := n.common("channel"); v != "" {
		parts = append(parts, v)
	}
	if v := n.common("T"); v != "" {
		parts = append(parts, runWords("T", v))
	}
	if v := n.common("noise"); v != "" {
		if d, err := strconv.ParseFloat(v, 64); err == nil && d > 0 {
			parts = append(parts, runWords("noise", v))
		}
	}
	if v := n.common("teacher"); v != "" && v != "mp" {
		parts = append(parts, runWords("teacher", v))
	}
	if v := n.common("precision"); v != "" && v != "fp64" {
		parts = append(parts, runWords("precision", v))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// atD returns " at D = 400" where the sets share D, else "".
func (n runNames) atD() string {
	if v := n.common("D"); v != "" {
		return " at " + runWords("D", v)
	}
	return ""
}

// lineKey identifies the theory line beside a set's runs: its rho, weight decay and theoryAt,
// D left out for the MP teacher, whose theory has none.
type lineKey struct {
	rho, lambda string
	theory      string
}

// lineOf returns the lineKey of set s.
func lineOf(s *runSet) lineKey {
	r := s.first()
	at := runsAt(r.t, r.i)
	theory := strings.Join([]string{at.channel, table.FormatFloat(at.T), table.FormatFloat(at.beta), table.FormatFloat(at.noise), at.teacher}, "\x00")
	if at.teacher != "mp" {
		theory += "\x00" + table.FormatFloat(at.D)
	}
	return lineKey{table.FormatFloat(s.rho), table.FormatFloat(s.lambda), theory}
}

// theoryFree returns the run columns the theory at at does not depend on: the precision, and D
// but for a power-law teacher.
func theoryFree(at theoryAt) []string {
	if at.teacher == "mp" {
		return []string{"D", "precision"}
	}
	return []string{"precision"}
}
