package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// benchHeader is the header `aim bench` must write: the columns the issue asks for, the
// chunk, the data's generation and the counted flops, one column per kind of operation and the
// host's share.
var benchHeader = []string{"device", "algorithm", "D", "N", "T", "channel", "tokens", "chunk", "repeat", "seconds_median",
	"seconds_min", "generate_s", "flops", "gflops", "dgemm_gflops", "fraction_of_dgemm", "precision", "gemm_gflops", "fraction_of_gemm", "gemm_s", "quadformsum_s",
	"tokendots_s", "tokenmix_s", "channel_s", "eighsym_s", "spectral_s", "gaussian_s", "other_s", "collective_s", "host_s"}

// TestBenchBadInput checks that bad input exits with status 2, says why and writes nothing.
func TestBenchBadInput(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "res")
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--D", "1"}, "D >= 2"},
		{[]string{"--D", "20,,40"}, "not a whole number"},
		{[]string{"--D", "twenty"}, "not a whole number"},
		{[]string{"--streamed-D", "40;80"}, "not a whole number"},
		{[]string{"--repeat", "2"}, "at least 3"},
		{[]string{"--device", "tpu"}, "unknown device"},
		{[]string{"--device", "cpu cpu"}, "twice"},
		{[]string{"--device", "cuda:-1"}, "GPU ordinal"},
		{[]string{"--algorithms", "sgd"}, "unknown algorithm"},
		{[]string{"--alpha", "0"}, "alpha"},
		{[]string{"--D", "20", "--rho", "0.01"}, "R = floor(rho D) = 0"},
		{[]string{"--max-memory", "256KiB"}, "stored tokens"},
		{[]string{"--D", "20000"}, "available"},
		{[]string{"--plot", filepath.Join(res, "b.gif")}, "unknown format"},
		{[]string{"--out", filepath.Join(res, "b.txt")}, ".csv"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
	}
	for _, tc := range tests {
		args := withFlags([]string{"bench", "--quiet", "--device", "cpu", "--D", "20,40", "--gemm-size", "64",
			"--out", filepath.Join(res, "b.csv"), "--plot", filepath.Join(res, "b.png")}, tc.args...)
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("aim bench %v: status %d, stderr %q; want status 2 mentioning %q", tc.args, code, stderr, tc.msg)
		}
	}
	if entries, _ := os.ReadDir(res); len(entries) != 0 {
		t.Errorf("bad input left files: %v", entries)
	}
}

