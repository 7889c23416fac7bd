package main

// ermflags_test.go: the flags that bring the ERM estimators into the simulations and the
// theory: aim gd --direct, aim erm --penalty ridge and its thresholds, aim amp --weight-decay.

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/erm"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/aim/se"
)

// csvManifest reads the JSON manifest beside a CSV.
func csvManifest(t *testing.T, csvPath string) map[string]any {
	t.Helper()
	return readManifest(t, strings.TrimSuffix(csvPath, ".csv")+".json")
}

// TestLinearGDDirect: `aim gd --channel linear --direct --weight-decay 0.1` writes the engine's
// direct GD (gd.Options.Direct, plain GD from S = 0) on the data of the same seed: direct true,
// R_student D, penalty the engine's lambda ||S||_F^2 (Result.Penalty[0]), final_loss and
// error the engine's, the spectrum CSV the engine's eigenvalues with direct true, and the
// manifest's direct true. --direct with --restarts 2, with --R and with the hardmax channel
// are bad input (TestGDBadInput).
func TestLinearGDDirect(t *testing.T) {
	dir := t.TempDir()
	out, spec := filepath.Join(dir, "gd.csv"), filepath.Join(dir, "spectrum.csv")
	const D, alpha, lambda = 16, 0.8, 0.1
	code, _, stderr := runArgs(t, "gd", "--quiet", "--device", "cpu", "--channel", "linear", "--direct", "--weight-decay", "0.1",
		"--D", "16", "--alpha", "0.8", "--seeds", "1", "--max-iter", "200", "--optimizer", "gd", "--lr", "0.05",
		"--out", out, "--plot", "", "--spectrum", spec)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 1", len(rows)-1)
	}
	col, r := csvColumns(rows[0]), rows[1]
	seed, _ := strconv.ParseUint(r[col["seed"]], 10, 64)
	dev := cpu.New(0)
	data, err := aim.Generate(dev, aim.Params{D: D, Alpha: alpha, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindLinear, T: 1}, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	o := gd.DefaultOptions()
	o.Steps, o.LR, o.Adam, o.WeightDecay, o.Direct, o.Spectrum = 200, 0.05, false, lambda, true, true
	res, err := gd.Run(dev, data, o)
	data.Free(dev)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"direct": "true", "uncentred": "false", "weight_decay": "0.1", "restarts": "1", "R_student": "16",
		"penalty": table.FormatFloat(res.Penalty[0]), "final_loss": table.FormatFloat(mean(res.FinalLoss)),
		"error": table.FormatFloat(res.Error), "finished": "true"}
	for k, v := range want {
		if r[col[k]] != v {
			t.Errorf("%s = %q, engine %q", k, r[col[k]], v)
		}
	}
	if p, _ := strconv.ParseFloat(r[col["penalty"]], 64); !(p > 0) {
		t.Errorf("penalty %q, want lambda ||S||_F^2 > 0", r[col["penalty"]])
	}
	eig := readCSV(t, spec)
	if strings.Join(eig[0], ",") != "rho,alpha,seed,weight_decay,direct,index,eigenvalue" || len(eig) != 1+D {
		t.Fatalf("spectrum CSV: header %v, %d rows; want %d", eig[0], len(eig)-1, D)
	}
	for j, l := range res.Eigenvalues {
		if e := eig[1+j]; e[4] != "true" || e[5] != strconv.Itoa(j) || e[6] != table.FormatFloat(l) {
			t.Errorf("spectrum row %v, want direct true, index %d, eigenvalue %s", e, j, table.FormatFloat(l))
		}
	}
	if man := csvManifest(t, out); man["parameters"].(map[string]any)["direct"] != true {
		t.Errorf("manifest parameters %v: want direct true", man["parameters"])
	}
}

