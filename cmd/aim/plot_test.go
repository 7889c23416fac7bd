package main

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// runOK runs a command line and fails the test unless it exits 0.
func runOK(t *testing.T, args ...string) {
	t.Helper()
	if code, _, stderr := runArgs(t, args...); code != 0 {
		t.Fatalf("aim %s: status %d: %s", strings.Join(args, " "), code, stderr)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPlotRedrawsSEAndAMP runs `aim se` and `aim amp --se` at tiny sizes and checks that
// `aim plot` draws, from their CSVs (and the manifest beside the SE CSV), byte for byte the
// SVGs the run commands drew; and that the figures hold the values they should: the
// thresholds of the manifest, the SE lines of --se and the mean AMP error per alpha.
func TestPlotRedrawsSEAndAMP(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	runOK(t, "se", "--quiet", "--rho", "0.2,0.5", "--alpha", "0.01:0.25:12", "--gen-samples", "0",
		"--out", p("se.csv"), "--plot", p("se.svg"))
	runOK(t, "amp", "--quiet", "--device", "cpu", "--rho", "0.5", "--D", "30", "--alpha", "0.1,0.2", "--seeds", "2",
		"--max-iter", "10", "--se", p("se.csv"), "--out", p("amp.csv"), "--plot", p("amp.svg"))
	runOK(t, "plot", p("se.csv"), "--out", p("plot_se.svg"))
	runOK(t, "plot", "--out", p("plot_amp.svg"), p("se.csv"), p("amp.csv"))
	seSVG, ampSVG := readFile(t, p("se.svg")), readFile(t, p("amp.svg"))
	if got := readFile(t, p("plot_se.svg")); !bytes.Equal(got, seSVG) {
		t.Errorf("aim plot se.csv: %d bytes differ from aim se's own %d-byte SVG", len(got), len(seSVG))
	}
	if got := readFile(t, p("plot_amp.svg")); !bytes.Equal(got, ampSVG) {
		t.Errorf("aim plot se.csv amp.csv: %d bytes differ from aim amp's own %d-byte SVG", len(got), len(ampSVG))
	}
	// The thresholds come from the manifest (their lines are checked below): one legend entry
	// for them, and one per rho.
	for _, want := range []string{">PR<", ">ρ = 0.2<", "State evolution: softmax, T = 2, β = 1"} {
		if !bytes.Contains(seSVG, []byte(want)) {
			t.Errorf("SE figure lacks %q", want)
		}
	}
	for _, want := range []string{">ρ = 0.5<", "GAMP-RIE at D = 30 (points), state evolution (lines): softmax, T = 2"} {
		if !bytes.Contains(ampSVG, []byte(want)) {
			t.Errorf("AMP figure lacks %q", want)
		}
	}
	if bytes.Contains(ampSVG, []byte("ρ = 0.2")) {
		t.Error("AMP figure draws the SE line of a rho it has no runs at")
	}

	// Without the manifest the same CSV has no threshold lines.
	bare := filepath.Join(t.TempDir(), "se.csv")
	if err := os.WriteFile(bare, readFile(t, p("se.csv")), 0o644); err != nil {
		t.Fatal(err)
	}
	runOK(t, "plot", bare, "--out", p("bare.svg"))
	if b := readFile(t, p("bare.svg")); bytes.Contains(b, []byte(">PR<")) || bytes.Equal(b, seSVG) {
		t.Error("without the manifest the figure still has threshold lines")
	}

	// The figure's data: the AMP points are the mean error per alpha of the CSV's runs.
	tabs := make([]*table.Table, 2)
	for i, name := range []string{"se.csv", "amp.csv"} {
		var err error
		if tabs[i], err = job.ReadTable(p(name)); err != nil {
			t.Fatal(err)
		}
	}
	if tabs[0].Th == nil || math.Abs(tabs[0].Th.AlphaPR["0.5"]-0.1875) > 1e-6 || math.Abs(tabs[0].Th.AlphaPR["0.2"]-0.09) > 1e-6 {
		t.Errorf("manifest thresholds %+v", tabs[0].Th)
	}
	// alpha_PR = (1 - (1 - rho)^2) / 4 for softmax T = 2 (the counting formula): 0.09 at
	// rho = 0.2 and 0.1875 at rho = 0.5, as vertical lines of one label.
	fse, err := plot.Build(tabs[:1], plot.Options{})
	if err != nil || len(fse.VLines) != 2 || math.Abs(fse.VLines[0].X-0.09) > 1e-6 || math.Abs(fse.VLines[1].X-0.1875) > 1e-6 || fse.VLines[0].Label != fse.VLines[1].Label {
		t.Errorf("threshold lines %+v (%v)", fse.VLines, err)
	}
	f, err := plot.Build(tabs, plot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Series[0].Label != f.Series[1].Label {
		t.Errorf("the SE line %q and the AMP points %q of rho = 0.5 do not share a legend entry", f.Series[0].Label, f.Series[1].Label)
	}
	if len(f.Series) != 2 || !f.Series[1].Points || len(f.Series[1].X) != 2 {
		t.Fatalf("series %+v, want the SE line and two AMP points", f.Series)
	}
	amp := tabs[1]
	for k, a := range []float64{0.1, 0.2} {
		var sum float64
		for i := 0; i < amp.Rows(); i++ {
			if amp.V(i, "alpha") == a {
				sum += amp.V(i, "error")
			}
		}
		if f.Series[1].X[k] != a || math.Abs(f.Series[1].Y[k]-sum/2) > 1e-15 {
			t.Errorf("AMP point %d = (%g, %g), want (%g, %g)", k, f.Series[1].X[k], f.Series[1].Y[k], a, sum/2)
		}
	}
	for _, x := range f.Series[0].X {
		if x > 1.1*0.2*(1+1e-9) {
			t.Errorf("SE line reaches alpha = %g, beyond 1.1 x the largest AMP alpha", x)
		}
	}
	// --x alpha-bar puts the points at alpha (T^2 + T - 2) = 4 alpha.
	if f, err = plot.Build(tabs, plot.Options{X: "alpha-bar"}); err != nil || f.Series[1].X[1] != 0.8 {
		t.Errorf("--x alpha-bar: %v, %v", f, err)
	}
}

// TestPlotRedrawsSMI checks the same for `aim smi se` and `aim smi amp --se`.
func TestPlotRedrawsSMI(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	// One shift of 32 points: in 8 replicates of 4 points the layer-1 average at alpha = 0.6
	// is noisy enough that its decay to 0 takes some 140 iterations.
	runOK(t, "smi", "se", "--quiet", "--alpha", "0.6,0.3", "--samples", "32", "--replicates", "1", "--max-iter", "40", "--gen-samples", "50",
		"--out", p("se.csv"), "--plot", p("se.svg"))
	runOK(t, "smi", "amp", "--quiet", "--D", "60", "--alpha", "0.6,0.3", "--seeds", "2", "--max-iter", "3", "--gen-samples", "100",
		"--se", p("se.csv"), "--out", p("amp.csv"), "--plot", p("amp.svg"), "--trace", p("trace.csv"))
	runOK(t, "plot", p("se.csv"), "--out", p("plot_se.svg"))
	runOK(t, "plot", p("amp.csv"), p("se.csv"), "--out", p("plot_amp.svg"))
	for _, pair := range [][2]string{{"se.svg", "plot_se.svg"}, {"amp.svg", "plot_amp.svg"}} {
		if !bytes.Equal(readFile(t, p(pair[0])), readFile(t, p(pair[1]))) {
			t.Errorf("%s differs from the run command's %s", pair[1], pair[0])
		}
	}
	for _, want := range []string{">Q<", ">11<", ">22<", ">gen<", "SMI state evolution: L = 2, M = 2, c = 1, β = 1"} {
		if !bytes.Contains(readFile(t, p("se.svg")), []byte(want)) {
			t.Errorf("SMI SE figure lacks %q", want)
		}
	}
	for _, want := range []string{">layer 2<", "GAMP at D = 60: L = 2"} {
		if !bytes.Contains(readFile(t, p("amp.svg")), []byte(want)) {
			t.Errorf("SMI AMP figure lacks %q", want)
		}
	}

	// Runs at two D beside one SE: each D's points named by it, in colours of their own, and
	// the SE lines with entries of their own.
	runOK(t, "smi", "amp", "--quiet", "--D", "40", "--alpha", "0.6,0.3", "--seeds", "2", "--max-iter", "3", "--gen-samples", "100",
		"--out", p("amp40.csv"), "--plot", "")
	var tabs []*table.Table
	for _, name := range []string{"amp.csv", "amp40.csv", "se.csv"} {
		tab, err := job.ReadTable(p(name))
		if err != nil {
			t.Fatal(err)
		}
		tabs = append(tabs, tab)
	}
	f, err := plot.Build(tabs, plot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	groups := map[int]bool{}
	for _, s := range f.Series {
		labels = append(labels, s.Label)
		if s.Points {
			groups[s.Group] = true
		}
	}
	want := []string{"SE layer 1", "SE layer 2", "layer 1, D = 60", "layer 2, D = 60", "layer 1, D = 40", "layer 2, D = 40"}
	if !slices.Equal(labels, want) || len(groups) != 4 || f.Title != "GAMP: L = 2, M = 2, c = 1, β = 1" {
		t.Errorf("series %q in %d colours, title %q; want %q in 4, no D in the title", labels, len(groups), f.Title, want)
	}
	// The D = 40 layer-2 point at alpha = 0.3 is the mean of its two seeds.
	amp40 := tabs[1]
	var sum float64
	for i := 0; i < amp40.Rows(); i++ {
		if amp40.V(i, "alpha") == 0.3 {
			sum += amp40.V(i, "m22")
		}
	}
	if s := f.Series[5]; s.X[0] != 0.3 || math.Abs(s.Y[0]-sum/2) > 1e-15 {
		t.Errorf("D = 40 layer 2 point (%g, %g), want (0.3, %g)", s.X[0], s.Y[0], sum/2)
	}
}

// TestPlotBadInput checks that bad input exits with status 2, says what is wrong and writes
// nothing.
func TestPlotBadInput(t *testing.T) {
	src := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(src, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	header := strings.Join(aimjob.SESchema.Header(0), ",")
	good := write("good.csv", header+"\nsoftmax,2,0.5,1,0,mp,,0.1,0.4,0.2,0.5,0,0.4,1.2,,,10,true,,false\n")
	unknown := write("unknown.csv", "a,b,c\n1,2,3\n")
	malformed := write("bad.csv", header+"\nsoftmax,2,0.5,1,0,mp,,0.1,0.4,0.2,0.5,0,0.4,1.2,,,10,true,,false\nsoftmax,2,0.5,1,0,mp,,0.2,0.8,0.4,zero,0,0.3,1.5,,,10,true,,false\n")
	ragged := write("ragged.csv", header+"\nsoftmax,2,0.5\n")
	empty := write("empty.csv", "")
	smi := write("smi.csv", strings.Join(smijob.SMISESchema.Header(2), ",")+"\n2,2,1,1,1.2,0.8,0.99,,,,,,,,,,,4000,10,true,0,uninformed,false,-1.6,0.04\n")
	badManifest := write("man.csv", header+"\n")
	write("man.json", "{not json")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown kind", []string{unknown}, []string{unknown, "unrecognised CSV header", "expected the columns", "aim se: channel,T,rho", "aim smi amp"}},
		{"malformed number", []string{malformed}, []string{malformed, "line 3", "mmse", `"zero"`}},
		{"ragged row", []string{ragged}, []string{ragged, "line 2", "wrong number of fields"}},
		{"empty file", []string{empty}, []string{empty, "empty"}},
		{"missing file", []string{filepath.Join(src, "missing.csv")}, []string{"missing.csv", "no such file"}},
		{"unknown x", []string{"--x", "beta", good}, []string{"--x", "beta"}},
		{"unknown axes", []string{"--axes", "semilog", good}, []string{"--axes"}},
		{"unknown format", []string{good}, []string{"format"}}, // --out x.gif below
		{"no file", []string{}, []string{"no CSV"}},
		{"aim with smi", []string{good, smi}, []string{"cannot share a figure"}},
		{"x for smi", []string{"--x", "alpha-bar", smi}, []string{"--x alpha-bar"}},
		{"bad manifest", []string{badManifest}, []string{"manifest", "man.json"}},
		{"bogus flag", []string{"--bogus", good}, []string{"bogus"}},
		{"bad size", []string{"--size", "3.4x2.6", good}, []string{"-size", "with a unit"}},
		{"size too small", []string{"--size", "1x1cm", good}, []string{"-size", "between"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "fig.svg")
			if tc.name == "unknown format" {
				out = filepath.Join(dir, "fig.gif")
			}
			code, _, stderr := runArgs(t, append([]string{"plot", "--out", out}, tc.args...)...)
			if code != 2 {
				t.Errorf("status %d, want 2 (stderr %q)", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("bad input left files: %v", entries)
			}
		})
	}
	// The default output goes beside the first CSV.
	runOK(t, "plot", good)
	if _, err := os.Stat(filepath.Join(src, "good-plot.png")); err != nil {
		t.Errorf("default output: %v", err)
	}
}

// TestSEFlagBadInput checks `aim amp --se` and `aim gd --se`: the SE CSV must be an `aim se`
// CSV with the command's channel, T and beta and a curve at every rho (exit status 2, nothing
// written).
func TestSEFlagBadInput(t *testing.T) {
	src := t.TempDir()
	se := filepath.Join(src, "se.csv")
	os.WriteFile(se, []byte(strings.Join(aimjob.SESchema.Header(0), ",")+"\nsoftmax,2,0.5,1,0,mp,,0.1,0.4,0.2,0.5,0,0.4,1.2,,,10,true,,false\n"), 0o644)
	amp := filepath.Join(src, "amp.csv")
	os.WriteFile(amp, []byte(strings.Join(aimjob.AMPSchema.Header(0), ",")+"\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"amp", "--rho", "0.2", "--se", se}, "no curve at rho = 0.2"},
		{[]string{"amp", "--T", "3", "--se", se}, "T = 2"},
		{[]string{"amp", "--beta", "2", "--se", se}, "beta = 1"},
		{[]string{"amp", "--se", amp}, "want one written by aim se"},
		{[]string{"amp", "--se", filepath.Join(src, "missing.csv")}, "--se"},
		{[]string{"gd", "--rho", "0.2", "--se", se}, "no curve at rho = 0.2"},
		{[]string{"gd", "--amp", se}, "want one written by aim amp"},
	} {
		dir := t.TempDir()
		args := append([]string{tc.args[0], "--quiet", "--device", "cpu", "--D", "20", "--alpha", "0.1", "--out", filepath.Join(dir, "x.csv"),
			"--plot", filepath.Join(dir, "x.svg")}, tc.args[1:]...)
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: status %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v left files: %v", tc.args, entries)
		}
	}
}

// TestSizeFlag: every command that draws a figure takes --size; a bad one is bad input
// (status 2, nothing written) and a good one gives a canvas of that size.
func TestSizeFlag(t *testing.T) {
	for _, cmd := range [][]string{{"se"}, {"amp", "--device", "cpu"}, {"gd", "--device", "cpu"}, {"smi", "se"}, {"smi", "amp"},
		{"smi", "sgd"}, {"smi", "thresholds"}, {"bench"}, {"plot", "x.csv"}} {
		dir := t.TempDir()
		args := append(append([]string{}, cmd...), "--quiet", "--size", "3x2furlongs", "--out", filepath.Join(dir, "x.csv"))
		if cmd[0] == "plot" {
			args = []string{"plot", "--size", "3x2furlongs", "--out", filepath.Join(dir, "x.png"), filepath.Join(dir, "x.csv")}
		}
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, "size") {
			t.Errorf("%v: status %d, stderr %q; want 2 and the size's error", cmd, code, stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v: bad --size left files: %v", cmd, entries)
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "se.png")
	runOK(t, "se", "--quiet", "--rho", "0.5", "--alpha", "0.05:0.25:5", "--gen-samples", "0", "--size", "8.636x6.604cm",
		"--out", filepath.Join(dir, "se.csv"), "--plot", out)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 510 || cfg.Height != 390 {
		t.Errorf("--size 8.636x6.604cm (3.4 x 2.6 in) at 150 dpi: %dx%d (%v), want 510x390", cfg.Width, cfg.Height, err)
	}
}

// TestPlotHardmaxByT: `aim plot` of SE tables of one channel at T = 2 and 3 labels the curves
// by T (the legend text of the SVG), each in its own colour, and its title names no single T.
func TestPlotHardmaxByT(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, T := range []string{"2", "3"} {
		runOK(t, "se", "--quiet", "--channel", "hardmax", "--T", T, "--rho", "0.5", "--alpha", "0.01:1:8:log", "--gen-samples", "0",
			"--out", p("se_T"+T+".csv"), "--plot", "")
	}
	runOK(t, "plot", "--x", "alpha-bar", "--out", p("both.svg"), p("se_T2.csv"), p("se_T3.csv"))
	svg := string(readFile(t, p("both.svg")))
	for _, want := range []string{"T = 2", "T = 3", "State evolution: hardmax<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the figure lacks %q", want)
		}
	}
	if strings.Contains(svg, "(se_T2)") {
		t.Error("the curves are labelled by file name, not by T")
	}
	for _, c := range []string{"stroke:#0072B2", "stroke:#E69F00"} { // the palette's first two colours
		if !strings.Contains(svg, c) {
			t.Errorf("no curve drawn with %s", c)
		}
	}
}

// TestPlotTitles: the AMP figure's title names the SE lines only where some are drawn;
// --title replaces the automatic title, and --title "" removes it.
func TestPlotTitles(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	runOK(t, "amp", "--quiet", "--device", "cpu", "--rho", "0.5", "--D", "30", "--alpha", "0.1,0.2", "--seeds", "2",
		"--max-iter", "10", "--out", p("amp.csv"), "--plot", p("amp.svg"))
	runOK(t, "plot", "--out", p("auto.svg"), p("amp.csv"))
	runOK(t, "plot", "--title", "Figure 3", "--out", p("mine.svg"), p("amp.csv"))
	runOK(t, "plot", "--title", "", "--out", p("none.svg"), p("amp.csv"))
	auto := readFile(t, p("auto.svg"))
	if !bytes.Contains(auto, []byte("GAMP-RIE at D = 30: softmax, T = 2")) || bytes.Contains(auto, []byte("state evolution")) {
		t.Errorf("the title of AMP points alone names no SE lines: %q", titleOf(auto))
	}
	if mine := readFile(t, p("mine.svg")); !bytes.Contains(mine, []byte("Figure 3")) || bytes.Contains(mine, []byte("GAMP-RIE")) {
		t.Errorf("--title Figure 3: %q", titleOf(mine))
	}
	if none := readFile(t, p("none.svg")); bytes.Contains(none, []byte("GAMP-RIE")) || len(none) >= len(auto) {
		t.Errorf(`--title "": the figure keeps a title (%d bytes against %d)`, len(none), len(auto))
	}
}

// TestFigureTitleFlag: the commands that draw a figure take --title as aim plot does: a title
// of one's own in place of the automatic one, and "" for none.
func TestFigureTitleFlag(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	runOK(t, "amp", "--quiet", "--device", "cpu", "--rho", "0.5", "--D", "30", "--alpha", "0.1,0.2", "--seeds", "2",
		"--max-iter", "10", "--title", "Figure 4", "--out", p("amp.csv"), "--plot", p("amp.svg"))
	if mine := readFile(t, p("amp.svg")); !bytes.Contains(mine, []byte("Figure 4")) || bytes.Contains(mine, []byte("GAMP-RIE")) {
		t.Errorf("aim amp --title Figure 4: %q", titleOf(mine))
	}
	runOK(t, "thresholds", "--quiet", "--T", "2,3", "--out", p("auto.csv"), "--plot", p("auto.svg"))
	runOK(t, "thresholds", "--quiet", "--T", "2,3", "--title", "", "--out", p("none.csv"), "--plot", p("none.svg"))
	auto, none := readFile(t, p("auto.svg")), readFile(t, p("none.svg"))
	if len(none) >= len(auto) {
		t.Errorf(`aim thresholds --title "": the figure keeps a title (%d bytes against %d)`, len(none), len(auto))
	}
	if a, n := readFile(t, p("auto.csv")), readFile(t, p("none.csv")); !bytes.Equal(a, n) {
		t.Error(`aim thresholds --title "" changed the CSV`)
	}
}

// titleOf returns the SVG's text elements that look like a title (for messages).
func titleOf(svg []byte) string {
	var out []string
	for _, part := range bytes.Split(svg, []byte("<text")) {
		if i := bytes.IndexByte(part, '>'); i >= 0 {
			if j := bytes.Index(part[i:], []byte("</text>")); j > 0 && bytes.Contains(part[i+1:i+j], []byte(":")) {
				out = append(out, string(part[i+1:i+j]))
			}
		}
	}
	return strings.Join(out, " | ")
}

// TestPlotRunSets: runs that differ in D, precision or model are drawn as separate points, each
// named by what varies, and each beside the theory of its own model; seeds run apart in two
// files at the same D and precision are one set, averaged together.
func TestPlotRunSets(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	amp := func(out string, extra ...string) {
		args := append([]string{"amp", "--quiet", "--device", "cpu", "--rho", "0.5", "--alpha", "0.1,0.2", "--seeds", "2",
			"--max-iter", "10", "--out", p(out), "--plot", ""}, extra...)
		runOK(t, args...)
	}
	amp("d20.csv", "--D", "20")
	amp("d30.csv", "--D", "30")
	amp("d30_seed3.csv", "--D", "30", "--seed", "3")
	amp("d30_fp32.csv", "--D", "30", "--precision", "fp32")
	for _, T := range []string{"2", "3"} {
		runOK(t, "se", "--quiet", "--T", T, "--rho", "0.5", "--alpha", "0.05,0.1,0.15,0.2", "--gen-samples", "0",
			"--out", p("se_T"+T+".csv"), "--plot", "")
	}
	read := func(names ...string) []*table.Table {
		var out []*table.Table
		for _, name := range names {
			tab, err := job.ReadTable(p(name))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tab)
		}
		return out
	}
	// The T = 3 theory comes first: the T = 2 runs must still find their own.
	tabs := read("se_T3.csv", "se_T2.csv", "d20.csv", "d30.csv", "d30_seed3.csv", "d30_fp32.csv")
	f, err := plot.Build(tabs, plot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	groups := map[int]bool{}
	var line, d30 *figure.Series
	for k := range f.Series {
		s := &f.Series[k]
		if !s.Points {
			if line != nil {
				t.Errorf("a second line %q beside %q", s.Label, line.Label)
			}
			line = s
			continue
		}
		labels = append(labels, s.Label)
		groups[s.Group] = true
		if s.Label == "ρ = 0.5, D = 30, precision fp64" {
			d30 = s
		}
	}
	want := []string{"ρ = 0.5, D = 20, precision fp64", "ρ = 0.5, D = 30, precision fp64", "ρ = 0.5, D = 30, precision fp32"}
	if !slices.Equal(labels, want) || len(groups) != 3 {
		t.Fatalf("points %q in %d colours, want %q in 3", labels, len(groups), want)
	}
	// The D = 30 fp64 point at alpha = 0.1 is the mean over the four seeds of the two files.
	var sum float64
	var n int
	for _, tab := range tabs[3:5] {
		for i := 0; i < tab.Rows(); i++ {
			if tab.V(i, "alpha") == 0.1 {
				sum += tab.V(i, "error")
				n++
			}
		}
	}
	if n != 4 || d30.X[0] != 0.1 || math.Abs(d30.Y[0]-sum/4) > 1e-15 {
		t.Errorf("D = 30 point (%g, %g) from %d runs, want (0.1, %g) from 4", d30.X[0], d30.Y[0], n, sum/4)
	}
	// One line, shared by the three sets, with an entry of its own: the T = 2 state evolution.
	se2 := tabs[1]
	if line == nil || line.Label != "SE ρ = 0.5" {
		t.Fatalf("line %+v, want the one SE line of rho = 0.5", line)
	}
	for k, x := range line.X {
		for i := 0; i < se2.Rows(); i++ {
			if se2.V(i, "alpha") == x && line.Y[k] != se2.V(i, "mmse") {
				t.Errorf("SE line at alpha = %g: %g, want the T = 2 mmse %g", x, line.Y[k], se2.V(i, "mmse"))
			}
		}
	}
	if strings.Contains(f.Title, "at D =") || !strings.HasSuffix(f.Title, ": softmax, T = 2") {
		t.Errorf("title %q: want no D (it varies) and the shared model", f.Title)
	}

	// Nothing varies but the seeds: one set, named by rho alone, the D and precision in the title.
	if f, err = plot.Build(read("d30_fp32.csv"), plot.Options{}); err != nil {
		t.Fatal(err)
	}
	if len(f.Series) != 1 || f.Series[0].Label != "ρ = 0.5" || f.Title != "GAMP-RIE at D = 30: softmax, T = 2, precision fp32" {
		t.Errorf("one file: series %d, label %q, title %q", len(f.Series), f.Series[0].Label, f.Title)
	}

	// Gradient descent at two D beside the AMP runs at one: two sets of students, one AMP set.
	for _, D := range []string{"20", "30"} {
		runOK(t, "gd", "--quiet", "--device", "cpu", "--rho", "0.5", "--alpha", "0.1,0.2", "--seeds", "2", "--D", D,
			"--max-iter", "5", "--out", p("gd"+D+".csv"), "--plot", "")
	}
	if f, err = plot.Build(read("gd20.csv", "gd30.csv", "d30.csv"), plot.Options{}); err != nil {
		t.Fatal(err)
	}
	labels = labels[:0]
	for _, s := range f.Series {
		labels = append(labels, s.Label)
	}
	want = []string{"GD single ρ = 0.5, D = 20", "AMP ρ = 0.5", "GD single ρ = 0.5, D = 30"}
	if !slices.Equal(labels, want) || f.Series[0].Group == f.Series[2].Group {
		t.Errorf("GD figure series %q (groups %d, %d), want %q in two colours", labels, f.Series[0].Group, f.Series[2].Group, want)
	}

	// Gradient descent with weight decay at two D beside the ERM theory: the first D in the
	// colour of its line, the second in one of its own.
	runOK(t, "erm", "--quiet", "--rho", "0.5", "--noise", "0.25", "--weight-decay", "0.1", "--alpha", "0.2,0.4",
		"--out", p("erm.csv"), "--plot", "")
	for _, D := range []string{"20", "30"} {
		runOK(t, "gd", "--quiet", "--device", "cpu", "--channel", "linear", "--rho", "0.5", "--noise", "0.25", "--weight-decay", "0.1",
			"--D", D, "--alpha", "0.2,0.4", "--seeds", "2", "--lr", "0.05", "--max-iter", "20", "--out", p("gdl"+D+".csv"), "--plot", "")
	}
	if f, err = plot.Build(read("erm.csv", "gdl20.csv", "gdl30.csv"), plot.Options{}); err != nil {
		t.Fatal(err)
	}
	labels = labels[:0]
	for _, s := range f.Series {
		labels = append(labels, s.Label)
	}
	want = []string{"ERM λ = 0.1", "Bayes-optimal", "GD λ = 0.1, D = 20", "GD λ = 0.1, D = 30"}
	if !slices.Equal(labels, want) || f.Series[2].Group != f.Series[0].Group || f.Series[3].Group == f.Series[0].Group ||
		strings.Contains(f.Title, "D =") {
		t.Errorf("ERM figure series %q (groups %d, %d, %d), title %q; want %q, the D = 20 points in the line's colour, D = 30 in another, no D in the title",
			labels, f.Series[0].Group, f.Series[2].Group, f.Series[3].Group, f.Title, want)
	}
}
