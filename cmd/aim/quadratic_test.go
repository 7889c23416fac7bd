package main

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/aim/se"
)

// TestLinearSE: `aim se --channel linear` takes T = 1 by default and writes the state
// evolution of aim.NewLinear (docs/theory/aim.md 2.8) cell for cell, with alpha_bar = 2 alpha,
// gen_error = 2 mmse exactly (stderr 0) and the noise in its column; --threshold prints
// alpha_PR = rho - rho^2/2.
func TestLinearSE(t *testing.T) {
	dir := t.TempDir()
	for _, delta := range []float64{0, 0.25} {
		out := filepath.Join(dir, "se.csv")
		d := strconv.FormatFloat(delta, 'g', -1, 64)
		code, _, stderr := runArgs(t, "se", "--quiet", "--channel", "linear", "--noise", d, "--rho", "0.5,1.5", "--alpha", "0.1,0.3,0.45",
			"--out", out, "--plot", "")
		if code != 0 {
			t.Fatalf("status %d: %s", code, stderr)
		}
		rows := readCSV(t, out)
		col := csvColumns(rows[0])
		ch, err := aim.NewLinear(delta)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 7 {
			t.Fatalf("%d rows, want 6", len(rows)-1)
		}
		for _, r := range rows[1:] {
			rho, _ := strconv.ParseFloat(r[col["rho"]], 64)
			alpha, _ := strconv.ParseFloat(r[col["alpha"]], 64)
			p, err := se.Solve(ch, rho, alpha, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"channel": "linear", "T": "1", "beta": "", "noise": table.FormatFloat(delta),
				"alpha_bar": table.FormatFloat(2 * alpha), "mmse": table.FormatFloat(p.MMSE),
				"gen_error": table.FormatFloat(2 * p.MMSE), "gen_error_stderr": "0"}
			for k, v := range want {
				if r[col[k]] != v {
					t.Errorf("Delta %g, rho %g, alpha %g: %s = %q, want %q", delta, rho, alpha, k, r[col[k]], v)
				}
			}
		}
	}
	code, stdout, stderr := runArgs(t, "se", "--channel", "linear", "--rho", "0.5", "--threshold")
	if code != 0 || !strings.Contains(stdout, "alpha_PR = 0.375 ") {
		t.Errorf("--threshold: status %d, stdout %q, stderr %q; want alpha_PR = 0.375", code, stdout, stderr)
	}
}

// TestLinearBadInput: the linear channel is one token; the hardmax's options are refused.
func TestLinearBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"se", "--channel", "linear", "--T", "2"}, "need --T 1"},
		{[]string{"amp", "--channel", "linear", "--T", "3"}, "need --T 1"},
		{[]string{"gd", "--channel", "linear", "--T", "2"}, "need --T 1"},
		{[]string{"se", "--channel", "linear", "--paper-compat"}, "hardmax channel only"},
		{[]string{"gd", "--channel", "linear", "--noise", "-1"}, "finite and >= 0"},
		{[]string{"bench", "--channel", "linear", "--T", "2"}, "need --T 1"},
		{[]string{"bench", "--channel", "hardmax"}, "softmax or linear"},
		{[]string{"gd", "--uncentred"}, "linear channel"},
	} {
		args := withFlags(append(tc.args, "--quiet"), "--out", filepath.Join(dir, "res", "x.csv"), "--plot", "")
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("aim %v: status %d, stderr %q; want status 2 mentioning %q", tc.args, code, stderr, tc.msg)
		}
	}
}

