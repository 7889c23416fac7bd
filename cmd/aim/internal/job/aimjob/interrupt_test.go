package aimjob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/job/jobtest"
)

// seConfig is a six-point softmax SE grid (two rho, three alpha, no Monte Carlo) written to
// dir/se.csv with a plot.
func seConfig(t *testing.T, dir string, workers int) *SEConfig {
	c := NewSEConfig()
	c.Rho, c.Alpha, c.AlphaGiven, c.GenSamples, c.Workers = []string{"0.5", "1"}, "0.05,0.1,0.15", true, 0, workers
	c.Out, c.Plot = filepath.Join(dir, "se.csv"), filepath.Join(dir, "se.png")
	return jobtest.Validated(t, c)
}

// TestExecuteSEInterrupted interrupts `aim se` (ExecuteSE, as the command runs it) after its
// first k points and checks that the CSV holds exactly those rows, equal to the rows of an
// uninterrupted run, that the manifest says incomplete and lists the other points, that the
// plot is written, that no temporary remains, and that the error is ErrInterrupted. With three
// workers the points finished are those written, in grid order, whatever the schedule.
func TestExecuteSEInterrupted(t *testing.T) {
	fullDir := t.TempDir()
	if _, err := ExecuteSE(seConfig(t, fullDir, 1), job.Env{}); err != nil {
		t.Fatal(err)
	}
	full := jobtest.ReadCSVLines(t, filepath.Join(fullDir, "se.csv"))
	if len(full) != 7 {
		t.Fatalf("full run: %d lines, want a header and 6 rows", len(full))
	}
	if m := jobtest.ReadManifest(t, filepath.Join(fullDir, "se.json")); m["complete"] != true || m["missing"] != nil {
		t.Errorf("full run: complete = %v, missing = %v", m["complete"], m["missing"])
	}
	header := strings.Split(full[0], ",")
	rhoCol, alphaCol := slices.Index(header, "rho"), slices.Index(header, "alpha")
	point := func(line string) string {
		f := strings.Split(line, ",")
		return f[rhoCol] + "/" + f[alphaCol]
	}
	for _, tc := range []struct{ workers, k int }{{1, 2}, {1, 4}, {3, 2}} {
		dir := t.TempDir()
		summary, err := ExecuteSE(seConfig(t, dir, tc.workers), jobtest.InterruptAfter(tc.k))
		if !errors.Is(err, job.ErrInterrupted) {
			t.Fatalf("workers %d, k %d: error %v, want ErrInterrupted", tc.workers, tc.k, err)
		}
		if !strings.Contains(summary, "se.csv") {
			t.Errorf("summary %q", summary)
		}
		got := jobtest.ReadCSVLines(t, filepath.Join(dir, "se.csv"))
		man := jobtest.ReadManifest(t, filepath.Join(dir, "se.json"))
		missing := jobtest.MissingPoints(t, man)
		if got[0] != full[0] {
			t.Errorf("header %q, want %q", got[0], full[0])
		}
		// Every row written is the full run's row of its point, in grid order; the points not
		// written are the manifest's missing ones.
		var want, wantMissing []string
		for _, line := range full[1:] {
			if slices.Contains(got[1:], line) {
				want = append(want, line)
			} else {
				wantMissing = append(wantMissing, point(line))
			}
		}
		if !slices.Equal(got[1:], want) {
			t.Errorf("workers %d, k %d: rows\n%s\nare not rows of the full run in its order:\n%s", tc.workers, tc.k,
				strings.Join(got[1:], "\n"), strings.Join(full[1:], "\n"))
		}
		if tc.workers == 1 && !slices.Equal(got[1:], full[1:1+tc.k]) {
			t.Errorf("one worker, k %d: rows\n%s\nwant the first %d of the full run", tc.k, strings.Join(got[1:], "\n"), tc.k)
		}
		if len(got)-1 < tc.k || len(got)-1 == 6 {
			t.Errorf("workers %d, k %d: %d rows written", tc.workers, tc.k, len(got)-1)
		}
		if !slices.Equal(missing, wantMissing) {
			t.Errorf("workers %d, k %d: missing %v, want %v", tc.workers, tc.k, missing, wantMissing)
		}
		if man["complete"] != false || man["points"] != float64(len(got)-1) {
			t.Errorf("manifest complete = %v, points = %v", man["complete"], man["points"])
		}
		if fi, err := os.Stat(filepath.Join(dir, "se.png")); err != nil || fi.Size() == 0 {
			t.Errorf("plot: %v", err)
		}
		jobtest.NoTemporaries(t, dir)
	}
}

