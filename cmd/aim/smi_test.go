package main

import (
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"

	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/smi"
	smiamp "github.com/aimtheory/aim/engine/smi/amp"
	smise "github.com/aimtheory/aim/engine/smi/se"
	"github.com/aimtheory/aim/engine/smi/sgd"
)

// csvColumns maps the header of a CSV to column indices.
func csvColumns(header []string) map[string]int {
	col := map[string]int{}
	for i, c := range header {
		col[c] = i
	}
	return col
}

func parseCell(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("cell %q: %v", s, err)
	}
	return v
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("%s is not a PNG: %v", path, err)
	}
}

func readManifest(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSMIBadInput checks that every kind of bad input to every `aim smi` subcommand exits
// with status 2, says what is wrong, and leaves nothing in the output folder.
func TestSMIBadInput(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "res")
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	wrongSE := filepath.Join(dir, "se-L3.csv")
	// An `aim smi se` CSV of L = 3 layers, for the L = 2 default of smi amp.
	head := smijob.SMISESchema.Header(3)
	row := make([]string, len(head))
	copy(row, []string{"3", "2", "1", "1", "0.5", "0", "0.1", "0.2"})
	os.WriteFile(wrongSE, []byte(strings.Join(head, ",")+"\n"+strings.Join(row, ",")+"\n"), 0o644)
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{}, "missing subcommand"},
		{[]string{"bogus"}, "unknown subcommand"},
		// se
		{[]string{"se", "--c", "-1"}, "skip c"},
		{[]string{"se", "--L", "0"}, "L >= 1"},
		{[]string{"se", "--quad-max-eval", "-1"}, "quad-max-eval"},
		{[]string{"se", "--L", "3", "--draws", "-1"}, "--draws -1"},
		{[]string{"se", "--L", "3", "--draws", "3"}, "4 <= draws"},
		{[]string{"se", "--L", "3", "--draws", "100", "--cubature"}, "choose one"},
		{[]string{"se", "--L", "2", "--draws", "100"}, "L = 2 always uses the cubature"},
		{[]string{"se", "--L", "2", "--device", "cuda"}, "with L = 2 there are none"},
		{[]string{"se", "--L", "3", "--cubature", "--device", "cuda"}, "and --cubature there are none"},
		{[]string{"se", "--L", "3", "--device", ""}, "--device is empty"},
		{[]string{"se", "--L", "3", "--alpha", "1", "--device", "nosuch"}, "nosuch"},
		{[]string{"se", "--L", "3", "--alpha", "1", "--device", "cpu:2"}, "not a group of 2"},
		{[]string{"se", "--L", "5"}, "L = 5 layers"},
		{[]string{"se", "--L", "4", "--cubature"}, "L = 4 has no cubature"},
		{[]string{"se", "--M", "3"}, "M = 2 only"},
		{[]string{"se", "--M", "1"}, "M >= 2"},
		{[]string{"se", "--beta", "0"}, "beta"},
		{[]string{"se", "--alpha", "0"}, "alpha"},
		{[]string{"se", "--alpha", "-0.5,1"}, "alpha"},
		{[]string{"se", "--alpha", ""}, "empty"},
		{[]string{"se", "--alpha", "1:0.5:3"}, "above"},
		{[]string{"se", "--samples", "0"}, "samples"},
		{[]string{"se", "--damping", "1.5"}, "damping"},
		{[]string{"se", "--epsilon", "1"}, "epsilon"},
		{[]string{"se", "--max-iter", "0"}, "max-iter"},
		{[]string{"se", "--tol", "0"}, "tol"},
		{[]string{"se", "--gen-samples", "1"}, "gen-samples"},
		{[]string{"se", "--gen-inner", "1"}, "gen-inner"},
		{[]string{"se", "--replicates", "0"}, "replicates"},
		{[]string{"se", "--mc-error", "-0.1"}, "mc-error"},
		{[]string{"se", "--newton"}, "--newton refines the solves at more draws of --mc-error"},
		{[]string{"se", "--mc-error", "1e-3", "--replicates", "1"}, "needs --replicates >= 2"},
		{[]string{"se", "--mc-error", "1e-3", "--samples", "8000", "--max-samples", "4000"}, "max-samples 4000 is below --samples 8000"},
		{[]string{"se", "--workers", "-1"}, "workers"},
		{[]string{"se", "--start", "foo"}, `start "foo": want uninformed, informed or both`},
		{[]string{"se", "--out", filepath.Join(res, "se.txt")}, ".csv"},
		{[]string{"se", "--plot", filepath.Join(res, "se.gif")}, "format"},
		{[]string{"se", "--alpha", "0.1", "--out", filepath.Join(blocker, "se.csv")}, "cannot"},
		{[]string{"se", "--bogus"}, "bogus"},
		{[]string{"se", "stray"}, "unexpected argument"},
		// thresholds
		{[]string{"thresholds", "--c", "-1"}, "skip c"},
		{[]string{"thresholds", "--c", "0.5,x"}, "not a number"},
		{[]string{"thresholds", "--c", ""}, "empty"},
		{[]string{"thresholds", "--hi", "0"}, "hi"},
		{[]string{"thresholds", "--L", "5"}, "L = 5 layers"},
		{[]string{"thresholds", "--M", "3"}, "M = 2 only"},
		{[]string{"thresholds", "--samples", "0"}, "samples"},
		{[]string{"thresholds", "--quad-max-eval", "-5"}, "quad-max-eval"},
		{[]string{"thresholds", "--L", "2", "--cubature"}, "L = 2 always uses the cubature"},
		// amp
		{[]string{"amp", "--D", "1"}, "D >= 2"},
		{[]string{"amp", "--seeds", "0"}, "seeds"},
		{[]string{"amp", "--max-iter", "0"}, "max-iter"},
		{[]string{"amp", "--damping", "1"}, "damping"},
		{[]string{"amp", "--epsilon", "-1"}, "epsilon"},
		{[]string{"amp", "--noise", "-1"}, "noise"},
		{[]string{"amp", "--gen-samples", "-1"}, "gen-samples"},
		{[]string{"amp", "--init", "ones"}, "--init \"ones\""},
		{[]string{"amp", "--init-scale", "0"}, "--init-scale 0"},
		{[]string{"amp", "--init", "consistent"}, "needs scale < 1"},
		{[]string{"amp", "--init", "informed"}, "needs an overlap 0 < q < 1"},
		{[]string{"amp", "--quad-max-eval", "-1"}, "quad-max-eval"},
		{[]string{"amp", "--L", "3", "--draws", "2"}, "4 <= draws"},
		{[]string{"amp", "--L", "2", "--draws", "100"}, "L = 2 always uses the cubature"},
		{[]string{"amp", "--L", "3", "--alpha", "1", "--D", "20", "--seeds", "1", "--device", "cuda:99"}, "cuda:99"},
		{[]string{"thresholds", "--L", "2", "--device", "cuda"}, "with L = 2 there are none"},
		{[]string{"amp", "--alpha", "0"}, "alpha"},
		{[]string{"amp", "--D", "10", "--alpha", "0.05"}, "N = floor(alpha D) = 0"},
		{[]string{"amp", "--L", "5"}, "L = 5 layers"},
		{[]string{"amp", "--L", "4", "--cubature"}, "L = 4 has no cubature"},
		{[]string{"amp", "--M", "3"}, "M = 2 only"},
		{[]string{"amp", "--c", "-0.5"}, "skip c"},
		{[]string{"amp", "--trace", filepath.Join(res, "t.txt")}, "trace"},
		{[]string{"amp", "--se", filepath.Join(dir, "missing.csv")}, "--se"},
		{[]string{"amp", "--se", wrongSE}, "L = 3"},
		{[]string{"amp", "--D", "10000000", "--alpha", "1.5"}, "available"},
		// sgd
		{[]string{"sgd", "--L", "0"}, "L >= 1"},
		{[]string{"sgd", "--M", "1"}, "M >= 2"},
		{[]string{"sgd", "--c", "-1"}, "skip c"},
		{[]string{"sgd", "--alpha", "0"}, "alpha"},
		{[]string{"sgd", "--D", "10", "--alpha", "0.05"}, "N = floor(alpha D) = 0"},
		{[]string{"sgd", "--seeds", "0"}, "seeds"},
		{[]string{"sgd", "--lr", "0"}, "lr"},
		{[]string{"sgd", "--wd", "-1"}, "wd"},
		{[]string{"sgd", "--batch", "0"}, "batch"},
		{[]string{"sgd", "--steps-per-batch", "0"}, "steps-per-batch"},
		{[]string{"sgd", "--epochs", "0"}, "epochs"},
		{[]string{"sgd", "--every", "-1"}, "every"},
		{[]string{"sgd", "--init-scale", "0"}, "init-scale"},
		{[]string{"sgd", "--student-seed", "-2"}, "student-seed"},
		{[]string{"sgd", "--gen-samples", "-1"}, "gen-samples"},
	}
	for _, tc := range tests {
		args := []string{"smi"}
		if len(tc.args) > 0 {
			sub := tc.args[0]
			args = append(args, sub, "--quiet", "--out", filepath.Join(res, sub+".csv"), "--plot", filepath.Join(res, sub+".png"))
			if sub == "amp" {
				args = append(args, "--trace", filepath.Join(res, "trace.csv"))
			}
			args = withFlags(args, tc.args[1:]...)
		}
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("aim %v: status %d, stderr %q; want status 2 mentioning %q", args, code, stderr, tc.msg)
		}
	}
	if entries, _ := os.ReadDir(res); len(entries) != 0 {
		t.Errorf("bad input left files: %v", entries)
	}
	for _, sub := range []string{"se", "thresholds", "amp", "sgd"} {
		if code, _, stderr := runArgs(t, "smi", sub, "-h"); code != 0 || !strings.Contains(stderr, "Usage: aim smi "+sub) {
			t.Errorf("aim smi %s -h: status %d, stderr %q", sub, code, stderr)
		}
	}
}