// TestLinearSimulations: `aim amp` and `aim gd --channel linear --noise 0.25` write, row for
// row, the engine's GAMP-RIE and GD on the data of the same seed (T = 1 by default), with the
// noise column and the SE of the noisy channel, and `aim gd --uncentred` the engine's
// Uncentred GD; streamed tokens give the same rows.
func TestLinearSimulations(t *testing.T) {
	dir := t.TempDir()
	const delta = 0.25
	spec := channel.Spec{Kind: channel.KindLinear, T: 1, Noise: delta}
	ch, _ := aim.NewLinear(delta)
	dev := cpu.New(0)
	for _, cmd := range []string{"amp", "gd", "gd-uncentred"} {
		out := filepath.Join(dir, cmd+".csv")
		args := []string{strings.TrimSuffix(cmd, "-uncentred"), "--quiet", "--device", "cpu", "--channel", "linear", "--noise", "0.25", "--D", "30", "--alpha", "0.2,0.4",
			"--seeds", "2", "--max-iter", "40", "--out", out, "--plot", ""}
		if cmd != "amp" {
			args = append(args, "--restarts", "2")
		}
		if cmd == "gd-uncentred" {
			args = append(args, "--uncentred")
		}
		code, _, stderr := runArgs(t, args...)
		if code != 0 {
			t.Fatalf("aim %s: status %d: %s", cmd, code, stderr)
		}
		rows := readCSV(t, out)
		col := csvColumns(rows[0])
		if len(rows) != 5 {
			t.Fatalf("aim %s: %d rows, want 4", cmd, len(rows)-1)
		}
		streamed := filepath.Join(dir, cmd+"-streamed.csv")
		if code, _, stderr := runArgs(t, withFlags(args, "--tokens", "streamed", "--chunk", "70", "--out", streamed)...); code != 0 {
			t.Fatalf("aim %s --tokens streamed: status %d: %s", cmd, code, stderr)
		}
		for i, r := range readCSV(t, streamed)[1:] {
			// The chunks sum the back-projection in another order: equal to rounding.
			a, _ := strconv.ParseFloat(r[col["error"]], 64)
			b, _ := strconv.ParseFloat(rows[i+1][col["error"]], 64)
			if math.Abs(a-b) > 1e-9*b {
				t.Errorf("aim %s row %d: streamed error %s, stored %s", cmd, i+1, r[col["error"]], rows[i+1][col["error"]])
			}
		}
		for _, r := range rows[1:] {
			alpha, _ := strconv.ParseFloat(r[col["alpha"]], 64)
			seed, _ := strconv.ParseUint(r[col["seed"]], 10, 64)
			data, err := aim.Generate(dev, aim.Params{D: 30, Alpha: alpha, Rho: 0.5, Channel: spec, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			var want float64
			if cmd == "amp" {
				o := amp.ChannelOptions(spec)
				o.MaxIter = 40
				res, err := amp.Run(dev, data, o)
				if err != nil {
					t.Fatal(err)
				}
				want = res.Error
			} else {
				o := gd.DefaultOptions()
				o.Steps, o.Restarts, o.Uncentred = 40, 2, cmd == "gd-uncentred"
				res, err := gd.Run(dev, data, o)
				if err != nil {
					t.Fatal(err)
				}
				want = res.Error
			}
			data.Free(dev)
			p, err := se.Solve(ch, 0.5, alpha, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if r[col["error"]] != table.FormatFloat(want) || r[col["T"]] != "1" || r[col["noise"]] != "0.25" || r[col["se_mmse"]] != table.FormatFloat(p.MMSE) {
				t.Errorf("aim %s row %v: want error %s, T 1, noise 0.25, se_mmse %s", cmd, r, table.FormatFloat(want), table.FormatFloat(p.MMSE))
			}
			if e, _ := strconv.ParseFloat(r[col["error"]], 64); !(e > 0) || math.IsInf(e, 0) {
				t.Errorf("aim %s row %v: error %v", cmd, r, e)
			}
		}
	}
}

// TestLinearGDWeightDecay: `aim gd --channel linear --weight-decay 0.05 --spectrum` writes, row
// for row, the engine's GD with WeightDecay 0.05 on the data of the same seed: the
// weight_decay column holds 0.05, penalty the first student's lambda Tr S (Result.Penalty[0]),
// final_loss the students' mean data loss and error the averaged error; the spectrum CSV holds
// the D eigenvalues of each run's first student (Result.Eigenvalues) in order (direct false), with its
// manifest, listed in the results' manifest. --weight-decay -1 is bad input (status 2) and
// writes nothing.
func TestLinearGDWeightDecay(t *testing.T) {
	dir := t.TempDir()
	out, spec := filepath.Join(dir, "gd.csv"), filepath.Join(dir, "spectrum.csv")
	const D, lambda = 20, 0.05
	args := []string{"gd", "--quiet", "--device", "cpu", "--channel", "linear", "--weight-decay", "0.05", "--D", "20", "--alpha", "0.2,0.4",
		"--seeds", "2", "--restarts", "2", "--max-iter", "60", "--out", out, "--plot", "", "--spectrum", spec}
	code, _, stderr := runArgs(t, args...)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	col := csvColumns(rows[0])
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 4", len(rows)-1)
	}
	eig := readCSV(t, spec)
	if strings.Join(eig[0], ",") != "rho,alpha,seed,weight_decay,direct,index,eigenvalue" || len(eig) != 1+4*D {
		t.Fatalf("spectrum CSV: header %v, %d rows; want %d", eig[0], len(eig)-1, 4*D)
	}
	dev := cpu.New(0)
	for i, r := range rows[1:] {
		alpha, _ := strconv.ParseFloat(r[col["alpha"]], 64)
		seed, _ := strconv.ParseUint(r[col["seed"]], 10, 64)
		data, err := aim.Generate(dev, aim.Params{D: D, Alpha: alpha, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindLinear, T: 1}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		o := gd.DefaultOptions()
		o.Steps, o.Restarts, o.WeightDecay, o.Spectrum = 60, 2, lambda, true
		res, err := gd.Run(dev, data, o)
		data.Free(dev)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"weight_decay": "0.05", "penalty": table.FormatFloat(res.Penalty[0]),
			"final_loss": table.FormatFloat(mean(res.FinalLoss)), "error": table.FormatFloat(res.Error)}
		for k, v := range want {
			if r[col[k]] != v {
				t.Errorf("alpha %g seed %d: %s = %q, engine %q", alpha, seed, k, r[col[k]], v)
			}
		}
		if p, _ := strconv.ParseFloat(r[col["penalty"]], 64); !(p > 0) {
			t.Errorf("alpha %g seed %d: penalty %q, want > 0", alpha, seed, r[col["penalty"]])
		}
		for j, l := range res.Eigenvalues {
			e := eig[1+i*D+j]
			if e[0] != "0.5" || e[1] != r[col["alpha"]] || e[2] != r[col["seed"]] || e[3] != "0.05" || e[4] != "false" || e[5] != strconv.Itoa(j) || e[6] != table.FormatFloat(l) {
				t.Errorf("spectrum row %v, want rho 0.5, alpha %s, seed %s, weight_decay 0.05, direct false, index %d, eigenvalue %s", e, r[col["alpha"]], r[col["seed"]], j, table.FormatFloat(l))
			}
		}
	}
	man, err := os.ReadFile(strings.TrimSuffix(out, ".csv") + ".json")
	if err != nil || !strings.Contains(string(man), `"weight_decay": 0.05`) || !strings.Contains(string(man), spec) {
		t.Errorf("manifest %s (%v): want weight_decay 0.05 and the spectrum among the outputs", man, err)
	}
	if _, err := os.Stat(strings.TrimSuffix(spec, ".csv") + ".json"); err != nil {
		t.Errorf("no manifest beside the spectrum: %v", err)
	}

	bad := filepath.Join(dir, "bad")
	code, _, stderr = runArgs(t, withFlags(args, "--weight-decay", "-1", "--out", filepath.Join(bad, "gd.csv"), "--spectrum", filepath.Join(bad, "spectrum.csv"))...)
	if code != 2 || !strings.Contains(stderr, "--weight-decay -1") {
		t.Errorf("--weight-decay -1: status %d, stderr %q; want status 2", code, stderr)
	}
	if entries, _ := os.ReadDir(bad); len(entries) != 0 {
		t.Errorf("--weight-decay -1 wrote %v", entries)
	}
}
