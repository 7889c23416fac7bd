package main

import (
	"encoding/csv"
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
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/se"
)

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestAMPBadInput checks that bad input, an unavailable device and a run too large for memory
// exit with status 2, say why, and write nothing.
func TestAMPBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "res", "amp.csv")
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--D", "1"}, "D >= 2"},
		{[]string{"--seeds", "0"}, "seeds"},
		{[]string{"--alpha", "0"}, "alpha"},
		{[]string{"--alpha", ""}, "empty"},
		{[]string{"--D", "10", "--alpha", "0.001"}, "N = floor(alpha D^2) = 0"},
		{[]string{"--D", "10", "--rho", "0.05"}, "R = floor(rho D) = 0"},
		{[]string{"--rho", "0"}, "rho"},
		{[]string{"--beta", "0"}, "beta"},
		{[]string{"--T", "1"}, "T >= 2"},
		{[]string{"--channel", "hardmax", "--T", "7"}, "--T 7, the largest supported is 6"},
		{[]string{"--channel", "hardmax", "--T", "3", "--paper-compat"}, "T = 2 only"},
		{[]string{"--device", "cuda"}, "device cuda"},
		{[]string{"--noise", "-1"}, "--noise -1"},
		{[]string{"--noise", "NaN"}, "must be finite"},
		{[]string{"--noise", "0.01", "--T", "7"}, "2 <= T <= 6"},
		{[]string{"--noise", "0.01", "--channel", "hardmax"}, "softmax and linear channels only"},
		{[]string{"--noise", "0.01", "--device", "cuda"}, "no CUDA kernel"},
		{[]string{"--noise", "0.01", "--device", "cuda:0,1"}, "no CUDA kernel"},
		{[]string{"--device", "tpu"}, "unknown device"},
		{[]string{"--damping", "1.5"}, "damping"},
		{[]string{"--tol", "0"}, "tol"},
		{[]string{"--trace", filepath.Join(dir, "t.txt")}, "trace"},
		{[]string{"--D", "200000", "--alpha", "1"}, "available"},
	}
	for _, tc := range tests {
		args := withFlags([]string{"amp", "--quiet", "--out", out, "--plot", filepath.Join(dir, "res", "amp.png")}, tc.args...)
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("aim amp %v: status %d, stderr %q; want status 2 mentioning %q", tc.args, code, stderr, tc.msg)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "res")); len(entries) != 0 {
		t.Errorf("bad input left files: %v", entries)
	}
}

// TestAMPHardmaxT3CSV runs `aim amp --channel hardmax --T 3` (GAMP-RIE with the polytope
// channel) at D = 16, alpha = 1: it exits 0 with a row of T = 3 whose error is finite and
// below the prior's 1 after 8 iterations (measured 0.93: the error peaks before it falls), and
// the T = 3 state evolution's mmse in its SE column.
func TestAMPHardmaxT3CSV(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 s")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "amp.csv")
	code, _, stderr := runArgs(t, "amp", "--quiet", "--device", "cpu", "--channel", "hardmax", "--T", "3", "--D", "16", "--rho", "0.5",
		"--alpha", "1", "--seeds", "1", "--max-iter", "8", "--out", out, "--plot", filepath.Join(dir, "amp.png"))
	if code != 0 {
		t.Fatalf("aim amp --channel hardmax --T 3: status %d: %s", code, stderr)
	}
	rows := readCSV(t, out)
	if len(rows) != 2 {
		t.Fatalf("%d lines, want a header and one row", len(rows))
	}
	col := map[string]string{}
	for i, name := range rows[0] {
		col[name] = rows[1][i]
	}
	e, err := strconv.ParseFloat(col["error"], 64)
	ch, _ := aim.NewHardmaxTChannel(3)
	p, _ := se.Solve(ch, 0.5, 1, se.DefaultOptions())
	want := strconv.FormatFloat(p.MMSE, 'g', 12, 64)
	if col["T"] != "3" || col["channel"] != "hardmax" || err != nil || !(e > 0 && e < 1) || col["se_mmse"] != want {
		t.Errorf("row %v: want channel hardmax, T 3, 0 < error < 1, se_mmse %s (the T = 3 state evolution)", col, want)
	}
	t.Logf("hardmax T = 3, D = 16, alpha = 1, 8 iterations: error %s", col["error"])
}

// TestAMPReproducibleCSV runs the same small sweep twice: the CSVs are identical except for the
// wall-time column, and each error equals a direct run of the engine with the same seed.
func TestAMPReproducibleCSV(t *testing.T) {
	dir := t.TempDir()
	args := func(name string) []string {
		return []string{"amp", "--quiet", "--device", "cpu", "--D", "30", "--rho", "0.5", "--alpha", "0.1,0.2", "--seeds", "2",
			"--max-iter", "12", "--out", filepath.Join(dir, name+".csv"), "--plot", filepath.Join(dir, name+".png"),
			"--trace", filepath.Join(dir, name+"_trace.csv")}
	}
	for _, name := range []string{"a", "b"} {
		if code, _, stderr := runArgs(t, args(name)...); code != 0 {
			t.Fatalf("status %d: %s", code, stderr)
		}
	}
	a, b := readCSV(t, filepath.Join(dir, "a.csv")), readCSV(t, filepath.Join(dir, "b.csv"))
	if strings.Join(a[0], ",") != strings.Join(aimjob.AMPSchema.Header(0), ",") || len(a) != 5 {
		t.Fatalf("CSV header %v with %d rows", a[0], len(a))
	}
	col := map[string]int{}
	for i, c := range a[0] {
		col[c] = i
	}
	dev := cpu.New(0)
	for i := 1; i < len(a); i++ {
		for j := range a[i] {
			if j != col["seconds"] && a[i][j] != b[i][j] {
				t.Errorf("row %d column %s differs between two runs: %s vs %s", i, a[0][j], a[i][j], b[i][j])
			}
		}
		alpha, _ := strconv.ParseFloat(a[i][col["alpha"]], 64)
		seed, _ := strconv.ParseUint(a[i][col["seed"]], 10, 64)
		data, err := aim.Generate(dev, aim.Params{D: 30, Alpha: alpha, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		o := amp.DefaultOptions()
		o.MaxIter = 12
		res, err := amp.Run(dev, data, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := a[i][col["error"]]; got != table.FormatFloat(res.Error) || a[i][col["iterations"]] != strconv.Itoa(res.Iterations) {
			t.Errorf("row %d: error %s after %s iterations, the engine gives %s after %d", i, got, a[i][col["iterations"]], table.FormatFloat(res.Error), res.Iterations)
		}
	}
	trace := readCSV(t, filepath.Join(dir, "a_trace.csv"))
	total := 0
	for i := 1; i < len(a); i++ {
		n, _ := strconv.Atoi(a[i][col["iterations"]])
		total += n
	}
	if len(trace)-1 != total {
		t.Errorf("trace has %d rows, the runs made %d iterations", len(trace)-1, total)
	}
}

// TestDeviceCommand checks `aim device` on a machine without CUDA: it names the CPU backend,
// says why CUDA is not usable, and that auto falls back to the CPU.
func TestDeviceCommand(t *testing.T) {
	t.Setenv("AIM_LIBCUDA", "/nonexistent/libcuda.so.1")
	code, stdout, stderr := runArgs(t, "device")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, want := range []string{"cpu: ", "goroutines", "CUDA not usable", "libcuda", "auto: using the CPU"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("aim device output lacks %q:\n%s", want, stdout)
		}
	}
}
