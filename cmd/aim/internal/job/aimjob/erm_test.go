package aimjob

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/job/jobtest"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim/erm"
	"github.com/aimtheory/aim/engine/aim/se"
)

// writeGDCSV writes rows as an aim gd CSV, without the columns of drop (an older file).
func writeGDCSV(t *testing.T, path string, rows []GDRow, drop ...string) {
	t.Helper()
	header := GDSchema.Header(0)
	keep := func(cells []string) []string {
		var out []string
		for j, c := range cells {
			if !slices.Contains(drop, header[j]) {
				out = append(out, c)
			}
		}
		return out
	}
	var b strings.Builder
	b.WriteString(strings.Join(keep(header), ",") + "\n")
	for i := range rows {
		b.WriteString(strings.Join(keep(GDSchema.Row(&rows[i])), ",") + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sameCell is v as the CSV writes it and a reader reads it back (12 significant digits).
func sameCell(v float64) float64 {
	x, _ := strconv.ParseFloat(table.FormatFloat(v), 64)
	return x
}

// seriesByLabel returns the series of f with the label, or fails.
func seriesByLabel(t *testing.T, f *figure.Figure, label string) figure.Series {
	t.Helper()
	for _, s := range f.Series {
		if s.Label == label {
			return s
		}
	}
	var have []string
	for _, s := range f.Series {
		have = append(have, s.Label)
	}
	t.Fatalf("no series %q among %q", label, have)
	return figure.Series{}
}

// TestERMFigureGD checks the figure of aim erm with --gd: a line per lambda with the engine's
// test errors, the Bayes-optimal error dashed in black, and the GD points (the mean and
// standard error over seeds of the error column per alpha) in the colour of their lambda's
// line; a GD CSV without the weight_decay column counts as lambda = 0.
func TestERMFigureGD(t *testing.T) {
	dir := t.TempDir()
	gdRow := func(alpha, lambda, e float64, seed uint64) GDRow {
		return GDRow{Channel: "linear", T: 1, Rho: 0.5, Beta: math.NaN(), D: 20, N: 40, R: 10, RStudent: 10, Alpha: alpha,
			Seed: seed, Restarts: 1, Steps: 10, LR: 0.01, Optimizer: "adam", WeightDecay: lambda, Error: e, ErrorSingle: e, Finished: true}
	}
	withLambda := filepath.Join(dir, "gd.csv")
	writeGDCSV(t, withLambda, []GDRow{gdRow(0.1, 0.1, 0.5, 1), gdRow(0.1, 0.1, 0.7, 2), gdRow(0.3, 0.1, 0.2, 1), gdRow(0.3, 0.1, 0.2, 2)})
	older := filepath.Join(dir, "gd-old.csv")
	writeGDCSV(t, older, []GDRow{gdRow(0.3, 0, 0.4, 1)}, "weight_decay", "penalty")
	for _, tc := range []struct {
		path   string
		lambda string
		x, y   []float64
		yerr   []float64
	}{
		{withLambda, "0.1", []float64{0.1, 0.3}, []float64{0.6, 0.2}, []float64{0.1, 0}},
		{older, "0", []float64{0.3}, []float64{0.4}, []float64{0}},
	} {
		c := NewERMConfig()
		c.Rho, c.Alpha, c.AlphaGiven, c.WeightDecay, c.GD = []string{"0.5"}, "0.1,0.3", true, "0,0.1", tc.path
		res, err := RunERM(jobtest.Validated(t, c), job.Env{})
		if err != nil || len(res.Rows) != 4 {
			t.Fatalf("%+v, %v", res, err)
		}
		tab, err := ERMSchema.Table("erm.csv", 0, res.Rows)
		if err != nil {
			t.Fatal(err)
		}
		f, err := job.DrawFigure([]*table.Table{tab, c.gdTable}, plot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(f.Title, "ρ = 0.5, Δ = 0") {
			t.Errorf("title %q does not name rho and Delta", f.Title)
		}
		for _, l := range []float64{0, 0.1} {
			line := seriesByLabel(t, f, "ERM λ = "+table.FormatFloat(l))
			for k, a := range []float64{0.1, 0.3} {
				p, err := erm.Solve(erm.Problem{Rho: 0.5, Alpha: a, Lambda: l}, se.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				if line.X[k] != a || table.FormatFloat(line.Y[k]) != table.FormatFloat(p.TestError) {
					t.Errorf("line lambda %g: (%g, %g), the engine's test error at alpha %g is %g", l, line.X[k], line.Y[k], a, p.TestError)
				}
			}
		}
		bo := seriesByLabel(t, f, "Bayes-optimal")
		if bo.Group != -1 || !bo.Dashed || len(bo.Y) != 2 || bo.Y[0] != sameCell(res.Rows[0].BOError) || bo.Y[1] != sameCell(res.Rows[1].BOError) {
			t.Errorf("Bayes-optimal line %+v", bo)
		}
		pts := seriesByLabel(t, f, "GD λ = "+tc.lambda)
		line := seriesByLabel(t, f, "ERM λ = "+tc.lambda)
		if !pts.Points || pts.Group != line.Group || !slices.Equal(pts.X, tc.x) {
			t.Fatalf("GD points %+v beside the line of group %d", pts, line.Group)
		}
		for k := range tc.y {
			if math.Abs(pts.Y[k]-tc.y[k]) > 1e-12 || math.Abs(pts.YErr[k]-tc.yerr[k]) > 1e-12 {
				t.Errorf("GD point %d: %g +- %g, want %g +- %g", k, pts.Y[k], pts.YErr[k], tc.y[k], tc.yerr[k])
			}
		}
	}
}

// TestERMEigenvalues checks --eigenvalues: the rows kept (the weight decays, the alpha of
// --spectrum and the rhos of the command), the share below the cut, and the histogram's area,
// which is the share above it, as the predicted density's is 1 - atom.
func TestERMEigenvalues(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "eig.csv")
	text := "rho,alpha,seed,weight_decay,index,eigenvalue\n" +
		"0.5,0.3,1,0.1,0,1e-9\n0.5,0.3,1,0.1,1,0.5\n0.5,0.3,1,0.1,2,1\n0.5,0.3,1,0.1,3,2\n" +
		"0.5,0.2,1,0.1,0,7\n" + // another alpha
		"0.5,0.3,1,1,0,7\n" + // a weight decay not asked for
		"1,0.3,1,0.1,0,7\n" // another rho
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewERMConfig()
	c.Alpha, c.AlphaGiven, c.WeightDecay, c.Spectrum, c.SpectrumGiven, c.Eigenvalues = "0.3", true, "0,0.1", 0.3, true, path
	jobtest.Validated(t, c)
	if len(c.eigen) != 4 {
		t.Fatalf("kept %d eigenvalues, want 4: %+v", len(c.eigen), c.eigen)
	}
	hs := c.histograms()
	if len(hs) != 1 || hs[0].Lambda != 0.1 || hs[0].N != 4 || hs[0].Below != 0.25 || hs[0].Cut != EigenvalueCut {
		t.Fatalf("histograms %+v", hs)
	}
	h := hs[0]
	area := 0.0
	for k, d := range h.Density {
		area += d * (h.Edges[k+1] - h.Edges[k])
	}
	if math.Abs(area-0.75) > 1e-12 || h.Edges[0] != 0.5 || h.Edges[len(h.Edges)-1] != 2 {
		t.Errorf("histogram area %g over [%g, %g], want 0.75 over [0.5, 2]", area, h.Edges[0], h.Edges[len(h.Edges)-1])
	}
	f := plot.ERMSpectrumFigure(&table.Table{}, hs, plot.Options{})
	if f == nil {
		t.Fatal("no figure")
	}
}

// TestSpectrumGrid checks the grid of --spectrum: the number of points, every edge among them,
// increasing, and a narrow bulk resolved.
func TestSpectrumGrid(t *testing.T) {
	for _, edges := range [][]float64{{0, 1}, {0, 0.01, 1, 3}, {0.2, 0.5, 0.7, 0.8, 1, 4}} {
		xs := SpectrumGrid(edges, 400)
		if len(xs) != 400 || !slices.IsSorted(xs) {
			t.Errorf("edges %v: %d points, sorted %v", edges, len(xs), slices.IsSorted(xs))
		}
		for b := 0; b < len(edges); b += 2 {
			in := 0
			for _, x := range xs {
				if x >= edges[b] && x <= edges[b+1] {
					in++
				}
			}
			if !slices.Contains(xs, edges[b]) || !slices.Contains(xs, edges[b+1]) || in < 400/len(edges) {
				t.Errorf("edges %v: bulk [%g, %g] has %d points, its edges among them: %v, %v", edges, edges[b], edges[b+1],
					in, slices.Contains(xs, edges[b]), slices.Contains(xs, edges[b+1]))
			}
		}
	}
	if SpectrumGrid(nil, 400) != nil {
		t.Error("a grid without a bulk")
	}
}

// TestExecuteERMInterrupted interrupts `aim erm --spectrum` after its first (rho, alpha) of
// three: the CSV holds that point's row of each lambda as an uninterrupted run writes them,
// the manifest lists the two other points, the spectrum (solved after the grid) has no rows
// and an incomplete manifest, and no temporary remains.
func TestExecuteERMInterrupted(t *testing.T) {
	config := func(dir string) *ERMConfig {
		c := NewERMConfig()
		c.Alpha, c.AlphaGiven, c.WeightDecay, c.Workers = "0.1,0.2,0.3", true, "0,0.1", 1
		c.Spectrum, c.SpectrumGiven = 0.2, true
		c.Out, c.Plot = filepath.Join(dir, "erm.csv"), filepath.Join(dir, "erm.png")
		return jobtest.Validated(t, c)
	}
	fullDir, dir := t.TempDir(), t.TempDir()
	if _, err := ExecuteERM(config(fullDir), job.Env{}); err != nil {
		t.Fatal(err)
	}
	full := jobtest.ReadCSVLines(t, filepath.Join(fullDir, "erm.csv"))
	if len(full) != 7 {
		t.Fatalf("full run: %d lines, want a header and 6 rows", len(full))
	}
	_, err := ExecuteERM(config(dir), jobtest.InterruptAfter(1))
	if !errors.Is(err, job.ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	got := jobtest.ReadCSVLines(t, filepath.Join(dir, "erm.csv"))
	if want := []string{full[0], full[1], full[4]}; !slices.Equal(got, want) { // alpha 0.1 at lambda 0 and 0.1
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	man := jobtest.ReadManifest(t, filepath.Join(dir, "erm.json"))
	if m := jobtest.MissingPoints(t, man); !slices.Equal(m, []string{"0.5/0.2", "0.5/0.3"}) || man["complete"] != false {
		t.Errorf("missing %v, complete %v", m, man["complete"])
	}
	if spec := jobtest.ReadCSVLines(t, filepath.Join(dir, "erm_spectrum.csv")); len(spec) != 1 {
		t.Errorf("spectrum of an interrupted run: %d lines, want the header only", len(spec))
	}
	if m := jobtest.ReadManifest(t, filepath.Join(dir, "erm_spectrum.json")); m["complete"] != false {
		t.Errorf("spectrum manifest complete = %v", m["complete"])
	}
	jobtest.NoTemporaries(t, dir)
}

// TestERMPenaltyMatchesGD checks that --gd and --eigenvalues keep the students of the estimator
// of --penalty: direct ones (the direct column true) for ridge, those that train W (false, or no
// column) for nuclear. The figure draws only those points, and a file with none of them is bad
// input; the ridge histograms keep every eigenvalue, negative ones included (no cut).
func TestERMPenaltyMatchesGD(t *testing.T) {
	dir := t.TempDir()
	gdRow := func(direct bool, e float64) GDRow {
		return GDRow{Channel: "linear", T: 1, Rho: 0.5, Beta: math.NaN(), D: 20, N: 120, R: 10, RStudent: 10, Alpha: 0.3,
			Seed: 1, Restarts: 1, Steps: 10, LR: 0.01, Optimizer: "gd", Direct: direct, WeightDecay: 0.1, Error: e, ErrorSingle: e, Finished: true}
	}
	mixed, directOnly := filepath.Join(dir, "gd.csv"), filepath.Join(dir, "gd-direct.csv")
	writeGDCSV(t, mixed, []GDRow{gdRow(true, 0.9), gdRow(false, 0.2)})
	writeGDCSV(t, directOnly, []GDRow{gdRow(true, 0.9)})
	for _, tc := range []struct {
		penalty string
		want    float64 // the error of the GD point drawn
		title   string
	}{
		{"ridge", 0.9, "ERM with ridge weight decay (lines), GD at D = 20 (points)"},
		{"nuclear", 0.2, "ERM with nuclear-norm weight decay (lines), GD at D = 20 (points)"},
	} {
		c := NewERMConfig()
		c.Alpha, c.AlphaGiven, c.WeightDecay, c.Penalty, c.GD = "0.3", true, "0.1", tc.penalty, mixed
		res, err := RunERM(jobtest.Validated(t, c), job.Env{})
		if err != nil || len(res.Rows) != 1 || res.Rows[0].Penalty != tc.penalty {
			t.Fatalf("%s: %+v, %v", tc.penalty, res, err)
		}
		tab, err := ERMSchema.Table("erm.csv", 0, res.Rows)
		if err != nil {
			t.Fatal(err)
		}
		f, err := job.DrawFigure([]*table.Table{tab, c.gdTable}, plot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pts := seriesByLabel(t, f, "GD λ = 0.1")
		if len(pts.Y) != 1 || pts.Y[0] != tc.want || !strings.HasPrefix(f.Title, tc.title) {
			t.Errorf("%s: GD points %+v, title %q; want the one point %g, title %q", tc.penalty, pts, f.Title, tc.want, tc.title)
		}
	}
	c := NewERMConfig()
	c.Alpha, c.AlphaGiven, c.WeightDecay, c.GD = "0.3", true, "0.1", directOnly
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "direct = false (the nuclear penalty's students)") {
		t.Errorf("nuclear with only direct students: %v", err)
	}

	path := filepath.Join(dir, "eig.csv")
	text := "rho,alpha,seed,weight_decay,direct,index,eigenvalue\n" +
		"0.5,0.3,1,0.1,true,0,-0.5\n0.5,0.3,1,0.1,true,1,1e-9\n0.5,0.3,1,0.1,true,2,1\n0.5,0.3,1,0.1,true,3,2\n" +
		"0.5,0.3,1,0.1,false,0,7\n" // a student of W
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c = NewERMConfig()
	c.Alpha, c.AlphaGiven, c.WeightDecay, c.Penalty, c.Spectrum, c.SpectrumGiven, c.Eigenvalues = "0.3", true, "0.1", "ridge", 0.3, true, path
	jobtest.Validated(t, c)
	hs := c.histograms()
	if len(c.eigen) != 4 || len(hs) != 1 || hs[0].N != 4 || hs[0].Below != 0 || hs[0].Cut != 0 || hs[0].Edges[0] != -0.5 {
		t.Fatalf("ridge: kept %d eigenvalues, histograms %+v; want 4, all binned from -0.5", len(c.eigen), hs)
	}
	c.Penalty = "nuclear"
	jobtest.Validated(t, c)
	if len(c.eigen) != 1 || c.eigen[0].value != 7 {
		t.Errorf("nuclear: kept %+v, want the student of W's eigenvalue 7", c.eigen)
	}
}

// TestAMPERMFigure checks the figure of aim amp --weight-decay: the line beside the GAMP-ERM
// points is the ERM state evolution's test error (erm.Solve, nuclear, lambda = the weight decay)
// on a dense grid, labelled "ERM SE λ = ...", and no Bayes-optimal SE line is drawn.
func TestAMPERMFigure(t *testing.T) {
	c := NewAMPConfig()
	c.Channel, c.Alpha, c.AlphaGiven, c.D, c.ERM, c.WeightDecay = "linear", "0.2,0.4", true, 20, true, 0.1
	c.Out = filepath.Join(t.TempDir(), "amp.csv")
	jobtest.Validated(t, c)
	rows := []AMPRow{
		{Channel: "linear", T: 1, Rho: 0.5, Beta: math.NaN(), WeightDecay: 0.1, D: 20, Alpha: 0.2, AlphaBar: 0.4, Seed: 1, Error: 0.6, SEMMSE: 0.55, Converged: true},
		{Channel: "linear", T: 1, Rho: 0.5, Beta: math.NaN(), WeightDecay: 0.1, D: 20, Alpha: 0.4, AlphaBar: 0.8, Seed: 1, Error: 0.08, SEMMSE: 0.07, Converged: true},
	}
	f, err := c.figure(rows)
	if err != nil {
		t.Fatal(err)
	}
	line := seriesByLabel(t, f, "ERM SE λ = 0.1, ρ = 0.5")
	if len(line.X) < 50 || line.Points {
		t.Fatalf("ERM SE line of %d points", len(line.X))
	}
	for _, k := range []int{0, len(line.X) / 2, len(line.X) - 1} {
		p, err := erm.Solve(erm.Problem{Rho: 0.5, Alpha: line.X[k], Lambda: 0.1}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(line.Y[k]-p.TestError) > 1e-9*p.TestError { // alpha read back to 12 digits
			t.Errorf("line at alpha %g: %g, the ERM state evolution %g", line.X[k], line.Y[k], p.TestError)
		}
	}
	pts := seriesByLabel(t, f, "GAMP-ERM λ = 0.1, ρ = 0.5")
	if !pts.Points || pts.Group != line.Group || len(f.Series) != 2 {
		t.Errorf("points %+v beside the line of group %d; %d series, want 2", pts, line.Group, len(f.Series))
	}
}
