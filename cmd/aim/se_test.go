package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"

	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/se"
)

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestSEBadInput checks that every kind of bad input exits with status 2, says what is wrong,
// and leaves nothing in the output folder.
func TestSEBadInput(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	out := filepath.Join(dir, "res", "se.csv")
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--alpha", "0"}, "alpha"},
		{[]string{"--alpha", "-0.1,0.2"}, "alpha"},
		{[]string{"--alpha", ""}, "empty"},
		{[]string{"--alpha", "0.1:0.05:4"}, "above"},
		{[]string{"--alpha", "0.1:0.2:x"}, "count"},
		{[]string{"--alpha", "0.1,,0.2"}, "empty entry"},
		{[]string{"--rho", "0"}, "rho"},
		{[]string{"--rho", "-1"}, "rho"},
		{[]string{"--rho", "abc"}, "not a number"},
		{[]string{"--T", "1"}, "T >= 2"},
		{[]string{"--beta", "0"}, "beta"},
		{[]string{"--beta", "-2"}, "beta"},
		{[]string{"--channel", "relu"}, "unknown channel"},
		{[]string{"--channel", "hardmax", "--T", "5"}, "no state-evolution table for T = 5"},
		{[]string{"--paper-compat"}, "hardmax channel only"},
		{[]string{"--noise", "-1"}, "--noise -1"},
		{[]string{"--noise", "+Inf"}, "must be finite"},
		{[]string{"--noise", "0.01", "--T", "7"}, "2 <= T <= 6"},
		{[]string{"--noise", "0.01", "--channel", "hardmax"}, "softmax and linear channels only"},
		{[]string{"--out", filepath.Join(blocker, "se.csv"), "--alpha", "0.1"}, "cannot"},
		{[]string{"--out", filepath.Join(dir, "se.txt")}, ".csv"},
		{[]string{"--plot", filepath.Join(dir, "se.gif")}, "format"},
		{[]string{"--gen-samples", "1"}, "gen-samples"},
		{[]string{"--damping", "1"}, "damping"},
		{[]string{"--start", "foo"}, "want uninformed, informed or both"},
		{[]string{"--channel", "hardmax", "--paper-compat", "--start", "both"}, "no free entropy"},
		{[]string{"--bogus"}, "bogus"},
		{[]string{"stray"}, "unexpected argument"},
	}
	for _, tc := range tests {
		args := withFlags([]string{"se", "--quiet", "--out", out, "--plot", filepath.Join(dir, "res", "se.png")}, tc.args...)
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("aim %v: status %d, stderr %q; want status 2 mentioning %q", tc.args, code, stderr, tc.msg)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "res"))
	if len(entries) != 0 {
		t.Errorf("bad input left files: %v", entries)
	}
}

// TestSEWritesResults runs a small softmax sweep and checks the CSV against the SE solver, the
// manifest and the plot.
func TestSEWritesResults(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	plot := filepath.Join(dir, "se.png")
	code, stdout, stderr := runArgs(t, "se", "--quiet", "--rho", "0.5", "--rho", "2", "--alpha", "0.05,0.1,0.3",
		"--gen-samples", "400", "--out", out, "--plot", plot)
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	rows := readCSV(t, out)
	if strings.Join(rows[0], ",") != strings.Join(aimjob.SESchema.Header(0), ",") || len(rows) != 7 {
		t.Fatalf("CSV header %v with %d rows", rows[0], len(rows))
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	ch, _ := aim.NewSoftmax(2, 1)
	for _, r := range rows[1:] {
		rho, _ := strconv.ParseFloat(r[col["rho"]], 64)
		alpha, _ := strconv.ParseFloat(r[col["alpha"]], 64)
		mmse, _ := strconv.ParseFloat(r[col["mmse"]], 64)
		abar, _ := strconv.ParseFloat(r[col["alpha_bar"]], 64)
		p, err := se.Solve(ch, rho, alpha, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(mmse-p.MMSE) > 1e-11 || math.Abs(abar-4*alpha) > 1e-12 || r[col["converged"]] != "true" {
			t.Errorf("row %v: mmse %g want %g, alpha_bar %g want %g", r, mmse, p.MMSE, abar, 4*alpha)
		}
		if g, err := strconv.ParseFloat(r[col["gen_error"]], 64); err != nil || !(g >= 0 && g < 2) {
			t.Errorf("row %v: gen_error %q", r, r[col["gen_error"]])
		}
	}
	var man map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "se.json"))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	th := man["thresholds"].(map[string]any)["alpha_PR"].(map[string]any)
	if a := th["0.5"].(float64); math.Abs(a-0.1875) > 1e-6 {
		t.Errorf("manifest alpha_PR(0.5) = %g, want 0.1875", a)
	}
	if man["points"].(float64) != 6 || man["version"] == "" {
		t.Errorf("manifest %v", man)
	}
	pf, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if _, err := png.Decode(pf); err != nil {
		t.Errorf("plot is not a PNG: %v", err)
	}
}

