package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/erm"
	"github.com/aimtheory/aim/engine/aim/se"
)

// ermCSV returns the rows of a CSV (without its header) and the index of each column.
func ermCSV(t *testing.T, path string, header []string) ([][]string, map[string]int) {
	t.Helper()
	rows := readCSV(t, path)
	if !slices.Equal(rows[0], header) {
		t.Fatalf("%s: header %v, want %v", path, rows[0], header)
	}
	col := map[string]int{}
	for j, h := range rows[0] {
		col[h] = j
	}
	return rows[1:], col
}

// ermNum parses a cell.
func ermNum(t *testing.T, cell string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(cell, 64)
	if err != nil {
		t.Fatalf("cell %q: %v", cell, err)
	}
	return v
}

// TestERMWritesResults runs aim erm on 3 alphas and 2 weight decays with --spectrum and checks
// every test, train and Bayes-optimal error against the engine (the cell is the engine's value
// as the CSV writes numbers, 12 significant digits), that ERM is never below the Bayes-optimal
// error, the manifest and the figures, and the spectrum: 400 points per lambda whose
// trapezoid integral is 1 - atom within 1e-3, the atom being 1 - the engine's rank.
func TestERMWritesResults(t *testing.T) {
	dir := t.TempDir()
	out, plot := filepath.Join(dir, "erm.csv"), filepath.Join(dir, "erm.png")
	const rho, noise, alphaS = 0.5, 0.25, 0.3
	code, stdout, stderr := runArgs(t, "erm", "--quiet", "--rho", "0.5", "--noise", "0.25", "--alpha", "0.1,0.3,0.6",
		"--weight-decay", "0,0.1", "--spectrum", "0.3", "--out", out, "--plot", plot)
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	rows, col := ermCSV(t, out, aimjob.ERMSchema.Header(0))
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6 (2 lambdas x 3 alphas)", len(rows))
	}
	ch, err := aim.NewLinear(noise)
	if err != nil {
		t.Fatal(err)
	}
	var order [][2]float64
	for _, r := range rows {
		alpha, lambda := ermNum(t, r[col["alpha"]]), ermNum(t, r[col["weight_decay"]])
		order = append(order, [2]float64{lambda, alpha})
		if ermNum(t, r[col["rho"]]) != rho || ermNum(t, r[col["noise"]]) != noise {
			t.Errorf("row %v: rho %s, noise %s", r, r[col["rho"]], r[col["noise"]])
		}
		p, err := erm.Solve(erm.Problem{Rho: rho, Alpha: alpha, Noise: noise, Lambda: lambda}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		bo, err := se.Solve(ch, rho, alpha, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]float64{"test_error": p.TestError, "train_error": p.TrainError, "bo_error": bo.MMSE,
			"gen_error": p.GenError, "rank": p.Rank, "tau": p.Tau} {
			if got := r[col[name]]; got != table.FormatFloat(want) || math.Abs(ermNum(t, got)-want) > 1e-11*math.Max(1, math.Abs(want)) {
				t.Errorf("lambda %g, alpha %g: %s = %s, the engine gives %.15g", lambda, alpha, name, got, want)
			}
		}
		if r[col["interpolating"]] != strconv.FormatBool(p.Interpolating) || r[col["iterations"]] != strconv.Itoa(p.Iterations) {
			t.Errorf("lambda %g, alpha %g: interpolating %s, iterations %s; the engine: %v, %d", lambda, alpha,
				r[col["interpolating"]], r[col["iterations"]], p.Interpolating, p.Iterations)
		}
		if e, b := ermNum(t, r[col["test_error"]]), ermNum(t, r[col["bo_error"]]); !(e >= b) {
			t.Errorf("lambda %g, alpha %g: ERM test error %g below the Bayes-optimal %g", lambda, alpha, e, b)
		}
	}
	if want := [][2]float64{{0, 0.1}, {0, 0.3}, {0, 0.6}, {0.1, 0.1}, {0.1, 0.3}, {0.1, 0.6}}; !slices.Equal(order, want) {
		t.Errorf("rows in the order (lambda, alpha) %v, want %v", order, want)
	}
	// The manifests and the figures.
	var man map[string]any
	data, err := os.ReadFile(filepath.Join(dir, "erm.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	if man["command"] != "erm" || man["complete"] != true || man["points"] != 6.0 || man["unconverged"] != 0.0 {
		t.Errorf("manifest %v", man)
	}
	for _, f := range []string{"erm.png", "erm_spectrum.csv", "erm_spectrum.json", "erm_spectrum.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %d bytes, %v", f, len(b), err)
		}
		if strings.HasSuffix(f, ".png") && !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s is not a PNG", f)
		}
	}
	// The spectrum: per lambda, the density on 400 points and the atom on every row.
	srows, scol := ermCSV(t, filepath.Join(dir, "erm_spectrum.csv"), aimjob.ERMSpectrumSchema.Header(0))
	by := map[float64][][3]float64{} // lambda -> (x, density, atom)
	for _, r := range srows {
		if ermNum(t, r[scol["rho"]]) != rho || ermNum(t, r[scol["alpha"]]) != alphaS || ermNum(t, r[scol["noise"]]) != noise {
			t.Fatalf("spectrum row %v", r)
		}
		l := ermNum(t, r[scol["weight_decay"]])
		by[l] = append(by[l], [3]float64{ermNum(t, r[scol["x"]]), ermNum(t, r[scol["density"]]), ermNum(t, r[scol["atom"]])})
	}
	for _, l := range []float64{0, 0.1} {
		pts := by[l]
		if len(pts) != aimjob.SpectrumPoints {
			t.Fatalf("lambda %g: %d spectrum rows, want %d", l, len(pts), aimjob.SpectrumPoints)
		}
		p, err := erm.Solve(erm.Problem{Rho: rho, Alpha: alphaS, Noise: noise, Lambda: l}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		area := 0.0
		for k, q := range pts {
			if q[2] != pts[0][2] || q[1] < 0 || k > 0 && !(q[0] >= pts[k-1][0]) {
				t.Fatalf("lambda %g row %d: x %g, density %g, atom %g", l, k, q[0], q[1], q[2])
			}
			if k > 0 {
				area += (q[0] - pts[k-1][0]) * (q[1] + pts[k-1][1]) / 2
			}
		}
		atom := pts[0][2]
		if table.FormatFloat(atom) != table.FormatFloat(1-p.Rank) {
			t.Errorf("lambda %g: atom %.15g, 1 - rank = %.15g", l, atom, 1-p.Rank)
		}
		if math.Abs(area-(1-atom)) > 1e-3 {
			t.Errorf("lambda %g: the density integrates to %.6g, 1 - atom = %.6g", l, area, 1-atom)
		}
	}
}