// TestExecuteSEInterruptedEarly interrupts `aim se` before any point is solved: the CSV holds
// the header only, the manifest lists every point, and the plot, which has nothing to draw, is
// not written.
func TestExecuteSEInterruptedEarly(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ExecuteSE(seConfig(t, dir, 2), job.Env{Context: ctx})
	if !errors.Is(err, job.ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	if got := jobtest.ReadCSVLines(t, filepath.Join(dir, "se.csv")); len(got) != 1 {
		t.Errorf("CSV %q, want the header only", got)
	}
	man := jobtest.ReadManifest(t, filepath.Join(dir, "se.json"))
	want := []string{"0.5/0.05", "0.5/0.1", "0.5/0.15", "1/0.05", "1/0.1", "1/0.15"}
	if got := jobtest.MissingPoints(t, man); !slices.Equal(got, want) || man["complete"] != false {
		t.Errorf("missing %v, complete %v; want %v, false", got, man["complete"], want)
	}
	if _, err := os.Stat(filepath.Join(dir, "se.png")); !os.IsNotExist(err) {
		t.Errorf("plot of no rows: %v", err)
	}
	for _, o := range man["outputs"].([]any) {
		if strings.HasSuffix(o.(string), ".png") {
			t.Errorf("outputs list the plot: %v", man["outputs"])
		}
	}
	jobtest.NoTemporaries(t, dir)
}

// TestExecuteAMPInterrupted interrupts `aim amp` after its first run (of a 2 x 2 grid): the
// CSV holds that run's row as an uninterrupted run writes it (but for its wall time), the
// manifest lists the three other (rho, alpha, seed), and no temporary remains.
func TestExecuteAMPInterrupted(t *testing.T) {
	config := func(dir string) *AMPConfig {
		c := NewAMPConfig()
		c.Device, c.D, c.Alpha, c.AlphaGiven, c.Seeds, c.Seed, c.MaxIter = "cpu", 24, "0.1,0.2", true, 2, 3, 12
		c.Out, c.Plot, c.Trace = filepath.Join(dir, "amp.csv"), "", filepath.Join(dir, "trace.csv")
		return jobtest.Validated(t, c)
	}
	fullDir, dir := t.TempDir(), t.TempDir()
	if _, err := ExecuteAMP(config(fullDir), job.Env{}); err != nil {
		t.Fatal(err)
	}
	_, err := ExecuteAMP(config(dir), jobtest.InterruptAfter(12))
	if !errors.Is(err, job.ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	full, got := jobtest.ReadCSVLines(t, filepath.Join(fullDir, "amp.csv")), jobtest.ReadCSVLines(t, filepath.Join(dir, "amp.csv"))
	drop := slices.Index(strings.Split(full[0], ","), "seconds")
	noSeconds := func(line string) string {
		f := strings.Split(line, ",")
		return strings.Join(slices.Delete(f, drop, drop+1), ",")
	}
	if len(got) != 2 || noSeconds(got[1]) != noSeconds(full[1]) {
		t.Errorf("rows %q, want the first of %q", got, full)
	}
	for _, name := range []string{"amp.json", "trace.json"} {
		man := jobtest.ReadManifest(t, filepath.Join(dir, name))
		want := []string{"0.5/0.1/4", "0.5/0.2/3", "0.5/0.2/4"}
		if m := jobtest.MissingPoints(t, man); !slices.Equal(m, want) || man["complete"] != false {
			t.Errorf("%s: missing %v, complete %v; want %v, false", name, m, man["complete"], want)
		}
	}
	jobtest.NoTemporaries(t, dir)
}
