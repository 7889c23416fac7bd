package main

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/engine/aim"
)

// TestThresholds: `aim thresholds --T 2,3` writes alpha-bar_c of hardmax at T = 2 equal to the
// closed form 3/(2 H(0)) (0.403410629...) to 1e-9, at T = 3 within 4 combined errors of the
// shipped T = 3 table's F(0) (an independent integrator), and softmax's 1/K beside them to
// 1e-12; the figure draws both, and `aim plot` redraws it to the same bytes. T = 7, T = 2.5, a
// range with non-integer points and an unknown channel are bad input with nothing written.
func TestThresholds(t *testing.T) {
	dir := t.TempDir()
	out, fig := filepath.Join(dir, "thr.csv"), filepath.Join(dir, "thr.svg")
	runOK(t, "thresholds", "--quiet", "--T", "2,3", "--out", out, "--plot", fig)
	rows := readCSV(t, out)
	if len(rows) != 3 || strings.Join(rows[0], ",") != "channel,T,alpha_bar_c,alpha_bar_c_err,alpha_bar_c_softmax" {
		t.Fatalf("CSV %v", rows)
	}
	val := func(i, j int) float64 {
		v, err := strconv.ParseFloat(rows[i][j], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	h2, _ := aim.NewHardmax(2, false)
	want := 3 / (2 * h2.FisherH(0))
	if got := val(1, 2); math.Abs(got-want) > 1e-9 || val(1, 3) != 0 {
		t.Errorf("T = 2: %v +- %v, closed form %.12g", got, val(1, 3), want)
	}
	ch, _ := aim.NewHardmaxTChannel(3)
	F, _ := ch.FisherSum(0, 1)
	tab, terr := 1/(2*F), ch.FisherSumErr(0, 1)/(2*F*F)
	if got, e := val(2, 2), val(2, 3); math.Abs(got-tab) > 4*math.Hypot(e, terr) || !(e > 0 && e < 1e-4) {
		t.Errorf("T = 3: %v +- %v, the table's %v +- %v", got, e, tab, terr)
	}
	for i, K := range []float64{4, 10} {
		if got := val(i+1, 4); math.Abs(got-1/K) > 1e-12 {
			t.Errorf("softmax T = %d: %v, want 1/%g", i+2, got, K)
		}
	}
	svg := string(readFile(t, fig))
	for _, s := range []string{">hardmax<", "softmax 1/K"} {
		if !strings.Contains(svg, s) {
			t.Errorf("the figure lacks %q", s)
		}
	}
	again := filepath.Join(dir, "again.svg")
	runOK(t, "plot", out, "--out", again)
	if string(readFile(t, again)) != svg {
		t.Error("aim plot thr.csv draws another figure than aim thresholds")
	}
	for _, args := range [][]string{{"--T", "7"}, {"--T", "2.5"}, {"--T", "2:6:4"}, {"--channel", "relu"}} {
		d := t.TempDir()
		code, _, stderr := runAim(withFlags([]string{"thresholds", "--quiet", "--out", filepath.Join(d, "x.csv")}, args...)...)
		entries, _ := os.ReadDir(d)
		if code != 2 || len(entries) != 0 {
			t.Errorf("%v: status %d, %d files: %s", args, code, len(entries), stderr)
		}
	}
}