// TestSEThreshold checks `aim se --threshold` against the counting formula and the published
// paper-compat hardmax threshold.
func TestSEThreshold(t *testing.T) {
	code, stdout, stderr := runArgs(t, "se", "--threshold", "--T", "3", "--rho", "0.5,2")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, want := range []string{"alpha-bar_c = 0.1", "alpha_PR = 0.075", "alpha_PR = 0.1 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("threshold output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runArgs(t, "se", "--threshold", "--channel", "hardmax", "--paper-compat")
	if code != 0 || !strings.Contains(stdout, "alpha-bar_c = 0.563") || !strings.Contains(stdout, "alpha_PR = none") {
		t.Errorf("hardmax threshold output (status %d):\n%s", code, stdout)
	}
}

// TestSENotConverged checks that unconverged points are flagged, carry no values, and make the
// command fail.
func TestSENotConverged(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	code, _, stderr := runArgs(t, "se", "--quiet", "--alpha", "0.1", "--max-iter", "2", "--gen-samples", "0", "--out", out, "--plot", "")
	if code != 1 || !strings.Contains(stderr, "did not converge") {
		t.Fatalf("status %d, stderr %q; want 1 and a non-convergence report", code, stderr)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[1], ",false") || !strings.Contains(lines[1], ",,,,,,") {
		t.Errorf("CSV of an unconverged run:\n%s", b)
	}
}

// TestSEThresholdHardmaxT: `aim se --channel hardmax --T 3 --threshold` prints alpha-bar_c =
// 1/(2 FisherSum(0, 1)) with its error from the shipped table (aim.HardmaxTChannel), which
// agrees within 4 combined errors with the independent sum over the output patterns at 16 384
// points per shift (aim.HardmaxT.FisherSumZero); T = 7, the paper formula at T = 3 and a T = 5
// curve (no table) are bad input.
func TestSEThresholdHardmaxT(t *testing.T) {
	code, stdout, stderr := runAim("se", "--channel", "hardmax", "--T", "3", "--threshold")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	ch, err := aim.NewHardmaxTChannel(3)
	if err != nil {
		t.Fatal(err)
	}
	F, _ := ch.FisherSum(0, 1)
	Ferr := ch.FisherSumErr(0, 1)
	want := fmt.Sprintf("alpha-bar_c = %.6g +- %.2g", 1/(2*F), Ferr/(2*F*F))
	if !strings.Contains(stdout, want) || !strings.Contains(stdout, "alpha_PR = none") {
		t.Errorf("stdout %q lacks %q", stdout, want)
	}
	h, _ := aim.NewHardmaxT(3)
	h.Tol, h.Points = 0, 16384
	f, err := h.FisherSumZero(1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.V-F) > 4*math.Hypot(f.Err, Ferr) {
		t.Errorf("FisherSum(0, 1) at T = 3: table %.6g +- %.2g, patterns %.6g +- %.2g", F, Ferr, f.V, f.Err)
	}
	for _, args := range [][]string{{"--T", "7", "--threshold"}, {"--T", "3", "--paper-compat", "--threshold"}, {"--T", "5", "--out", filepath.Join(t.TempDir(), "x.csv")}} {
		code, _, stderr := runAim(append([]string{"se", "--channel", "hardmax"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "T = 2 only") && !strings.Contains(stderr, "largest supported is 6") && !strings.Contains(stderr, "no state-evolution table for T = 5") {
			t.Errorf("%v: status %d, %s", args, code, stderr)
		}
	}
}

// TestSEPlotPDF: `--plot x.pdf` writes the figure as a PDF with vector text (the axis label
// in a text operator; figure.TestRenderPDF checks the content streams).
func TestSEPlotPDF(t *testing.T) {
	dir := t.TempDir()
	pdf := filepath.Join(dir, "se.pdf")
	code, _, stderr := runAim("se", "--quiet", "--rho", "0.5", "--alpha", "0.05:0.2:4", "--gen-samples", "0",
		"--out", filepath.Join(dir, "se.csv"), "--plot", pdf)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	b, err := os.ReadFile(pdf)
	if err != nil || !bytes.HasPrefix(b, []byte("%PDF-1.")) || !bytes.Contains(b, []byte("%%EOF")) {
		t.Fatalf("%s is not a PDF (%v)", pdf, err)
	}
}

// TestSEIntTol: for hardmax at T = 3, `--int-tol` below what the shipped table can give anywhere
// is bad input (status 2, nothing written); a reachable one reports exactly the points whose
// integral's relative error (aim.HardmaxTChannel at the fixed point) is above it as unconverged
// (status 1, rows without values), and leaves the others as without it.
func TestSEIntTol(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.csv")
	base := []string{"se", "--quiet", "--channel", "hardmax", "--T", "3", "--rho", "0.5", "--alpha", "0.01:10:12:log", "--gen-samples", "0", "--plot", ""}
	code, _, stderr := runAim(append(base, "--int-tol", "1e-6", "--out", out)...)
	if _, err := os.Stat(out); code != 2 || !strings.Contains(stderr, "gives F to") || err == nil {
		t.Errorf("--int-tol 1e-6: status %d, %s (file written: %v)", code, stderr, err == nil)
	}
	runOK(t, append(base, "--out", out)...)
	all := readCSV(t, out)
	code, _, stderr = runAim(append(base, "--int-tol", "0.001", "--out", out)...)
	cut := readCSV(t, out)
	if code != 1 || len(cut) != len(all) {
		t.Fatalf("--int-tol 0.001: status %d, %d rows (want 1, %d): %s", code, len(cut), len(all), stderr)
	}
	ch, _ := aim.NewHardmaxTChannel(3)
	failed := 0
	conv := -1
	for j, h := range cut[0] {
		if h == "converged" {
			conv = j
		}
	}
	for i := 1; i < len(all); i++ {
		m, _ := strconv.ParseFloat(all[i][column(t, all[0], "mmse")], 64)
		f, _ := ch.FisherSum(1.5-m, m)
		over := ch.FisherSumErr(1.5-m, m) > 0.001*f
		if over != (cut[i][conv] == "false") || !over && strings.Join(cut[i], ",") != strings.Join(all[i], ",") {
			t.Errorf("row %d: %v, without --int-tol %v (relative error over 0.001: %v)", i, cut[i], all[i], over)
		}
		if over {
			failed++
		}
	}
	if failed == 0 || failed == len(all)-1 {
		t.Errorf("%d of %d points over the tolerance; the test wants some of each", failed, len(all)-1)
	}
}

// TestSEFreeEntropy: `aim se` (default --start both) writes free_entropy equal to
// se.FreeEntropy at the uninformed fixed point and coexist = false on softmax and hardmax (no
// first-order transition), the existing columns equal to --start uninformed's, the start in
// the manifest; --threshold prints "none" for the first-order transition; paper-compat hardmax
// falls back to the uninformed start with free_entropy empty.
func TestSEFreeEntropy(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		channel []string
		ch      aim.Channel
	}{{[]string{"--channel", "softmax"}, nil}, {[]string{"--channel", "hardmax"}, nil}} {
		var rows [2][][]string
		for k, start := range []string{"both", "uninformed"} {
			out := filepath.Join(dir, c.channel[1]+start+".csv")
			args := append([]string{"se", "--quiet", "--rho", "0.5", "--alpha", "0.05,0.15", "--gen-samples", "0", "--out", out, "--plot", ""}, c.channel...)
			if start != "both" {
				args = append(args, "--start", start)
			}
			if code, _, stderr := runArgs(t, args...); code != 0 {
				t.Fatalf("%v: status %d: %s", args, code, stderr)
			}
			rows[k] = readCSV(t, out)
			var man map[string]any
			b, _ := os.ReadFile(strings.TrimSuffix(out, ".csv") + ".json")
			if err := json.Unmarshal(b, &man); err != nil || man["parameters"].(map[string]any)["start"] != start {
				t.Errorf("%s: manifest start %v (%v)", out, man["parameters"], err)
			}
		}
		h := rows[0][0]
		if h[len(h)-2] != "free_entropy" || h[len(h)-1] != "coexist" {
			t.Fatalf("header %v", h)
		}
		var ch aim.Channel
		if c.channel[1] == "softmax" {
			ch, _ = aim.NewSoftmax(2, 1)
		} else {
			ch, _ = aim.NewHardmax(2, false)
		}
		for i := 1; i < len(rows[0]); i++ {
			if strings.Join(rows[0][i], ",") != strings.Join(rows[1][i], ",") {
				t.Errorf("%s: --start both and uninformed differ:\n%v\n%v", c.channel[1], rows[0][i], rows[1][i])
			}
			alpha, _ := strconv.ParseFloat(rows[0][i][column(t, h, "alpha")], 64)
			p, err := se.Solve(ch, 0.5, alpha, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			want, _ := se.FreeEntropy(ch, p)
			got, _ := strconv.ParseFloat(rows[0][i][len(h)-2], 64)
			if math.Abs(got-want) > 1e-9*math.Abs(want) || rows[0][i][len(h)-1] != "false" {
				t.Errorf("%s alpha=%g: free_entropy %s (want %.12g), coexist %s", c.channel[1], alpha, rows[0][i][len(h)-2], want, rows[0][i][len(h)-1])
			}
		}
	}
	out := filepath.Join(dir, "paper.csv")
	if code, _, stderr := runArgs(t, "se", "--quiet", "--channel", "hardmax", "--paper-compat", "--rho", "0.5", "--alpha", "0.5", "--gen-samples", "0", "--out", out, "--plot", ""); code != 0 {
		t.Fatalf("paper-compat: status %d: %s", code, stderr)
	}
	if r := readCSV(t, out); len(r) != 2 || r[1][len(r[1])-2] != "" {
		t.Errorf("paper-compat: %v; want an empty free_entropy", r)
	}
	code, stdout, stderr := runArgs(t, "se", "--threshold", "--rho", "0.5", "--alpha", "0.01:0.25:16")
	if code != 0 || !strings.Contains(stdout, "rho = 0.5    first-order transition: none") {
		t.Errorf("--threshold (status %d, %s):\n%s", code, stderr, stdout)
	}
}

// TestSENoiseCSV runs `aim se --noise 0.1` at one point: the CSV has the noise column after
// beta, holding Delta, and the mmse of the noisy softmax's SE (se.Solve, to 1e-11); the
// manifest records the noise.
func TestSENoiseCSV(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s: one noisy SE point")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	code, stdout, stderr := runArgs(t, "se", "--quiet", "--noise", "0.1", "--rho", "0.5", "--alpha", "0.2", "--start", "uninformed",
		"--gen-samples", "0", "--out", out, "--plot", "")
	if code != 0 {
		t.Fatalf("status %d: %s %s", code, stdout, stderr)
	}
	rows := readCSV(t, out)
	if len(rows) != 2 {
		t.Fatalf("CSV %v", rows)
	}
	if strings.Join(rows[0], ",") != strings.Join(aimjob.SESchema.Header(0), ",") || rows[0][4] != "noise" || rows[0][3] != "beta" {
		t.Fatalf("CSV header %v", rows[0])
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	ch, _ := aim.NewNoisySoftmax(2, 1, 0.1)
	o := se.DefaultOptions()
	o.Start = se.Uninformed
	p, err := se.Solve(ch, 0.5, 0.2, o)
	if err != nil {
		t.Fatal(err)
	}
	mmse, _ := strconv.ParseFloat(rows[1][col["mmse"]], 64)
	if rows[1][col["noise"]] != "0.1" || math.Abs(mmse-p.MMSE) > 1e-11 {
		t.Errorf("row %v: noise %q, mmse %g; want 0.1, %g", rows[1], rows[1][col["noise"]], mmse, p.MMSE)
	}
	var man map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "se.json"))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	if n := man["parameters"].(map[string]any)["noise"]; n != 0.1 {
		t.Errorf("manifest noise %v, want 0.1", n)
	}
}

// column returns the index of the column name in header (a test failure when absent).
func column(t *testing.T, header []string, name string) int {
	t.Helper()
	for j, h := range header {
		if h == name {
			return j
		}
	}
	t.Fatalf("no column %q in %v", name, header)
	return -1
}
