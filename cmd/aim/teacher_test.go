package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
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
	"github.com/aimtheory/aim/engine/rie"
)

// powerLaw is the teacher of these tests, --teacher powerlaw:1.25.
var powerLaw = aim.Teacher{PowerLaw: true, Gamma: 1.25}

// powerLawPrior is its law at (rho, D), as the theory sees it (aim.Params.Prior).
func powerLawPrior(rho float64, D int) rie.Prior {
	return aim.Params{D: D, Rho: rho, Teacher: powerLaw}.Prior()
}

// checkCells compares the cells of row r (columns col) with want, cell by cell.
func checkCells(t *testing.T, what string, r []string, col map[string]int, want map[string]string) {
	t.Helper()
	for k, v := range want {
		j, ok := col[k]
		if !ok {
			t.Errorf("%s: no column %s", what, k)
			continue
		}
		if r[j] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, r[j], v)
		}
	}
}

// TestParseTeacher: mp (and the empty zero value) is the paper's teacher, powerlaw:G a power law
// of exponent G >= 0 finite; anything else is bad input.
func TestParseTeacher(t *testing.T) {
	for in, want := range map[string]aim.Teacher{"": {}, "mp": {}, "powerlaw:1.25": powerLaw, "powerlaw:0": {PowerLaw: true}, "powerlaw:2e0": {PowerLaw: true, Gamma: 2}} {
		if got, err := aimjob.ParseTeacher(in); err != nil || got != want {
			t.Errorf("ParseTeacher(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"powerlaw", "powerlaw:", "powerlaw:-1", "powerlaw:NaN", "powerlaw:inf", "powerlaw:x", "foo", "MP", "mp:1"} {
		if _, err := aimjob.ParseTeacher(in); err == nil || !job.IsInput(err) {
			t.Errorf("ParseTeacher(%q): %v, want bad input", in, err)
		}
	}
}

// TestTeacherSE: `aim se --teacher powerlaw:1.25 --D 60` writes, cell for cell, the engine's
// Bayes-optimal state evolution of that teacher at D = 60 (se.SolvePrior with the D eigenvalues
// of aim.Params.Prior, from the uninformed start), not the MP teacher's, with the teacher and
// D columns, no free entropy and a manifest without the MP thresholds; every channel takes the
// power-law prior (softmax and hardmax beside linear), and two --D give one curve each.
func TestTeacherSE(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "se.csv")
	code, _, stderr := runArgs(t, "se", "--quiet", "--channel", "linear", "--noise", "0.1", "--teacher", "powerlaw:1.25", "--D", "60", "--rho", "1",
		"--alpha", "0.1,0.3", "--out", out, "--plot", filepath.Join(dir, "se.png"))
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 2", len(rows)-1)
	}
	ch, _ := aim.NewLinear(0.1)
	for i, alpha := range []float64{0.1, 0.3} {
		p, err := se.SolvePrior(ch, powerLawPrior(1, 60), alpha, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		g, gs, err := se.GenError(ch, p.Q, p.MMSE, se.GenErrorOptions{Samples: 20000, Inner: 8, Seed: aimjob.PointSeed(1, 1, alpha), Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		checkCells(t, "se row "+strconv.Itoa(i+1), rows[i+1], col, map[string]string{"channel": "linear", "teacher": "powerlaw:1.25", "D": "60", "rho": "1",
			"alpha": table.FormatFloat(alpha), "mmse": table.FormatFloat(p.MMSE), "q": table.FormatFloat(p.Q), "qhat": table.FormatFloat(p.QHat),
			"iterations": strconv.Itoa(p.Iterations), "converged": "true", "gen_error": table.FormatFloat(g), "gen_error_stderr": table.FormatFloat(gs),
			"free_entropy": "", "coexist": "false", "mmse_err": "0"})
		mp, err := se.Solve(ch, 1, alpha, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if rows[i+1][col["mmse"]] == table.FormatFloat(mp.MMSE) {
			t.Errorf("alpha %g: the power law's mmse is the MP teacher's %g", alpha, mp.MMSE)
		}
	}
	man := readManifest(t, filepath.Join(dir, "se.json"))
	params := man["parameters"].(map[string]any)
	if _, ok := man["thresholds"]; ok || params["teacher"] != "powerlaw:1.25" || !slices.Equal(params["D"].([]any), []any{60.0}) {
		t.Errorf("manifest: thresholds %v, teacher %v, D %v; want no thresholds, powerlaw:1.25, [60]", man["thresholds"], params["teacher"], params["D"])
	}
	if b, err := os.ReadFile(filepath.Join(dir, "se.png")); err != nil || len(b) == 0 {
		t.Errorf("no figure: %v", err)
	}

	// Every channel: only the prior side changes. Two D: one curve each, per rho, per D.
	for _, tc := range []struct {
		ch   string
		spec channel.Spec
	}{
		{"softmax", channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}},
		{"hardmax", channel.Spec{Kind: channel.KindHardmax, T: 2}},
	} {
		out := filepath.Join(dir, tc.ch+".csv")
		code, _, stderr := runArgs(t, "se", "--quiet", "--channel", tc.ch, "--teacher", "powerlaw:1.25", "--D", "40,80", "--rho", "0.5",
			"--alpha", "0.2", "--gen-samples", "0", "--out", out, "--plot", "")
		if code != 0 {
			t.Fatalf("aim se --channel %s: status %d: %s", tc.ch, code, stderr)
		}
		rows := readCSV(t, out)
		col := csvColumns(rows[0])
		if len(rows) != 3 {
			t.Fatalf("aim se --channel %s: %d rows, want 2", tc.ch, len(rows)-1)
		}
		ch, err := aim.NewChannel(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		for i, D := range []int{40, 80} {
			p, err := se.SolvePrior(ch, powerLawPrior(0.5, D), 0.2, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			checkCells(t, "se --channel "+tc.ch, rows[i+1], col, map[string]string{"channel": tc.ch, "teacher": "powerlaw:1.25", "D": strconv.Itoa(D),
				"mmse": table.FormatFloat(p.MMSE), "iterations": strconv.Itoa(p.Iterations)})
		}
	}
}

// TestTeacherERM: `aim erm --teacher powerlaw:1.25 --D 60` writes, cell for cell, the engine's
// ERM state evolution with that teacher's law at D = 60 (erm.Problem.Prior), bo_error the
// Bayes-optimal state evolution of the same law (se.SolvePrior), the teacher and D columns,
// and no MP thresholds (manifest and figure); --spectrum writes the density of the learned
// spectrum over every piece of its support (outliers beside the bulk).
func TestTeacherERM(t *testing.T) {
	dir := t.TempDir()
	out, png := filepath.Join(dir, "erm.csv"), filepath.Join(dir, "erm.png")
	code, _, stderr := runArgs(t, "erm", "--quiet", "--teacher", "powerlaw:1.25", "--D", "60", "--rho", "1", "--noise", "0.1", "--weight-decay", "0.05",
		"--alpha", "0.1,0.3", "--spectrum", "0.3", "--out", out, "--plot", png)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 2", len(rows)-1)
	}
	ch, _ := aim.NewLinear(0.1)
	prior := powerLawPrior(1, 60)
	for i, alpha := range []float64{0.1, 0.3} {
		pt, err := erm.Solve(erm.Problem{Rho: 1, Alpha: alpha, Noise: 0.1, Lambda: 0.05, Penalty: erm.Nuclear, Prior: prior}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		bo, err := se.SolvePrior(ch, prior, alpha, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		checkCells(t, "erm row "+strconv.Itoa(i+1), rows[i+1], col, map[string]string{"teacher": "powerlaw:1.25", "D": "60", "rho": "1", "noise": "0.1",
			"weight_decay": "0.05", "penalty": "nuclear", "test_error": table.FormatFloat(pt.TestError), "gen_error": table.FormatFloat(pt.GenError),
			"train_error": table.FormatFloat(pt.TrainError), "tau": table.FormatFloat(pt.Tau), "rank": table.FormatFloat(pt.Rank),
			"tr_s": table.FormatFloat(pt.TrS), "delta_eff": table.FormatFloat(pt.DeltaEff), "iterations": strconv.Itoa(pt.Iterations),
			"bo_error": table.FormatFloat(bo.MMSE)})
		mp, err := erm.Solve(erm.Problem{Rho: 1, Alpha: alpha, Noise: 0.1, Lambda: 0.05}, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if rows[i+1][col["test_error"]] == table.FormatFloat(mp.TestError) {
			t.Errorf("alpha %g: the power law's test error is the MP teacher's %g", alpha, mp.TestError)
		}
	}
	man := readManifest(t, filepath.Join(dir, "erm.json"))
	if _, ok := man["thresholds"]; ok || man["parameters"].(map[string]any)["teacher"] != "powerlaw:1.25" {
		t.Errorf("manifest: thresholds %v, parameters %v; want no thresholds, teacher powerlaw:1.25", man["thresholds"], man["parameters"])
	}
	tab, err := job.ReadTable(out)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := job.DrawFigure([]*table.Table{tab}, plot.Options{}); err != nil || len(f.VLines) != 0 || !strings.Contains(f.Title, "powerlaw:1.25 at D = 60") {
		t.Errorf("figure: %v, title %q, %d threshold lines; want the teacher in the title and no MP thresholds", err, f.Title, len(f.VLines))
	}
	// The spectrum at alpha = 0.3: the engine's density on the grid over every piece.
	pt, err := erm.Solve(erm.Problem{Rho: 1, Alpha: 0.3, Noise: 0.1, Lambda: 0.05, Penalty: erm.Nuclear, Prior: prior}, se.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := pt.Spectrum()
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Edges()) < 4 {
		t.Fatalf("the learned spectrum has %d edges, want outliers beside the bulk", len(sp.Edges()))
	}
	xs := aimjob.SpectrumGrid(sp.Edges(), aimjob.SpectrumPoints)
	srows := readCSV(t, filepath.Join(dir, "erm_spectrum.csv"))
	scol := csvColumns(srows[0])
	if len(srows) != 1+len(xs) {
		t.Fatalf("spectrum: %d rows, want %d", len(srows)-1, len(xs))
	}
	for k, x := range xs {
		want := map[string]string{"teacher": "powerlaw:1.25", "D": "60", "x": table.FormatFloat(x), "atom": table.FormatFloat(sp.Atom)}
		if k%37 == 0 {
			checkCells(t, "spectrum row "+strconv.Itoa(k+1), srows[k+1], scol, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "erm_spectrum.png")); err != nil || len(b) == 0 {
		t.Errorf("no spectrum figure: %v", err)
	}
}

// TestTeacherAMP: `aim amp --teacher powerlaw:1.25` writes, row for row, the engine's GAMP-RIE
// on the data the engine draws with Params.Teacher set (the same seed), the teacher column,
// and in se_mmse the power law's state evolution at the runs' D = 30 (se.SolvePrior); with
// --weight-decay, GAMP for ERM beside the ERM state evolution of the same law (erm.Problem.Prior).
// The figure's line is that state evolution at D = 30.
func TestTeacherAMP(t *testing.T) {
	dir := t.TempDir()
	spec := channel.Spec{Kind: channel.KindLinear, T: 1}
	ch, _ := aim.NewLinear(0)
	dev := cpu.New(0)
	const D = 30
	prior := powerLawPrior(1, D)
	for _, lambda := range []float64{0, 0.1} {
		out, png := filepath.Join(dir, "amp.csv"), filepath.Join(dir, "amp.png")
		args := []string{"amp", "--quiet", "--device", "cpu", "--channel", "linear", "--teacher", "powerlaw:1.25", "--D", "30", "--rho", "1", "--alpha", "0.3",
			"--seeds", "2", "--out", out, "--plot", png}
		if lambda > 0 {
			// No figure: the dense ERM line of a power law takes seconds.
			args = withFlags(args, "--weight-decay", "0.1", "--max-iter", "60", "--plot", "")
		}
		code, _, stderr := runArgs(t, args...)
		if code != 0 {
			t.Fatalf("aim amp (lambda %g): status %d: %s", lambda, code, stderr)
		}
		rows := readCSV(t, out)
		col := csvColumns(rows[0])
		if len(rows) != 3 {
			t.Fatalf("%d rows, want 2", len(rows)-1)
		}
		var theory float64
		if lambda > 0 {
			pt, err := erm.Solve(erm.Problem{Rho: 1, Alpha: 0.3, Lambda: lambda, Prior: prior}, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			theory = pt.TestError
		} else {
			p, err := se.SolvePrior(ch, prior, 0.3, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			theory = p.MMSE
			if mp, _ := se.Solve(ch, 1, 0.3, se.DefaultOptions()); table.FormatFloat(mp.MMSE) == table.FormatFloat(theory) {
				t.Errorf("the power law's mmse is the MP teacher's %g", mp.MMSE)
			}
		}
		for _, r := range rows[1:] {
			seed, _ := strconv.ParseUint(r[col["seed"]], 10, 64)
			data, err := aim.Generate(dev, aim.Params{D: D, Alpha: 0.3, Rho: 1, Channel: spec, Seed: seed, Teacher: powerLaw})
			if err != nil {
				t.Fatal(err)
			}
			o := amp.ChannelOptions(spec)
			if lambda > 0 {
				o.MaxIter, o.ERM, o.WeightDecay = 60, true, lambda
			}
			res, err := amp.Run(dev, data, o)
			data.Free(dev)
			if err != nil {
				t.Fatal(err)
			}
			checkCells(t, "amp seed "+r[col["seed"]], r, col, map[string]string{"teacher": "powerlaw:1.25", "D": "30", "weight_decay": table.FormatFloat(lambda),
				"error": table.FormatFloat(res.Error), "iterations": strconv.Itoa(res.Iterations), "se_mmse": table.FormatFloat(theory)})
		}
		if p := csvManifest(t, out)["parameters"].(map[string]any); p["teacher"] != "powerlaw:1.25" {
			t.Errorf("manifest parameters %v: want teacher powerlaw:1.25", p)
		}
		// The figure aim plot draws: GAMP for ERM beside its se_mmse column; GAMP-RIE beside
		// the line of an aim se CSV of the same law at the runs' D = 30, none at D = 60.
		tab, err := job.ReadTable(out)
		if err != nil {
			t.Fatal(err)
		}
		tables := []*table.Table{tab}
		if lambda == 0 {
			sePath := filepath.Join(dir, "se.csv")
			if code, _, stderr := runArgs(t, "se", "--quiet", "--channel", "linear", "--teacher", "powerlaw:1.25", "--D", "60,30", "--rho", "1",
				"--alpha", "0.3", "--gen-samples", "0", "--out", sePath, "--plot", ""); code != 0 {
				t.Fatalf("aim se: status %d: %s", code, stderr)
			}
			seTab, err := job.ReadTable(sePath)
			if err != nil {
				t.Fatal(err)
			}
			tables = append(tables, seTab)
			// --se takes an aim se CSV of the runs' teacher with a curve at their D only.
			for _, bad := range []struct {
				args []string
				msg  string
			}{
				{withFlags(args, "--D", "40", "--se", sePath), "no curve at rho = 1 and D = 40"},
				{withFlags(args, "--teacher", "mp", "--se", sePath), "teacher powerlaw:1.25; the command has --teacher mp"},
			} {
				if code, _, stderr := runArgs(t, withFlags(bad.args, "--out", filepath.Join(dir, "bad", "x.csv"))...); code != 2 || !strings.Contains(stderr, bad.msg) {
					t.Errorf("aim %v: status %d, stderr %q; want 2 saying %q", bad.args, code, stderr, bad.msg)
				}
			}
		}
		f, err := job.DrawFigure(tables, plot.Options{})
		if err != nil || !strings.Contains(f.Title, "teacher powerlaw:1.25") {
			t.Fatalf("figure: %v, title %q", err, f.Title)
		}
		var line []float64
		for _, s := range f.Series {
			if !s.Points {
				line = append(line, s.Y...)
			}
		}
		if len(line) != 1 || table.FormatFloat(line[0]) != table.FormatFloat(theory) {
			t.Errorf("lambda %g: the figure's theory line %v, want the one point %g at D = 30", lambda, line, theory)
		}
		if b, err := os.ReadFile(png); lambda == 0 && (err != nil || len(b) == 0) {
			t.Errorf("no figure: %v", err)
		}
	}
}

// TestTeacherGD: `aim gd --teacher powerlaw:1.25` writes, row for row, the engine's GD on the
// data drawn with Params.Teacher set, the teacher column, and in se_mmse the power law's state
// evolution at the runs' D = 20.
func TestTeacherGD(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "gd.csv")
	code, _, stderr := runArgs(t, "gd", "--quiet", "--device", "cpu", "--channel", "linear", "--teacher", "powerlaw:1.25", "--D", "20", "--rho", "1",
		"--alpha", "0.3", "--seeds", "2", "--max-iter", "30", "--out", out, "--plot", filepath.Join(dir, "gd.png"))
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 2", len(rows)-1)
	}
	spec := channel.Spec{Kind: channel.KindLinear, T: 1}
	ch, _ := aim.NewLinear(0)
	p, err := se.SolvePrior(ch, powerLawPrior(1, 20), 0.3, se.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	dev := cpu.New(0)
	for _, r := range rows[1:] {
		seed, _ := strconv.ParseUint(r[col["seed"]], 10, 64)
		data, err := aim.Generate(dev, aim.Params{D: 20, Alpha: 0.3, Rho: 1, Channel: spec, Seed: seed, Teacher: powerLaw})
		if err != nil {
			t.Fatal(err)
		}
		o := gd.DefaultOptions()
		o.Steps = 30
		res, err := gd.Run(dev, data, o)
		data.Free(dev)
		if err != nil {
			t.Fatal(err)
		}
		checkCells(t, "gd seed "+r[col["seed"]], r, col, map[string]string{"teacher": "powerlaw:1.25", "D": "20", "error": table.FormatFloat(res.Error),
			"se_mmse": table.FormatFloat(p.MMSE), "finished": "true"})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "gd.png")); err != nil || len(b) == 0 {
		t.Errorf("no figure: %v", err)
	}
}

// TestTeacherBadInput: a teacher other than mp and powerlaw:G (G >= 0 finite), a power law
// without --D in se and erm, --D with the MP teacher, and the MP-only options with a power law
// are bad input: status 2, a message, nothing written.
func TestTeacherBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"amp", "--teacher", "powerlaw"}, "needs its exponent"},
		{[]string{"gd", "--teacher", "powerlaw:-1"}, "finite number >= 0"},
		{[]string{"erm", "--teacher", "foo"}, "want mp or powerlaw:GAMMA"},
		{[]string{"se", "--teacher", "powerlaw:inf", "--D", "50"}, "finite number >= 0"},
		{[]string{"se", "--teacher", "powerlaw:1"}, "needs --D"},
		{[]string{"erm", "--teacher", "powerlaw:1"}, "needs --D"},
		{[]string{"se", "--D", "50"}, "--D is the power-law teacher's dimension; the MP teacher's theory is D-independent"},
		{[]string{"erm", "--teacher", "mp", "--D", "50"}, "the MP teacher's theory is D-independent"},
		{[]string{"se", "--teacher", "powerlaw:1", "--D", "50", "--start", "both"}, "--start both"},
		{[]string{"se", "--teacher", "powerlaw:1", "--D", "50", "--rescaled", "--rho", "0.5"}, "MP teacher's"},
		{[]string{"se", "--teacher", "powerlaw:1", "--D", "50.5"}, "integer >= 2"},
		{[]string{"se", "--teacher", "powerlaw:1", "--D", "50,50"}, "given twice"},
		{[]string{"se", "--teacher", "powerlaw:1", "--D", "4", "--rho", "0.2"}, "R = floor(rho D) = 0"},
	} {
		res := filepath.Join(dir, "res")
		args := withFlags(append(tc.args, "--quiet"), "--out", filepath.Join(res, "x.csv"), "--plot", filepath.Join(res, "x.png"))
		code, stdout, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) || stdout != "" {
			t.Errorf("aim %v: status %d, stderr %q; want status 2 saying %q", tc.args, code, stderr, tc.msg)
		}
		if _, err := os.Stat(res); !os.IsNotExist(err) {
			t.Errorf("aim %v wrote %s", tc.args, res)
			os.RemoveAll(res)
		}
	}
	// --threshold writes nothing: a power law is refused before it prints.
	code, stdout, stderr := runArgs(t, "se", "--teacher", "powerlaw:1", "--D", "50", "--threshold")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "the thresholds are the MP teacher's") {
		t.Errorf("aim se --teacher powerlaw:1 --threshold: status %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestTeacherMPDefault: --teacher mp is the default, byte for byte: the same rows as without
// the flag, teacher mp and an empty D in se's and erm's rows.
func TestTeacherMPDefault(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"se", "erm"} {
		base := []string{cmd, "--quiet", "--rho", "0.5", "--alpha", "0.2,0.4", "--plot", ""}
		if cmd == "se" {
			base = append(base, "--channel", "linear", "--gen-samples", "0")
		}
		a, b := filepath.Join(dir, cmd+"-a.csv"), filepath.Join(dir, cmd+"-b.csv")
		if code, _, stderr := runArgs(t, append(base, "--out", a)...); code != 0 {
			t.Fatalf("aim %s: status %d: %s", cmd, code, stderr)
		}
		if code, _, stderr := runArgs(t, append(base, "--out", b, "--teacher", "mp")...); code != 0 {
			t.Fatalf("aim %s --teacher mp: status %d: %s", cmd, code, stderr)
		}
		ra, rb := readCSV(t, a), readCSV(t, b)
		if !slices.EqualFunc(ra, rb, slices.Equal[[]string]) {
			t.Errorf("aim %s: --teacher mp changes the rows", cmd)
		}
		col := csvColumns(ra[0])
		for _, r := range ra[1:] {
			if r[col["teacher"]] != "mp" || r[col["D"]] != "" {
				t.Errorf("aim %s row %v: teacher %q, D %q; want mp and empty", cmd, r, r[col["teacher"]], r[col["D"]])
			}
		}
		if man := csvManifest(t, a); man["parameters"].(map[string]any)["teacher"] != "mp" {
			t.Errorf("aim %s manifest parameters %v: want teacher mp", cmd, man["parameters"])
		}
	}
}