// TestERMRidge: `aim erm --penalty ridge` writes, row for row, erm.Solve with the ridge penalty
// (penalty ridge, test, train and generalisation error, shrink s, tau 0, rank 1), leaves out the
// point of infinite error (lambda = 0 at alpha = 1/2) and says so in the manifest without
// failing; its --spectrum rows carry the penalty and the atom 0, reach below 0 from the
// engine's lower edge to its upper one, and integrate to 1.
func TestERMRidge(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "erm.csv")
	const rho, noise, alphaS = 0.5, 0.25, 0.3
	code, _, stderr := runArgs(t, "erm", "--quiet", "--penalty", "ridge", "--rho", "0.5", "--noise", "0.25", "--alpha", "0.1,0.5,0.6",
		"--weight-decay", "0,0.1", "--spectrum", "0.3", "--out", out, "--plot", filepath.Join(dir, "erm.png"))
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows, col := ermCSV(t, out, aimjob.ERMSchema.Header(0))
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5 (2 lambdas x 3 alphas, but lambda 0 at alpha 0.5)", len(rows))
	}
	for _, r := range rows {
		alpha, lambda := ermNum(t, r[col["alpha"]]), ermNum(t, r[col["weight_decay"]])
		if lambda == 0 && alpha == 0.5 {
			t.Errorf("row %v: the infinite point written", r)
		}
		p, err := erm.Solve(erm.Problem{Rho: rho, Alpha: alpha, Noise: noise, Lambda: lambda, Penalty: erm.Ridge}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if r[col["penalty"]] != "ridge" {
			t.Errorf("lambda %g, alpha %g: penalty %q, want ridge", lambda, alpha, r[col["penalty"]])
		}
		for name, want := range map[string]float64{"test_error": p.TestError, "train_error": p.TrainError, "gen_error": p.GenError,
			"shrink": p.Shrink, "tau": 0, "rank": 1, "tr_s": p.TrS} {
			if got := r[col[name]]; got != table.FormatFloat(want) {
				t.Errorf("lambda %g, alpha %g: %s = %s, the engine gives %.15g", lambda, alpha, name, got, want)
			}
		}
	}
	man := csvManifest(t, out)
	if inf, _ := man["infinite"].([]any); len(inf) != 1 || !strings.Contains(inf[0].(string), "alpha 0.5") || man["complete"] != true {
		t.Errorf("manifest infinite %v, complete %v: want the one point at alpha 0.5, complete", man["infinite"], man["complete"])
	}
	if man["parameters"].(map[string]any)["penalty"] != "ridge" {
		t.Errorf("manifest parameters %v: want penalty ridge", man["parameters"])
	}
	srows, scol := ermCSV(t, filepath.Join(dir, "erm_spectrum.csv"), aimjob.ERMSpectrumSchema.Header(0))
	by := map[float64][][2]float64{}
	for _, r := range srows {
		if r[scol["penalty"]] != "ridge" || r[scol["atom"]] != "0" {
			t.Fatalf("spectrum row %v: want penalty ridge, atom 0", r)
		}
		l := ermNum(t, r[scol["weight_decay"]])
		by[l] = append(by[l], [2]float64{ermNum(t, r[scol["x"]]), ermNum(t, r[scol["density"]])})
	}
	for _, l := range []float64{0, 0.1} {
		pts := by[l]
		p, err := erm.Solve(erm.Problem{Rho: rho, Alpha: alphaS, Noise: noise, Lambda: l, Penalty: erm.Ridge}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		sp, err := p.Spectrum()
		if err != nil {
			t.Fatal(err)
		}
		edges := sp.Edges()
		if len(pts) != aimjob.SpectrumPoints || pts[0][0] != sameCell(edges[0]) || pts[len(pts)-1][0] != sameCell(edges[len(edges)-1]) || !(pts[0][0] < 0) {
			t.Fatalf("lambda %g: %d points over [%g, %g], want %d over the engine's [%g, %g], below 0", l, len(pts), pts[0][0], pts[len(pts)-1][0],
				aimjob.SpectrumPoints, edges[0], edges[len(edges)-1])
		}
		area := 0.0
		for k := 1; k < len(pts); k++ {
			area += (pts[k][0] - pts[k-1][0]) * (pts[k][1] + pts[k-1][1]) / 2
		}
		if math.Abs(area-1) > 1e-3 {
			t.Errorf("lambda %g: the density integrates to %.6g, want 1", l, area)
		}
	}
	code, _, stderr = runArgs(t, "erm", "--quiet", "--penalty", "lasso", "--out", filepath.Join(dir, "bad", "erm.csv"))
	if code != 2 || !strings.Contains(stderr, `--penalty "lasso": want nuclear or ridge`) {
		t.Errorf("--penalty lasso: status %d, stderr %q", code, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "bad")); len(entries) != 0 {
		t.Errorf("--penalty lasso wrote %v", entries)
	}
}

// sameCell is v as a CSV writes it and a reader reads it back (12 significant digits).
func sameCell(v float64) float64 {
	x, _ := strconv.ParseFloat(table.FormatFloat(v), 64)
	return x
}

// TestERMThresholds: the manifest of `aim erm` (noisy labels) holds, per rho, alpha_c =
// erm.PerfectRecovery(rho) and alpha_interp = erm.Interpolation(rho, Delta), exactly; the
// figure `aim plot` draws from the CSV and its manifest has them as vertical lines in the colour
// of the nuclear lambda = 0 line of their rho: alpha_interp dash-dotted with label noise,
// alpha_c dotted without (where perfect recovery exists); without lambda = 0 no line.
func TestERMThresholds(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		noise, lambdas string
		lines          int // vertical lines per rho
	}{
		{"0.25", "0.1,0", 1},
		{"0", "0,0.1", 1},
		{"0.25", "0.1", 0},
	} {
		out := filepath.Join(dir, "erm"+tc.noise+tc.lambdas+".csv")
		code, _, stderr := runArgs(t, "erm", "--quiet", "--rho", "0.5,0.25", "--noise", tc.noise, "--alpha", "0.1,0.3", "--weight-decay", tc.lambdas,
			"--out", out, "--plot", "")
		if code != 0 {
			t.Fatalf("status %d: %s", code, stderr)
		}
		noise, _ := strconv.ParseFloat(tc.noise, 64)
		th, _ := csvManifest(t, out)["thresholds"].(map[string]any)
		pr, _ := th["perfect_recovery"].(map[string]any)
		in, hasInterp := th["interpolation"].(map[string]any)
		if hasInterp != (noise > 0) {
			t.Errorf("noise %g: manifest thresholds %v", noise, th)
		}
		tab, err := job.ReadTable(out)
		if err != nil {
			t.Fatal(err)
		}
		f, err := job.DrawFigure([]*table.Table{tab}, plot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.VLines) != 2*tc.lines { // two rhos
			t.Errorf("noise %g, lambdas %s: %d vertical lines, want %d", noise, tc.lambdas, len(f.VLines), 2*tc.lines)
		}
		for ri, rho := range []float64{0.5, 0.25} {
			key := table.RhoKey(rho)
			ac, err := erm.PerfectRecovery(rho)
			if err != nil {
				t.Fatal(err)
			}
			if pr[key] != ac {
				t.Errorf("rho %g: perfect_recovery %v, the engine's %v", rho, pr[key], ac)
			}
			var ai float64
			if noise > 0 {
				if ai, err = erm.Interpolation(rho, noise); err != nil {
					t.Fatal(err)
				}
				if in[key] != ai {
					t.Errorf("rho %g: interpolation %v, the engine's %v", rho, in[key], ai)
				}
			}
			if tc.lines == 0 {
				continue
			}
			var zero figure.Series
			for _, s := range f.Series {
				if strings.HasPrefix(s.Label, "ERM λ = 0,") && strings.Contains(s.Label, "ρ = "+strconv.FormatFloat(rho, 'g', -1, 64)+",") {
					zero = s
				}
			}
			if zero.Label == "" {
				t.Fatalf("rho %g: no lambda = 0 line among %d series", rho, len(f.Series))
			}
			found := 0
			for _, v := range f.VLines {
				switch {
				case strings.HasPrefix(v.Label, figure.AlphaC) && v.X == ac && v.Group == zero.Group && v.Style == figure.VDotted:
					found++
				case strings.HasPrefix(v.Label, figure.AlphaInt) && v.X == ai && v.Group == zero.Group && v.Style == figure.VDashDot:
					found++
				}
			}
			if found != tc.lines {
				t.Errorf("rho %g (line %d): %d of the %d threshold lines at the engine's values in the colour of the lambda = 0 line; lines %+v", rho, ri, found, tc.lines, f.VLines)
			}
		}
	}
}

