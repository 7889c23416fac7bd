package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu"
)

// TestGDStudentsAtOnce: `aim gd --restarts 8` trains as many students at once as fit in the
// memory allowed (all 8, then 4, 2 or 1 as --max-memory shrinks, stored, then streamed), says so
// and records it in the manifest, and writes the same rows whatever that number: every column
// but the wall time, to the last digit. On gonum, whose work arrays do not follow the core
// count (the native library's QuadFormSum keeps rows per thread), the plan is the same on
// every machine.
func TestGDStudentsAtOnce(t *testing.T) {
	t.Setenv(cpu.EnvBLAS, cpu.GonumBLAS)
	dir := t.TempDir()
	var ref [][]string
	for _, c := range []struct {
		memory   string // --max-memory ("" for none)
		students int
		streamed bool
	}{{"", 8, false}, {"3MiB", 4, false}, {"2.4MiB", 2, false}, {"2.0MiB", 1, false}, {"1.5MiB", 2, true}, {"800KiB", 1, true}} {
		out := filepath.Join(dir, fmt.Sprintf("gd-%d-%v.csv", c.students, c.streamed))
		args := []string{"gd", "--quiet", "--device", "cpu", "--D", "60", "--alpha", "0.25", "--seeds", "1", "--restarts", "8",
			"--max-iter", "6", "--out", out, "--plot", ""}
		if c.memory != "" {
			args = append(args, "--max-memory", c.memory)
		}
		code, _, stderr := runAim(args...)
		if code != 0 {
			t.Fatalf("aim %s: status %d: %s", strings.Join(args, " "), code, stderr)
		}
		want := fmt.Sprintf("%d of the 8 students at a time", c.students)
		if c.students == 1 {
			want = "the 8 students one at a time"
		}
		if !strings.Contains(stderr, want) || strings.Contains(stderr, "tokens streamed") != c.streamed {
			t.Errorf("--max-memory %q: stderr %q, want %q (streamed %v)", c.memory, stderr, want, c.streamed)
		}
		params := csvManifest(t, out)["parameters"].(map[string]any)
		if params["students_at_once"] != float64(c.students) {
			t.Errorf("--max-memory %q: manifest students_at_once %v, want %d", c.memory, params["students_at_once"], c.students)
		}
		rows := readCSV(t, out)
		if ref == nil {
			ref = rows
			continue
		}
		col := csvColumns(ref[0])
		for i := 1; i < len(ref); i++ {
			for name, j := range col {
				if name != "seconds" && rows[i][j] != ref[i][j] {
					t.Errorf("--max-memory %q row %d %s: %s, all at once %s", c.memory, i, name, rows[i][j], ref[i][j])
				}
			}
		}
	}
}