// TestSMISE runs a tiny state evolution and checks the CSV against the engine called with the
// same options, the manifest's thresholds against SMIStability, and the plot.
func TestSMISE(t *testing.T) {
	dir := t.TempDir()
	out, plot := filepath.Join(dir, "se.csv"), filepath.Join(dir, "se.png")
	// --workers 1: smise.Stability shares one covariance buffer between its goroutines (an
	// engine data race), so its F is reproducible only on one goroutine.
	code, stdout, stderr := runArgs(t, "smi", "se", "--quiet", "--alpha", "0.3,0.1", "--samples", "64", "--max-iter", "40",
		"--tol", "1e-3", "--gen-samples", "2000", "--seed", "3", "--workers", "1", "--out", out, "--plot", plot)
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	rows := readCSV(t, out)
	if strings.Join(rows[0], ",") != strings.Join(smijob.SMISESchema.Header(2), ",") || len(rows) != 3 {
		t.Fatalf("CSV header %v with %d rows", rows[0], len(rows))
	}
	want := "L,M,c,beta,alpha,Q11,Q22,Qerr11,Qerr22,qhat11,qhat22,gen_error,gen_error_stderr,gen_error_bo,gen_error_bo_stderr," +
		"gen_error_last_layer,gen_error_last_layer_stderr,samples,iterations,converged,inexact,start,coexist,free_entropy,free_entropy_stderr"
	if strings.Join(rows[0], ",") != want {
		t.Errorf("columns %v, want %s", rows[0], want)
	}
	col := csvColumns(rows[0])
	ch, _ := smi.NewDeep(2, 2, 1, 1)
	o := smise.DefaultOptions(2)
	o.Samples, o.MaxIter, o.Tol, o.Seed = 64, 40, 1e-3, 3
	alphas := []float64{0.3, 0.1}
	// The curve on all cores: the SE's averages do not depend on the number of goroutines.
	pts, err := smise.SolveCurve(ch, alphas, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows[1:] {
		p := pts[i]
		if a := parseCell(t, r[col["alpha"]]); a != alphas[i] {
			t.Fatalf("row %d: alpha %g, want %g (the order of --alpha)", i, a, alphas[i])
		}
		if r[col["converged"]] != strconv.FormatBool(p.Converged) || r[col["iterations"]] != strconv.Itoa(p.Iterations) {
			t.Errorf("row %d: converged %s after %s iterations, engine %v after %d", i, r[col["converged"]], r[col["iterations"]], p.Converged, p.Iterations)
		}
		if !p.Converged {
			t.Fatalf("alpha %g did not converge in the engine either; pick another test point", p.Alpha)
		}
		for l, name := range []string{"Q11", "Q22"} {
			if q := parseCell(t, r[col[name]]); math.Abs(q-p.Q[l]) > 1e-12 {
				t.Errorf("row %d: %s = %.15g, engine %.15g", i, name, q, p.Q[l])
			}
			if qh := parseCell(t, r[col["qhat"+name[1:]]]); math.Abs(qh-p.QHat[l]) > 1e-12*math.Max(1, p.QHat[l]) {
				t.Errorf("row %d: qhat%s = %.15g, engine %.15g", i, name[1:], qh, p.QHat[l])
			}
		}
		for l, name := range []string{"Qerr11", "Qerr22"} {
			if e := parseCell(t, r[col[name]]); math.Abs(e-p.QErr[l]) > 1e-12*math.Max(1, p.QErr[l]) {
				t.Errorf("row %d: %s = %.15g, engine %.15g", i, name, e, p.QErr[l])
			}
		}
		if r[col["start"]] != "uninformed" || r[col["coexist"]] != "false" || r[col["free_entropy"]] != table.FormatFloat(p.FreeEntropy) ||
			r[col["free_entropy_stderr"]] != table.FormatFloat(p.FreeEntropyErr) || math.IsNaN(p.FreeEntropy) {
			t.Errorf("row %d: start %s, coexist %s, free entropy %s ± %s; engine uninformed, false, %s ± %s", i, r[col["start"]], r[col["coexist"]],
				r[col["free_entropy"]], r[col["free_entropy_stderr"]], table.FormatFloat(p.FreeEntropy), table.FormatFloat(p.FreeEntropyErr))
		}
		if r[col["samples"]] != strconv.Itoa(p.Samples) || p.Samples != 64 {
			t.Errorf("row %d: samples %s, engine %d (want --samples 64)", i, r[col["samples"]], p.Samples)
		}
		go3 := smise.GenErrorOptions{Samples: 2000, Inner: 8, Seed: 3}
		g, gs, err := smise.GenError(ch, p.Q, go3)
		if err != nil {
			t.Fatal(err)
		}
		bo, bos, err := smise.GenErrorBO(ch, p.Q, go3)
		if err != nil {
			t.Fatal(err)
		}
		gl, _, err := smise.GenError(ch, []float64{0, p.Q[1]}, go3)
		if err != nil {
			t.Fatal(err)
		}
		if r[col["gen_error"]] != table.FormatFloat(g) || r[col["gen_error_stderr"]] != table.FormatFloat(gs) || r[col["gen_error_last_layer"]] != table.FormatFloat(gl) {
			t.Errorf("row %d: e_gen %s ± %s, last layer %s; engine %s ± %s, %s", i, r[col["gen_error"]], r[col["gen_error_stderr"]],
				r[col["gen_error_last_layer"]], table.FormatFloat(g), table.FormatFloat(gs), table.FormatFloat(gl))
		}
		if r[col["gen_error_bo"]] != table.FormatFloat(bo) || r[col["gen_error_bo_stderr"]] != table.FormatFloat(bos) {
			t.Errorf("row %d: e_BO %s ± %s; engine %s ± %s", i, r[col["gen_error_bo"]], r[col["gen_error_bo_stderr"]], table.FormatFloat(bo), table.FormatFloat(bos))
		}
	}
	o.Workers = 1
	F, err := smise.Stability(ch, []float64{0, 0}, o)
	if err != nil {
		t.Fatal(err)
	}
	man := readManifest(t, filepath.Join(dir, "se.json"))
	th := man["thresholds"].(map[string]any)
	stab := th["stability"].([]any)
	for l := range F {
		if got := stab[l].(float64); math.Abs(got-1/F[l]) > 1e-12*got {
			t.Errorf("manifest stability threshold %d = %g, want 1/F = %g", l+1, got, 1/F[l])
		}
	}
	if len(th["onset"].([]any)) != 2 || man["points"].(float64) != 2 || man["command"] != "smi se" {
		t.Errorf("manifest %v", man)
	}
	if _, ok := th["published"]; !ok {
		t.Errorf("manifest at L = 2, c = 1 lacks the published thresholds: %v", th)
	}
	checkPNG(t, plot)
}

// TestSMISEStartBoth: --start both solves from both ends; where they reach one fixed point the
// row is the uninformed one (Q and Phi as the engine's uninformed solve) marked start = both,
// with the iterations of both solves, and the manifest lists no coexisting points.
func TestSMISEStartBoth(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	code, stdout, stderr := runArgs(t, "smi", "se", "--quiet", "--alpha", "0.3", "--samples", "64", "--max-iter", "60",
		"--tol", "1e-4", "--gen-samples", "0", "--start", "both", "--out", out, "--plot", "")
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	ch, _ := smi.NewDeep(2, 2, 1, 1)
	o := smise.DefaultOptions(2)
	o.Samples, o.MaxIter, o.Tol = 64, 60, 1e-4
	u, err := smise.Solve(ch, 0.3, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Start = smise.Informed
	i, err := smise.Solve(ch, 0.3, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[1]
	if r[col["start"]] != "both" || r[col["coexist"]] != "false" || r[col["Q22"]] != table.FormatFloat(u.Q[1]) ||
		r[col["free_entropy"]] != table.FormatFloat(u.FreeEntropy) || r[col["iterations"]] != strconv.Itoa(u.Iterations+i.Iterations) {
		t.Errorf("row %v; want start both, coexist false, Q22 %s, Phi %s, %d iterations", r, table.FormatFloat(u.Q[1]), table.FormatFloat(u.FreeEntropy), u.Iterations+i.Iterations)
	}
	man := readManifest(t, filepath.Join(dir, "se.json"))
	if c, ok := man["coexisting"].([]any); !ok || len(c) != 0 || man["parameters"].(map[string]any)["start"] != "both" {
		t.Errorf("manifest coexisting %v, parameters %v", man["coexisting"], man["parameters"])
	}
}

// TestSMISENotConverged checks that unconverged points are written with converged=false and
// no values, and make the command exit with status 1.
func TestSMISENotConverged(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	code, _, stderr := runArgs(t, "smi", "se", "--quiet", "--alpha", "0.3", "--samples", "32", "--max-iter", "2",
		"--gen-samples", "0", "--out", out, "--plot", "")
	if code != 1 || !strings.Contains(stderr, "did not converge") {
		t.Fatalf("status %d, stderr %q; want 1 and a non-convergence report", code, stderr)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	if len(rows) != 2 || rows[1][col["converged"]] != "false" || rows[1][col["Q22"]] != "" || rows[1][col["iterations"]] != "2" {
		t.Errorf("CSV of an unconverged run: %v", rows)
	}
	if _, err := os.Stat(filepath.Join(dir, "se.json")); err != nil {
		t.Errorf("no manifest: %v", err)
	}
}

// TestSMISEMCError: with --mc-error (and with --newton) the samples column and the Qerr
// columns are the engine's for the same target and cap; a target missed at --max-samples is a
// warning on stderr and in the manifest, not a failure (status 0).
func TestSMISEMCError(t *testing.T) {
	for _, newton := range []bool{false, true} {
		dir := t.TempDir()
		out := filepath.Join(dir, "se.csv")
		args := []string{"smi", "se", "--quiet", "--alpha", "0.5", "--samples", "32", "--mc-error", "1e-4", "--max-samples", "64",
			"--tol", "1e-3", "--gen-samples", "0", "--out", out, "--plot", ""}
		if newton {
			args = append(args, "--newton")
		}
		code, stdout, stderr := runArgs(t, args...)
		if code != 0 {
			t.Fatalf("newton %v: status %d: %s %s", newton, code, stdout, stderr)
		}
		ch, _ := smi.NewDeep(2, 2, 1, 1)
		o := smise.DefaultOptions(2)
		o.Samples, o.Tol, o.MCError, o.MaxSamples, o.Newton = 32, 1e-3, 1e-4, 64, newton
		p, err := smise.Solve(ch, 0.5, o)
		if err != nil || !p.Converged || !p.ErrorMissed || p.Samples != 64 {
			t.Fatalf("newton %v: engine: %+v, %v; want the target missed at 64 draws", newton, p, err)
		}
		rows := readCSV(t, out)
		col := csvColumns(rows[0])
		r := rows[1]
		if r[col["samples"]] != "64" || r[col["Qerr22"]] != table.FormatFloat(p.QErr[1]) || r[col["Q22"]] != table.FormatFloat(p.Q[1]) ||
			r[col["iterations"]] != strconv.Itoa(p.Iterations) {
			t.Errorf("newton %v: row %v; engine %+v", newton, r, p)
		}
		if !strings.Contains(stderr, "warning: alpha 0.5: the standard error of Q") || !strings.Contains(stderr, "--max-samples 64") {
			t.Errorf("newton %v: stderr %q: no warning for the missed target", newton, stderr)
		}
		man := readManifest(t, filepath.Join(dir, "se.json"))
		if m, _ := man["mc_error_missed"].([]any); len(m) != 1 {
			t.Errorf("newton %v: manifest mc_error_missed %v, want the one point", newton, man["mc_error_missed"])
		}
		if man["parameters"].(map[string]any)["newton"] != newton {
			t.Errorf("manifest params newton = %v, want %v", man["parameters"].(map[string]any)["newton"], newton)
		}
	}
}

// TestSMIThresholds checks one row per c with the stability thresholds 1/F of
// smise.Stability, and that an unbracketed or unsearchable conditional threshold is written
// empty with a note, not a failure.
func TestSMIThresholds(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "th.csv")
	// --hi below the last layer's threshold: the conditional search is skipped. --workers 1:
	// see TestSMISE (the engine race in smise.Stability).
	code, stdout, stderr := runArgs(t, "smi", "thresholds", "--quiet", "--c", "0.5,1", "--samples", "200", "--hi", "0.1",
		"--workers", "1", "--out", out, "--plot", filepath.Join(dir, "th.png"))
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "not searched") || !strings.Contains(stdout, "stab_2") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
	rows := readCSV(t, out)
	if strings.Join(rows[0], ",") != "L,M,beta,c,alpha_stability_1,alpha_stability_2,alpha_conditional_1" || len(rows) != 3 {
		t.Fatalf("CSV %v", rows)
	}
	col := csvColumns(rows[0])
	o := smise.DefaultOptions(2)
	o.Samples, o.Workers = 200, 1
	for i, cv := range []float64{0.5, 1} {
		r := rows[i+1]
		if parseCell(t, r[col["c"]]) != cv || r[col["alpha_conditional_1"]] != "" {
			t.Errorf("row %v", r)
		}
		ch, _ := smi.NewDeep(2, 2, cv, 1)
		F, err := smise.Stability(ch, []float64{0, 0}, o)
		if err != nil {
			t.Fatal(err)
		}
		for l, name := range []string{"alpha_stability_1", "alpha_stability_2"} {
			if got := parseCell(t, r[col[name]]); math.Abs(got-1/F[l]) > 1e-11*got {
				t.Errorf("c = %g: %s = %.15g, want 1/F = %.15g", cv, name, got, 1/F[l])
			}
		}
	}
	checkPNG(t, filepath.Join(dir, "th.png"))
	// A searched interval that does not bracket the threshold: empty, with the engine's note.
	code, _, stderr = runArgs(t, "smi", "thresholds", "--quiet", "--c", "1", "--samples", "32", "--max-iter", "100", "--tol", "1e-3", "--hi", "0.45", "--workers", "1",
		"--out", filepath.Join(dir, "th2.csv"), "--plot", "")
	if code != 0 || !strings.Contains(stderr, "not bracketed") {
		t.Fatalf("status %d, stderr %q; want 0 and a note", code, stderr)
	}
	if rows := readCSV(t, filepath.Join(dir, "th2.csv")); len(rows) != 2 || rows[1][len(rows[1])-1] != "" {
		t.Errorf("CSV %v", rows)
	}
}

// TestSMIAMP runs a tiny GAMP and checks the CSV and trace against the engine, the --se lines
// and the two plots.
func TestSMIAMP(t *testing.T) {
	dir := t.TempDir()
	seCSV := filepath.Join(dir, "se.csv")
	os.WriteFile(seCSV, []byte(strings.Join(smijob.SMISESchema.Header(2), ",")+"\n"+
		"2,2,1,1,1.2,0.8,0.99,,,,,,,,,,,4000,10,true,0,uninformed,false,-1.6,0.04\n2,2,1,1,0.5,,,,,,,,,,,,,4000,200,false,0,uninformed,false,,\n"+
		"2,2,1,1,0.3,0,0.1,,,,,,,,,,,4000,10,true,0,uninformed,false,-0.9,0.01\n"), 0o644)
	out, trace := filepath.Join(dir, "amp.csv"), filepath.Join(dir, "trace.csv")
	code, _, stderr := runArgs(t, "smi", "amp", "--quiet", "--D", "60", "--alpha", "1", "--seeds", "1", "--seed", "5", "--max-iter", "3",
		"--gen-samples", "300", "--out", out, "--plot", filepath.Join(dir, "amp.png"), "--trace", trace, "--se", seCSV)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	want := "L,M,c,beta,D,N,alpha,seed,Q11,Q22,absM11,absM22,m11,m22,cos1,cos2,e_gen,iterations,distance,converged,seconds"
	if strings.Join(rows[0], ",") != want || len(rows) != 2 {
		t.Fatalf("CSV %v, want header %s and one row", rows, want)
	}
	data, err := smi.Generate(smi.Params{D: 60, Alpha: 1, M: 2, L: 2, C: 1, Beta: 1, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	o := smiamp.DefaultOptions(2)
	o.MaxIter, o.TestSamples = 3, 300
	res, err := smiamp.Run(data, o)
	if err != nil {
		t.Fatal(err)
	}
	last := res.Trace[len(res.Trace)-1]
	col := csvColumns(rows[0])
	r := rows[1]
	for l := 0; l < 2; l++ {
		var wn float64 // ||w*_l||^2 / D
		for _, v := range data.W[l*60 : (l+1)*60] {
			wn += v * v / 60
		}
		for _, c := range []struct {
			name string
			v    float64
		}{{table.LayerNames("Q", 2, true)[l], last.Q[l]}, {table.LayerNames("absM", 2, true)[l], last.M[l]}, {table.LayerNames("m", 2, true)[l], last.M[l] / wn},
			{table.LayerNames("cos", 2, false)[l], last.Cos[l]}} {
			if r[col[c.name]] != table.FormatFloat(c.v) {
				t.Errorf("%s = %s, engine %s", c.name, r[col[c.name]], table.FormatFloat(c.v))
			}
		}
	}
	if r[col["e_gen"]] != table.FormatFloat(last.EGen) || r[col["iterations"]] != "3" || r[col["N"]] != "60" || r[col["seed"]] != "5" {
		t.Errorf("row %v; engine e_gen %s after %d iterations", r, table.FormatFloat(last.EGen), res.Iterations)
	}
	tr := readCSV(t, trace)
	if len(tr) != 4 || tr[0][2] != "iteration" {
		t.Fatalf("trace %v", tr)
	}
	tcol := csvColumns(tr[0])
	for i, it := range res.Trace {
		if tr[i+1][tcol["cos2"]] != table.FormatFloat(it.Cos[1]) || tr[i+1][tcol["e_gen"]] != table.FormatFloat(it.EGen) || tr[i+1][tcol["quad_failed"]] != strconv.Itoa(it.Failed) ||
			tr[i+1][tcol["damping"]] != table.FormatFloat(it.Damping) {
			t.Errorf("trace row %v, engine %+v", tr[i+1], it)
		}
	}
	checkPNG(t, filepath.Join(dir, "amp.png"))
	checkPNG(t, filepath.Join(dir, "trace.png"))
	if _, err := os.Stat(filepath.Join(dir, "amp.json")); err != nil {
		t.Error(err)
	}
}

// TestSMIThresholdsUnconverged checks a conditional threshold whose restricted SE does not
// converge: every row is written, that threshold empty, the manifest lists it, and the command
// exits with status 1 naming it.
func TestSMIThresholdsUnconverged(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "th.csv")
	code, _, stderr := runArgs(t, "smi", "thresholds", "--quiet", "--c", "1", "--samples", "50", "--max-iter", "30", "--hi", "2",
		"--out", out, "--plot", "")
	if code != 1 || !strings.Contains(stderr, "aim smi thresholds: 1 conditional thresholds did not converge") ||
		!strings.Contains(stderr, "c = 1: SMI conditional threshold of layer 1") {
		t.Fatalf("status %d, stderr %q; want 1 and the threshold named", code, stderr)
	}
	rows := readCSV(t, out)
	if len(rows) != 2 || rows[1][csvColumns(rows[0])["alpha_conditional_1"]] != "" || rows[1][csvColumns(rows[0])["alpha_stability_1"]] == "" {
		t.Errorf("rows %v: want c = 1 with its stability thresholds and no conditional one", rows)
	}
	b, err := os.ReadFile(filepath.Join(dir, "th.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct{ Failed []string }
	if err := json.Unmarshal(b, &man); err != nil || len(man.Failed) != 1 {
		t.Errorf("manifest failed %v, %v; want one entry", man.Failed, err)
	}
}

// TestSMIAMPTraceAuto checks the trace's default: beside --out, named after it, and listed
// with its manifest among the outputs of the run's manifest.
func TestSMIAMPTraceAuto(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.csv")
	code, _, stderr := runArgs(t, "smi", "amp", "--quiet", "--D", "30", "--alpha", "1.5", "--seeds", "1", "--max-iter", "2",
		"--gen-samples", "100", "--out", out, "--plot", "")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if rows := readCSV(t, filepath.Join(dir, "x-trace.csv")); len(rows) != 3 {
		t.Errorf("trace: %d lines, want the header and 2 iterations", len(rows))
	}
	b, err := os.ReadFile(filepath.Join(dir, "x.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct{ Outputs []string }
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	want := []string{out, filepath.Join(dir, "x.json"), filepath.Join(dir, "x-trace.csv"), filepath.Join(dir, "x-trace.json")}
	if !slices.Equal(man.Outputs, want) {
		t.Errorf("outputs %v, want %v", man.Outputs, want)
	}
}

// TestSMIAMPQuadBudget checks that --quad-max-eval reaches the engine: the CLI's e_gen equals
// the engine's at that budget and differs from the default budget's.
func TestSMIAMPQuadBudget(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "amp.csv")
	code, _, stderr := runArgs(t, "smi", "amp", "--quiet", "--D", "40", "--alpha", "1.5", "--seeds", "1", "--seed", "3", "--max-iter", "2",
		"--gen-samples", "200", "--quad-max-eval", "200", "--out", out, "--plot", "", "--trace", "")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	got := rows[1][csvColumns(rows[0])["e_gen"]]
	data, err := smi.Generate(smi.Params{D: 40, Alpha: 1.5, M: 2, L: 2, C: 1, Beta: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	egen := func(budget int) string {
		o := smiamp.DefaultOptions(2)
		o.MaxIter, o.TestSamples, o.QuadMaxEval = 2, 200, budget
		res, err := smiamp.Run(data, o)
		if err != nil {
			t.Fatal(err)
		}
		return table.FormatFloat(res.Trace[len(res.Trace)-1].EGen)
	}
	if want, def := egen(200), egen(0); got != want || got == def {
		t.Errorf("e_gen %s with --quad-max-eval 200: engine %s at that budget, %s at the default", got, want, def)
	}
}

// TestSMISGD runs a tiny SGD and checks every record against the engine; a deeper, wider
// architecture (L = 3, M = 3), which the state evolution does not cover, runs too.
func TestSMISGD(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sgd.csv")
	code, _, stderr := runArgs(t, "smi", "sgd", "--quiet", "--D", "40", "--alpha", "15", "--epochs", "2", "--seeds", "2",
		"--gen-samples", "100", "--out", out, "--plot", filepath.Join(dir, "sgd.png"))
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	want := "seed,update,batch,epoch,M11,M22,Q11,Q22,cos1,cos2,loss,train_error,test_error"
	if strings.Join(rows[0], ",") != want {
		t.Fatalf("header %v, want %s", rows[0], want)
	}
	col := csvColumns(rows[0])
	o := sgd.DefaultOptions()
	o.Epochs, o.TestSamples = 2, 100
	k := 1
	for seed := uint64(1); seed <= 2; seed++ {
		data, err := smi.Generate(smi.Params{D: 40, Alpha: 15, M: 2, L: 2, C: 1, Beta: 1, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sgd.Run(data, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, pt := range res.Trace {
			if k >= len(rows) {
				t.Fatalf("CSV has %d rows, the engine records more", len(rows)-1)
			}
			r := rows[k]
			k++
			if r[col["seed"]] != strconv.FormatUint(seed, 10) || r[col["update"]] != strconv.Itoa(pt.Update) || r[col["epoch"]] != strconv.Itoa(pt.Epoch) {
				t.Errorf("row %v, engine update %d epoch %d", r, pt.Update, pt.Epoch)
			}
			for l := 0; l < 2; l++ {
				if r[col[table.LayerNames("M", 2, true)[l]]] != table.FormatFloat(pt.M[l]) || r[col[table.LayerNames("Q", 2, true)[l]]] != table.FormatFloat(pt.Q[l]) ||
					r[col[table.LayerNames("cos", 2, false)[l]]] != table.FormatFloat(pt.Cos[l]) {
					t.Errorf("row %v layer %d, engine M %g Q %g cos %g", r, l+1, pt.M[l], pt.Q[l], pt.Cos[l])
				}
			}
			if r[col["loss"]] != table.FormatFloat(pt.Loss) || r[col["test_error"]] != table.FormatFloat(pt.TestError) {
				t.Errorf("row %v, engine loss %g test %g", r, pt.Loss, pt.TestError)
			}
		}
	}
	if k != len(rows) || k != 1+2*3 { // updates 0, end of epoch 1, end of epoch 2, per seed
		t.Errorf("CSV has %d records, engine %d", len(rows)-1, k-1)
	}
	checkPNG(t, filepath.Join(dir, "sgd.png"))
	code, _, stderr = runArgs(t, "smi", "sgd", "--quiet", "--L", "3", "--M", "3", "--D", "20", "--alpha", "2", "--epochs", "1",
		"--gen-samples", "20", "--out", filepath.Join(dir, "deep.csv"), "--plot", "")
	if code != 0 {
		t.Fatalf("L = 3, M = 3: status %d: %s", code, stderr)
	}
	if rows := readCSV(t, filepath.Join(dir, "deep.csv")); len(rows[0]) != 4+3*3+3 || len(rows) != 3 {
		t.Errorf("L = 3 CSV %v", rows)
	}
}

// TestSMISENoiseLimited: a sampled L = 3 point whose iterates jitter below --tol stops by the
// noise rule; its row is the engine's point for the same options, and the manifest lists its
// alpha under noise_limited.
func TestSMISENoiseLimited(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	code, stdout, stderr := runArgs(t, "smi", "se", "--quiet", "--L", "3", "--alpha", "1.5", "--samples", "200", "--draws", "200",
		"--tol", "1e-9", "--gen-samples", "0", "--out", out, "--plot", "")
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	ch, _ := smi.NewDeep(3, 2, 1, 1)
	o := smise.DefaultOptions(3)
	o.Samples, o.Draws, o.Tol = 200, 200, 1e-9
	p, err := smise.Solve(ch, 1.5, o)
	if err != nil || !p.Converged || !p.NoiseLimited {
		t.Fatalf("engine: converged %v, noise-limited %v, %v; want both", p.Converged, p.NoiseLimited, err)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	for l := range p.Q {
		name := fmt.Sprintf("Q%d%d", l+1, l+1)
		if got := rows[1][col[name]]; got != table.FormatFloat(p.Q[l]) {
			t.Errorf("%s = %s, engine %v", name, got, p.Q[l])
		}
	}
	man := readManifest(t, filepath.Join(dir, "se.json"))
	if m, _ := man["noise_limited"].([]any); len(m) != 1 || m[0] != 1.5 {
		t.Errorf("manifest noise_limited %v, want [1.5]", man["noise_limited"])
	}
}

// TestSMISEAt: `smi se --at` writes the engine's linearisation (smise.Linearise) at each alpha,
// the row's Q and Qerr the fixed point one Newton step away, start "at", and the manifest's
// "at" the map's residual at the point; bad --at values exit 2 and write nothing.
func TestSMISEAt(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	code, stdout, stderr := runArgs(t, "smi", "se", "--quiet", "--L", "2", "--alpha", "1.2", "--at", "0.84,0.9977", "--samples", "512",
		"--gen-samples", "0", "--out", out, "--plot", "")
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	ch, _ := smi.NewDeep(2, 2, 1, 1)
	o := smise.DefaultOptions(2)
	o.Samples = 512
	lin, err := smise.Linearise(ch, 1.2, []float64{0.84, 0.9977}, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	for l := range lin.Q {
		for name, want := range map[string]float64{fmt.Sprintf("Q%d%d", l+1, l+1): lin.Q[l], fmt.Sprintf("Qerr%d%d", l+1, l+1): lin.QErr[l]} {
			if got := rows[1][col[name]]; got != table.FormatFloat(want) {
				t.Errorf("%s = %s, engine %v", name, got, want)
			}
		}
	}
	if rows[1][col["start"]] != "at" || rows[1][col["iterations"]] != "5" || rows[1][col["converged"]] != "true" {
		t.Errorf("start %s, iterations %s, converged %s; want at, 5, true", rows[1][col["start"]], rows[1][col["iterations"]], rows[1][col["converged"]])
	}
	man := readManifest(t, filepath.Join(dir, "se.json"))
	at, _ := man["at"].([]any)
	if len(at) != 1 {
		t.Fatalf("manifest at %v", man["at"])
	}
	a := at[0].(map[string]any)
	g, _ := a["G"].([]any)
	z, _ := a["residual_sigmas"].([]any)
	if len(g) != 2 || g[0] != lin.G[0] || len(z) != 2 || z[0] != (lin.G[0]-0.84)/lin.GErr[0] {
		t.Errorf("manifest at %v, engine G %v +- %v", a, lin.G, lin.GErr)
	}
	if j, _ := a["jacobian"].([]any); len(j) != 4 || j[1] != lin.J[1] || j[2] != lin.J[2] {
		t.Errorf("manifest jacobian %v, engine %v", a["jacobian"], lin.J)
	}
	for _, args := range [][]string{{"--at", "0.5"}, {"--at", "0.5,1"}, {"--at", "0.5,x"}, {"--at", "0.5,0.5", "--mc-error", "0.01"},
		{"--at", "0.5,0.5", "--replicates", "1"}} {
		bad := filepath.Join(dir, "bad.csv")
		code, _, stderr := runArgs(t, append([]string{"smi", "se", "--quiet", "--L", "2", "--alpha", "1", "--out", bad}, args...)...)
		if code != 2 || !strings.Contains(stderr, "--at") {
			t.Errorf("%v: status %d, %q; want 2 naming --at", args, code, stderr)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Errorf("%v: wrote %s", args, bad)
		}
	}
}

// TestSMISEUndetermined: a layer whose stability at the sampled floor the draws cannot settle
// (L = 3, alpha = 1.5, 800 samples; smise.Point.Undetermined) is written as Q = 0 with Qerr
// +Inf, warned about on stderr with its slope, and listed in the manifest; the status is 0.
func TestSMISEUndetermined(t *testing.T) {
	if testing.Short() {
		t.Skip("an L = 3 SE solve: skipped in -short mode")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	code, stdout, stderr := runArgs(t, "smi", "se", "--quiet", "--L", "3", "--alpha", "1.5", "--samples", "800", "--replicates", "4",
		"--draws", "400", "--tol", "1e-4", "--gen-samples", "0", "--out", out, "--plot", "")
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	r := rows[1]
	if r[col["Q11"]] != "0" || r[col["Qerr11"]] != "+Inf" {
		t.Errorf("row %v: want Q11 = 0 with Qerr11 = +Inf", r)
	}
	if !strings.Contains(stderr, "warning: alpha 1.5: Q_11 = 0, but the map's slope at the floor is") {
		t.Errorf("stderr %q: no warning for the undetermined layer", stderr)
	}
	man := readManifest(t, filepath.Join(dir, "se.json"))
	if m, _ := man["stability_undetermined"].([]any); len(m) != 2 {
		t.Errorf("manifest stability_undetermined %v, want layers 1 and 2", man["stability_undetermined"])
	}
}
