package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu"
)

// TestPrecisionFlag: --precision on aim amp and aim gd. A bad name is bad input (status 2,
// nothing written; a device without the precision is refused by the engine, its tests say);
// at fp64 the CSV is the CSV
// without the flag, byte for byte, its precision column fp64 and the manifest's parameter
// fp64; at tf32 the error differs, the column and manifest say tf32, and aim amp notes that
// the default --tol will seldom be met.
func TestPrecisionFlag(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"amp", "gd"} {
		base := []string{cmd, "--quiet", "--device", "cpu", "--workers", "1", "--D", "60", "--alpha", "0.1", "--seeds", "1", "--max-iter", "6", "--plot", ""}
		for _, bad := range []struct {
			args []string
			msg  string
		}{
			{[]string{"--precision", "fp16"}, "--precision: unknown precision \"fp16\""},
		} {
			out := filepath.Join(dir, "bad", cmd+".csv")
			code, _, stderr := runArgs(t, withFlags(append(slices.Clone(base), "--out", out), bad.args...)...)
			if code != 2 || !strings.Contains(stderr, bad.msg) {
				t.Errorf("aim %s %v: status %d, stderr %q; want 2 mentioning %q", cmd, bad.args, code, stderr, bad.msg)
			}
		}
		if entries, _ := os.ReadDir(filepath.Join(dir, "bad")); len(entries) != 0 {
			t.Errorf("aim %s: bad input left files: %v", cmd, entries)
		}
		rows := map[string][][]string{}
		for _, p := range []string{"", "fp64", "tf32"} {
			out := filepath.Join(dir, cmd+"-"+p+".csv")
			args := append(slices.Clone(base), "--out", out)
			if p != "" {
				args = append(args, "--precision", p)
			}
			code, _, stderr := runArgs(t, args...)
			if code != 0 {
				t.Fatalf("aim %s --precision %q: status %d: %s", cmd, p, code, stderr)
			}
			// GAMP-RIE at tf32 says that the default tol will seldom be met.
			if warned := strings.Contains(stderr, "--precision tf32 with --tol 1e-05"); warned != (cmd == "amp" && p == "tf32") {
				t.Errorf("aim %s --precision %q: the tf32 tolerance note is there: %v; stderr %q", cmd, p, warned, stderr)
			}
			rows[p] = withoutTimes(readCSV(t, out))
			raw, err := os.ReadFile(strings.TrimSuffix(out, ".csv") + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var man struct{ Parameters map[string]any }
			if err := json.Unmarshal(raw, &man); err != nil {
				t.Fatal(err)
			}
			want := p
			if want == "" {
				want = "fp64"
			}
			col := slices.Index(rows[p][0], "precision")
			if col < 0 || rows[p][1][col] != want || fmt.Sprint(man.Parameters["precision"]) != want {
				t.Errorf("aim %s --precision %q: column %d = %v, manifest %v; want %s", cmd, p, col, rows[p][1], man.Parameters["precision"], want)
			}
		}
		if !slices.EqualFunc(rows[""], rows["fp64"], slices.Equal) {
			t.Errorf("aim %s: --precision fp64 changed the CSV:\n%v\n%v", cmd, rows[""], rows["fp64"])
		}
		col := slices.Index(rows[""][0], "error")
		if rows[""][1][col] == rows["tf32"][1][col] {
			t.Errorf("aim %s: tf32 gave the fp64 error %s to the last digit", cmd, rows[""][1][col])
		}
		t.Logf("aim %s, D = 60, 6 iterations: error fp64 %s, tf32 %s", cmd, rows[""][1][col], rows["tf32"][1][col])
	}
}

// TestPrecisionMemory: the float32 arrays of the CPU's reduced-precision products count in
// the memory plan: at D = 100, alpha = 0.25 with stored tokens, 14 MiB holds the fp64 run
// (8.6 MiB) and not the bf16x9 one (22.0 MiB). On gonum, whose work arrays do not follow the
// core count (the native library's QuadFormSum keeps rows per thread), the numbers are the
// same on every machine.
func TestPrecisionMemory(t *testing.T) {
	t.Setenv(cpu.EnvBLAS, cpu.GonumBLAS)
	dir := t.TempDir()
	for _, c := range []struct {
		p    string
		code int
	}{{"fp64", 0}, {"bf16x9", 2}} {
		code, _, stderr := runArgs(t, "amp", "--quiet", "--device", "cpu", "--D", "100", "--alpha", "0.25", "--seeds", "1", "--max-iter", "1",
			"--tokens", "stored", "--max-memory", "14MiB", "--precision", c.p, "--plot", "", "--out", filepath.Join(dir, c.p+".csv"))
		if code != c.code || (code == 2 && !strings.Contains(stderr, "needs 22.0 MiB")) {
			t.Errorf("--precision %s in 14 MiB: status %d, %s", c.p, code, stderr)
		}
	}
}

// TestSweepPrecision: precision is a grid key of a sweep like any flag, its values in the
// precision column of the sweep's table.
func TestSweepPrecision(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sw")
	path := filepath.Join(dir, "sw.toml")
	spec := fmt.Sprintf("job = \"amp\"\nout = %q\nseeds = 1\ndevice = \"cpu\"\nworkers = 1\n[grid]\nalpha = 0.1\nD = 30\nmax-iter = 4\nprecision = [\"fp64\", \"bf16x9\"]\n", out)
	os.WriteFile(path, []byte(spec), 0o644)
	if code, _, stderr := runArgs(t, "sweep", "run", "--quiet", path); code != 0 {
		t.Fatalf("sweep: status %d: %s", code, stderr)
	}
	table := readCSV(t, filepath.Join(out, "results.csv"))
	col := slices.Index(table[0], "precision")
	if col < 0 || len(table) != 3 || table[1][col] != "fp64" || table[2][col] != "bf16x9" {
		t.Errorf("sweep over precision: %v", table)
	}
}