// TestAMPWeightDecay: `aim amp --channel linear --weight-decay 0.1` writes, row for row, the
// engine's GAMP for ERM (amp.Options.ERM, WeightDecay 0.1) on the data of the same seed, with
// weight_decay 0.1 and in se_mmse the ERM state evolution's test error (erm.Solve, nuclear,
// lambda 0.1) instead of the Bayes-optimal mmse; its figure draws that state evolution as the
// line "ERM SE λ = 0.1, ρ = 0.5". A lambda <= 0 and a channel other than linear are bad
// input (status 2), and write nothing.
func TestAMPWeightDecay(t *testing.T) {
	dir := t.TempDir()
	out, png := filepath.Join(dir, "amp.csv"), filepath.Join(dir, "amp.png")
	const D, lambda = 20, 0.1
	args := []string{"amp", "--quiet", "--device", "cpu", "--channel", "linear", "--weight-decay", "0.1", "--D", "20", "--alpha", "0.3,0.6",
		"--seeds", "2", "--max-iter", "60", "--out", out, "--plot", png}
	code, _, stderr := runArgs(t, args...)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 4", len(rows)-1)
	}
	spec := channel.Spec{Kind: channel.KindLinear, T: 1}
	dev := cpu.New(0)
	for _, r := range rows[1:] {
		alpha, _ := strconv.ParseFloat(r[col["alpha"]], 64)
		seed, _ := strconv.ParseUint(r[col["seed"]], 10, 64)
		data, err := aim.Generate(dev, aim.Params{D: D, Alpha: alpha, Rho: 0.5, Channel: spec, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		o := amp.ChannelOptions(spec)
		o.MaxIter, o.ERM, o.WeightDecay = 60, true, lambda
		res, err := amp.Run(dev, data, o)
		data.Free(dev)
		if err != nil {
			t.Fatal(err)
		}
		p, err := erm.Solve(erm.Problem{Rho: 0.5, Alpha: alpha, Lambda: lambda}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"weight_decay": "0.1", "error": table.FormatFloat(res.Error), "se_mmse": table.FormatFloat(p.TestError),
			"iterations": strconv.Itoa(res.Iterations)}
		for k, v := range want {
			if r[col[k]] != v {
				t.Errorf("alpha %g seed %d: %s = %q, want %q", alpha, seed, k, r[col[k]], v)
			}
		}
	}
	if man := csvManifest(t, out); man["parameters"].(map[string]any)["weight_decay"] != lambda || man["parameters"].(map[string]any)["erm"] != true {
		t.Errorf("manifest parameters %v: want erm true, weight_decay 0.1", man["parameters"])
	}
	if b, err := os.ReadFile(png); err != nil || len(b) == 0 {
		t.Errorf("no figure: %v", err)
	}
	// The figure `aim plot` draws from the CSV alone: the ERM state evolution through se_mmse.
	tab, err := job.ReadTable(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := job.DrawFigure([]*table.Table{tab}, plot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var line, pts bool
	for _, s := range f.Series {
		line = line || s.Label == "ERM SE λ = 0.1, ρ = 0.5" && !s.Points && len(s.X) == 2
		pts = pts || s.Label == "GAMP-ERM λ = 0.1, ρ = 0.5" && s.Points && len(s.X) == 2
	}
	if !line || !pts || !strings.HasPrefix(f.Title, "GAMP for ERM at D = 20") {
		t.Errorf("figure %q: ERM SE line %v, GAMP-ERM points %v", f.Title, line, pts)
	}

	bad := filepath.Join(dir, "bad")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--weight-decay", "0"}, "aim erm --weight-decay 0"},
		{[]string{"--weight-decay", "-0.1"}, "lambda > 0"},
		{[]string{"--weight-decay", "0.1", "--channel", "hardmax", "--T", "2"}, "GAMP for ERM is implemented for the linear and softmax channels"},
		{[]string{"--weight-decay", "0.1", "--se", filepath.Join(dir, "se.csv")}, "--se with --weight-decay"},
	} {
		code, _, stderr := runArgs(t, withFlags(args, append(tc.args, "--out", filepath.Join(bad, "amp.csv"), "--plot", filepath.Join(bad, "amp.png"))...)...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("aim amp %v: status %d, stderr %q; want status 2 mentioning %q", tc.args, code, stderr, tc.msg)
		}
	}
	if entries, _ := os.ReadDir(bad); len(entries) != 0 {
		t.Errorf("bad input wrote %v", entries)
	}
}