// TestERMBadInput checks that bad input exits with status 2, says what is wrong, and writes
// nothing.
func TestERMBadInput(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "res")
	eig := filepath.Join(dir, "eig.csv")
	os.WriteFile(eig, []byte("rho,alpha,seed,weight_decay,index,eigenvalue\n0.5,0.3,1,0.1,0,0.5\n"), 0o644)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--weight-decay", "-1"}, "every lambda must be >= 0"},
		{[]string{"--weight-decay", "0.1,0.1"}, "given twice"},
		{[]string{"--weight-decay", ""}, "empty grid"},
		{[]string{"--channel", "hardmax"}, "no useful loss"},
		{[]string{"--channel", "softmax", "--T", "1"}, "need T >= 2"},
		{[]string{"--channel", "softmax", "--noise", "0.1", "--weight-decay", "0,0.1"}, "noiseless labels only"},
		{[]string{"--channel", "softmax", "--samples", "100"}, "--samples 100"},
		{[]string{"--channel", "linear", "--T", "2"}, "need --T 1"},
		{[]string{"--alpha", "0"}, "every alpha must be > 0"},
		{[]string{"--alpha", "0.1,-0.2"}, "every alpha must be > 0"},
		{[]string{"--noise", "-1"}, "--noise -1"},
		{[]string{"--rho", "0"}, "rho > 0"},
		{[]string{"--spectrum", "0"}, "--spectrum 0"},
		{[]string{"--eigenvalues", eig}, "--eigenvalues needs --spectrum"},
		{[]string{"--spectrum", "0.2", "--eigenvalues", eig}, "no eigenvalue at alpha = 0.2"},
		{[]string{"--gd", filepath.Join(dir, "none.csv")}, "--gd"},
		{[]string{"--gd", eig}, "--gd"},
		{[]string{"--damping", "1"}, "damping"},
	} {
		args := withFlags([]string{"erm", "--quiet", "--alpha", "0.1", "--out", filepath.Join(res, "erm.csv"), "--plot", filepath.Join(res, "erm.png")}, tc.args...)
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("aim erm %v: status %d, stderr %q; want status 2 mentioning %q", tc.args, code, stderr, tc.msg)
		}
	}
	if entries, _ := os.ReadDir(res); len(entries) != 0 {
		t.Errorf("bad input left files: %v", entries)
	}
}