// TestBenchCommand runs a tiny CPU bench (D = 20 and 40, streamed at 40) end to end: the CSV
// has one row per algorithm x D x tokens with the asked-for columns, its GFLOP/s is the flops
// over the median seconds, its operations and host share add up to the median, and the
// manifest records the version, the devices with their Dgemm rate, every parameter and the
// wall time.
func TestBenchCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "b.csv")
	code, stdout, stderr := runArgs(t, "bench", "--quiet", "--device", "cpu", "--D", "40,20", "--streamed-D", "40",
		"--chunk", "64", "--gemm-size", "64", "--repeat", "3", "--out", out, "--plot", filepath.Join(dir, "b.svg"))
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "(6 rows)") {
		t.Errorf("stdout %q", stdout)
	}
	rows := readCSV(t, out)
	if !slices.Equal(rows[0], benchHeader) {
		t.Fatalf("header %v, want %v", rows[0], benchHeader)
	}
	col := map[string]int{}
	for j, h := range rows[0] {
		col[h] = j
	}
	want := [][3]string{{"amp", "20", "stored"}, {"gd", "20", "stored"}, {"amp", "40", "stored"}, {"gd", "40", "stored"},
		{"amp", "40", "streamed"}, {"gd", "40", "streamed"}}
	if len(rows) != 1+len(want) {
		t.Fatalf("%d rows, want %d", len(rows)-1, len(want))
	}
	for i, r := range rows[1:] {
		v := func(name string) float64 {
			x, err := strconv.ParseFloat(r[col[name]], 64)
			if err != nil {
				t.Fatalf("row %d column %s: %v", i, name, err)
			}
			return x
		}
		if got := [3]string{r[col["algorithm"]], r[col["D"]], r[col["tokens"]]}; got != want[i] || r[col["device"]] != "cpu" {
			t.Fatalf("row %d: %v on %s, want %v on cpu", i, got, r[col["device"]], want[i])
		}
		D, N, T := v("D"), v("N"), v("T")
		if N != math.Floor(0.25*D*D) || T != 2 || v("repeat") != 3 {
			t.Errorf("row %d: N %g, T %g, repeat %g", i, N, T, v("repeat"))
		}
		flops := 4*N*T*D*D + 4*N*T*T*D + 16.0/3*D*D*D
		if r[col["algorithm"]] == "gd" {
			flops = 4*N*T*D*D + 4*N*T*T*D + 6*math.Floor(0.5*D)*D*D
		}
		rel := func(a, b float64) float64 { return math.Abs(a-b) / b }
		if rel(v("flops"), flops) > 1e-11 || rel(v("gflops"), flops/v("seconds_median")/1e9) > 1e-10 ||
			rel(v("fraction_of_dgemm"), v("gflops")/v("dgemm_gflops")) > 1e-10 {
			t.Errorf("row %d: flops %g (want %g), gflops %g (want %g), fraction %g", i, v("flops"), flops, v("gflops"),
				flops/v("seconds_median")/1e9, v("fraction_of_dgemm"))
		}
		sum := v("host_s")
		for _, name := range benchHeader[slices.Index(benchHeader, "gemm_s"):slices.Index(benchHeader, "host_s")] {
			sum += v(name)
		}
		if rel(sum, v("seconds_median")) > 1e-9 || v("seconds_min") > v("seconds_median") {
			t.Errorf("row %d: operations and host %g, median %g, min %g", i, sum, v("seconds_median"), v("seconds_min"))
		}
		if streamed := r[col["tokens"]] == "streamed"; streamed != (v("gaussian_s") > 0) || streamed != (v("chunk") == 64) {
			t.Errorf("row %d: %s tokens with GaussianFill %g s and chunk %g", i, r[col["tokens"]], v("gaussian_s"), v("chunk"))
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "b.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Command    string         `json:"command"`
		Version    string         `json:"version"`
		Wall       float64        `json:"wall_seconds"`
		Parameters map[string]any `json:"parameters"`
		Devices    []struct {
			Name     string  `json:"name"`
			Gemm     int     `json:"gemm_size"`
			GFlops   float64 `json:"dgemm_gflops"`
			Timer    string  `json:"op_timer"`
			Streamed []int   `json:"streamed_D"`
		} `json:"devices"`
		Rows int `json:"rows"`
	}
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	if man.Command != "bench" || man.Version == "" || !(man.Wall > 0) || man.Rows != 6 || len(man.Devices) != 1 ||
		man.Devices[0].Name != "cpu" || man.Devices[0].Gemm != 64 || !(man.Devices[0].GFlops > 0) ||
		man.Devices[0].Timer != "host clock" || !slices.Equal(man.Devices[0].Streamed, []int{40}) {
		t.Errorf("manifest %+v", man)
	}
	for _, k := range []string{"device", "D", "streamed_D", "alpha", "rho", "T", "beta", "repeat", "gemm_size", "seed", "chunk"} {
		if _, ok := man.Parameters[k]; !ok {
			t.Errorf("manifest parameters lack %s", k)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "b.svg")); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
	// aim plot redraws the figure from the CSV.
	if code, _, stderr := runArgs(t, "plot", out, "--out", filepath.Join(dir, "again.png")); code != 0 {
		t.Errorf("aim plot of a bench CSV: status %d: %s", code, stderr)
	}
}
