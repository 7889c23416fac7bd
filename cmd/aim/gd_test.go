package main

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/gd"
)

func TestGDBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "res", "gd.csv")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--channel", "hardmax"}, "no useful gradient"},
		{[]string{"--optimizer", "sgd"}, "optimizer"},
		{[]string{"--restarts", "0"}, "restarts"},
		{[]string{"--max-iter", "0"}, "max-iter"},
		{[]string{"--lr", "0"}, "lr"},
		{[]string{"--R", "-1"}, "R"},
		{[]string{"--alpha", "0"}, "alpha"},
		{[]string{"--D", "10", "--alpha", "0.001"}, "N = floor"},
		{[]string{"--amp", filepath.Join(dir, "missing.csv")}, "--amp"},
		{[]string{"--device", "cuda"}, "device cuda"},
		{[]string{"--weight-decay", "-1"}, "--weight-decay -1: need a finite lambda >= 0"},
		{[]string{"--weight-decay", "NaN"}, "--weight-decay NaN"},
		{[]string{"--weight-decay", "+Inf"}, "--weight-decay +Inf"},
		{[]string{"--spectrum", filepath.Join(dir, "res", "spectrum.txt")}, "must end in .csv"},
		{[]string{"--spectrum", out}, "the same file as --out"},
		{[]string{"--direct", "--restarts", "2"}, "--direct with --restarts 2"},
		{[]string{"--direct", "--R", "4"}, "--direct with --R 4"},
		{[]string{"--direct", "--channel", "hardmax"}, "no useful gradient"},
	} {
		args := withFlags([]string{"gd", "--quiet", "--out", out, "--plot", filepath.Join(dir, "res", "gd.png")}, tc.args...)
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("aim gd %v: status %d, stderr %q; want status 2 mentioning %q", tc.args, code, stderr, tc.msg)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "res")); len(entries) != 0 {
		t.Errorf("bad input left files: %v", entries)
	}
}

// TestGDCSV runs a small sweep and checks each row against the engine run with the same seed.
func TestGDCSV(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "gd.csv")
	code, _, stderr := runArgs(t, "gd", "--quiet", "--device", "cpu", "--D", "20", "--alpha", "0.1,0.3", "--seeds", "2",
		"--restarts", "2", "--max-iter", "30", "--out", out, "--plot", filepath.Join(dir, "gd.png"), "--trace", filepath.Join(dir, "tr.csv"))
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	if strings.Join(rows[0], ",") != strings.Join(aimjob.GDSchema.Header(0), ",") || len(rows) != 5 {
		t.Fatalf("CSV header %v with %d rows", rows[0], len(rows))
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	dev := cpu.New(0)
	o := gd.DefaultOptions()
	o.Steps, o.Restarts = 30, 2
	for _, r := range rows[1:] {
		alpha, _ := strconv.ParseFloat(r[col["alpha"]], 64)
		seed, _ := strconv.ParseUint(r[col["seed"]], 10, 64)
		data, err := aim.Generate(dev, aim.Params{D: 20, Alpha: alpha, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		res, err := gd.Run(dev, data, o)
		if err != nil {
			t.Fatal(err)
		}
		if r[col["weight_decay"]] != "0" || r[col["penalty"]] != "0" {
			t.Errorf("row %v: weight_decay %q, penalty %q without --weight-decay, want 0 and 0", r, r[col["weight_decay"]], r[col["penalty"]])
		}
		if r[col["error"]] != table.FormatFloat(res.Error) || r[col["error_single"]] != table.FormatFloat(mean(res.SingleErrors)) {
			t.Errorf("row %v: error %s / %s, engine %s / %s", r, r[col["error"]], r[col["error_single"]], table.FormatFloat(res.Error), table.FormatFloat(mean(res.SingleErrors)))
		}
	}
	if tr := readCSV(t, filepath.Join(dir, "tr.csv")); len(tr) != 1+4*4 { // steps 0, 10, 20, 30 per run
		t.Errorf("trace has %d rows, want %d", len(tr), 1+4*4)
	}
	if _, err := os.Stat(filepath.Join(dir, "tr.png")); err != nil {
		t.Errorf("no trace plot: %v", err)
	}
}

// mean is the mean of xs (NaN for none), as the CSV's error_single averages the students.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