// TestERMSoftmax runs aim erm --channel softmax (T = 2) at one alpha with lambda = 0 and 0.1:
// the lambda = 0 row is the linear channel's at alpha (T^2 + T - 2)/2 (aim erm --channel
// linear, another command's number), the lambda = 0.1 row is the engine's Monte Carlo point
// with its stated errors, the Bayes-optimal column is the softmax's, and the manifest's
// alpha_c is 2/K times the linear channel's.
func TestERMSoftmax(t *testing.T) {
	dir := t.TempDir()
	out, lin := filepath.Join(dir, "erm.csv"), filepath.Join(dir, "lin.csv")
	code, stdout, stderr := runArgs(t, "erm", "--quiet", "--channel", "softmax", "--T", "2", "--alpha", "0.1", "--weight-decay", "0,0.1",
		"--samples", "1024", "--out", out, "--plot", "")
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	if code, stdout, stderr = runArgs(t, "erm", "--quiet", "--alpha", "0.2", "--weight-decay", "0", "--out", lin, "--plot", ""); code != 0 {
		t.Fatalf("linear: status %d: %s %s", code, stdout, stderr)
	}
	rows, col := ermCSV(t, out, aimjob.ERMSchema.Header(0))
	lrows, _ := ermCSV(t, lin, aimjob.ERMSchema.Header(0))
	if len(rows) != 2 || len(lrows) != 1 {
		t.Fatalf("%d and %d rows", len(rows), len(lrows))
	}
	for _, r := range rows {
		if r[col["channel"]] != "softmax" || r[col["T"]] != "2" || r[col["beta"]] != "1" {
			t.Errorf("row %v: channel %s, T %s, beta %s", r, r[col["channel"]], r[col["T"]], r[col["beta"]])
		}
	}
	if got, want := rows[0][col["test_error"]], lrows[0][col["test_error"]]; got != want || rows[0][col["test_error_err"]] != "0" {
		t.Errorf("lambda 0: test_error %s (test_error_err %s), the linear channel's at alpha 0.2: %s", got, rows[0][col["test_error_err"]], want)
	}
	p, err := erm.Solve(erm.Problem{Rho: 0.5, Alpha: 0.1, Lambda: 0.1, T: 2, Beta: 1, Samples: 1024, Workers: 1}, se.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := aim.NewSoftmax(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	bo, err := se.Solve(ch, 0.5, 0.1, se.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"test_error": p.TestError, "test_error_err": p.TestErr, "train_error": p.TrainError, "train_error_err": p.TrainErr, "bo_error": bo.MMSE} {
		if got := rows[1][col[name]]; got != table.FormatFloat(want) {
			t.Errorf("lambda 0.1: %s = %s, the engine gives %.15g", name, got, want)
		}
	}
	if !(p.TestErr > 0 && p.TrainErr > 0) {
		t.Errorf("lambda 0.1: no stated Monte Carlo error")
	}
	man := readManifest(t, filepath.Join(dir, "erm.json"))
	ths, _ := man["thresholds"].(map[string]any)
	pr, _ := ths["perfect_recovery"].(map[string]any)
	if a, _ := pr["0.5"].(float64); math.Abs(a-0.21111) > 1e-4 {
		t.Errorf("manifest perfect_recovery %v, want alpha_c = 0.2111", ths)
	}
}
