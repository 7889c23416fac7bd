package job

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// cancelAfter is a Progress that cancels its context once n units of work are counted: the
// hook through which a test interrupts a job at a known point.
type cancelAfter struct {
	mu     *sync.Mutex
	done   *int
	n      int
	cancel context.CancelFunc
}

// Add counts k units and cancels once n are counted.
func (p cancelAfter) Add(k int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.done += k
	if *p.done >= p.n {
		p.cancel()
	}
}

// Finish does nothing.
func (cancelAfter) Finish() {}

// interruptAfter returns an Env whose context is cancelled once n units of progress are counted.
func interruptAfter(n int) Env {
	ctx, cancel := context.WithCancel(context.Background())
	p := cancelAfter{mu: &sync.Mutex{}, done: new(int), n: n, cancel: cancel}
	return Env{Context: ctx, Progress: func(int, string) Progress { return p }}
}

// readCSVLines returns the lines of a CSV file.
func readCSVLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// readManifest decodes a JSON manifest.
func readManifest(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// noTemporaries fails the test when dir holds a hidden file or a temporary.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("%s left in %s", e.Name(), dir)
		}
	}
}

// missingPoints returns the manifest's missing points as "rho/alpha" (and "/seed" when present).
func missingPoints(t *testing.T, man map[string]any) []string {
	t.Helper()
	list, ok := man["missing"].([]any)
	if !ok {
		t.Fatalf("manifest missing = %v", man["missing"])
	}
	var out []string
	for _, x := range list {
		m := x.(map[string]any)
		s := jsonCell(m["rho"]) + "/" + jsonCell(m["alpha"])
		if seed, ok := m["seed"]; ok {
			s += "/" + jsonCell(seed)
		}
		out = append(out, s)
	}
	return out
}

// jsonCell formats a JSON number as the CSV writes it.
func jsonCell(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// seConfig is a six-point softmax SE grid (two rho, three alpha, no Monte Carlo) written to
// dir/se.csv with a plot.
func seConfig(t *testing.T, dir string, workers int) *SEConfig {
	c := NewSEConfig()
	c.Rho, c.Alpha, c.AlphaGiven, c.GenSamples, c.Workers = []string{"0.5", "1"}, "0.05,0.1,0.15", true, 0, workers
	c.Out, c.Plot = filepath.Join(dir, "se.csv"), filepath.Join(dir, "se.png")
	return validated(t, c)
}

// TestExecuteSEInterrupted interrupts `aim se` (ExecuteSE, as the command runs it) after its
// first k points and checks that the CSV holds exactly those rows, equal to the rows of an
// uninterrupted run, that the manifest says incomplete and lists the other points, that the
// plot is written, that no temporary remains, and that the error is ErrInterrupted. With three
// workers the points finished are those written, in grid order, whatever the schedule.
func TestExecuteSEInterrupted(t *testing.T) {
	fullDir := t.TempDir()
	if _, err := ExecuteSE(seConfig(t, fullDir, 1), Env{}); err != nil {
		t.Fatal(err)
	}
	full := readCSVLines(t, filepath.Join(fullDir, "se.csv"))
	if len(full) != 7 {
		t.Fatalf("full run: %d lines, want a header and 6 rows", len(full))
	}
	if m := readManifest(t, filepath.Join(fullDir, "se.json")); m["complete"] != true || m["missing"] != nil {
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
		summary, err := ExecuteSE(seConfig(t, dir, tc.workers), interruptAfter(tc.k))
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("workers %d, k %d: error %v, want ErrInterrupted", tc.workers, tc.k, err)
		}
		if !strings.Contains(summary, "se.csv") {
			t.Errorf("summary %q", summary)
		}
		got := readCSVLines(t, filepath.Join(dir, "se.csv"))
		man := readManifest(t, filepath.Join(dir, "se.json"))
		missing := missingPoints(t, man)
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
		noTemporaries(t, dir)
	}
}

// TestExecuteSEInterruptedEarly interrupts `aim se` before any point is solved: the CSV holds
// the header only, the manifest lists every point, and the plot, which has nothing to draw, is
// not written.
func TestExecuteSEInterruptedEarly(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ExecuteSE(seConfig(t, dir, 2), Env{Context: ctx})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	if got := readCSVLines(t, filepath.Join(dir, "se.csv")); len(got) != 1 {
		t.Errorf("CSV %q, want the header only", got)
	}
	man := readManifest(t, filepath.Join(dir, "se.json"))
	want := []string{"0.5/0.05", "0.5/0.1", "0.5/0.15", "1/0.05", "1/0.1", "1/0.15"}
	if got := missingPoints(t, man); !slices.Equal(got, want) || man["complete"] != false {
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
	noTemporaries(t, dir)
}

// TestForPointsAbandons checks that an interruption returns at once with the points finished,
// in point order, while a point in flight never ends, and that no point starts after it.
func TestForPointsAbandons(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	defer close(block)
	var mu sync.Mutex
	started := map[int]bool{}
	returned := make(chan []bool)
	go func() {
		_, done, err := forPoints(ctx, 1, 6, noProgress{}, func(i int) int {
			mu.Lock()
			started[i] = true
			mu.Unlock()
			if i == 2 {
				cancel()
				<-block // never ends before forPoints returns
			}
			return i * i
		})
		if err != nil {
			t.Error(err)
		}
		returned <- done
	}()
	select {
	case done := <-returned:
		if !slices.Equal(done, []bool{true, true, false, false, false, false}) {
			t.Errorf("done %v, want the first two points", done)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("forPoints waited for the point in flight")
	}
	mu.Lock()
	defer mu.Unlock()
	if started[3] {
		t.Error("a point started after the interruption")
	}
	res, done, err := forPoints(context.Background(), 3, 5, noProgress{}, func(i int) int { return i * i })
	if err != nil || !slices.Equal(res, []int{0, 1, 4, 9, 16}) || slices.Contains(done, false) {
		t.Errorf("uninterrupted: %v %v %v", res, done, err)
	}
}

// TestExecuteAMPInterrupted interrupts `aim amp` after its first run (of a 2 x 2 grid): the
// CSV holds that run's row as an uninterrupted run writes it (but for its wall time), the
// manifest lists the three other (rho, alpha, seed), and no temporary remains.
func TestExecuteAMPInterrupted(t *testing.T) {
	config := func(dir string) *AMPConfig {
		c := NewAMPConfig()
		c.Device, c.D, c.Alpha, c.AlphaGiven, c.Seeds, c.Seed, c.MaxIter = "cpu", 24, "0.1,0.2", true, 2, 3, 12
		c.Out, c.Plot, c.Trace = filepath.Join(dir, "amp.csv"), "", filepath.Join(dir, "trace.csv")
		return validated(t, c)
	}
	fullDir, dir := t.TempDir(), t.TempDir()
	if _, err := ExecuteAMP(config(fullDir), Env{}); err != nil {
		t.Fatal(err)
	}
	_, err := ExecuteAMP(config(dir), interruptAfter(12))
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	full, got := readCSVLines(t, filepath.Join(fullDir, "amp.csv")), readCSVLines(t, filepath.Join(dir, "amp.csv"))
	drop := slices.Index(strings.Split(full[0], ","), "seconds")
	noSeconds := func(line string) string {
		f := strings.Split(line, ",")
		return strings.Join(slices.Delete(f, drop, drop+1), ",")
	}
	if len(got) != 2 || noSeconds(got[1]) != noSeconds(full[1]) {
		t.Errorf("rows %q, want the first of %q", got, full)
	}
	for _, name := range []string{"amp.json", "trace.json"} {
		man := readManifest(t, filepath.Join(dir, name))
		want := []string{"0.5/0.1/4", "0.5/0.2/3", "0.5/0.2/4"}
		if m := missingPoints(t, man); !slices.Equal(m, want) || man["complete"] != false {
			t.Errorf("%s: missing %v, complete %v; want %v, false", name, m, man["complete"], want)
		}
	}
	noTemporaries(t, dir)
}

// TestExecuteSMISEInterrupted interrupts `aim smi se` (ExecuteSMISE) after the stability
// thresholds and the first two points of a four-point curve: the CSV holds exactly the full
// run's first two rows, the manifest says incomplete and lists the last two alphas, the plot is
// written, no temporary remains, and the error is ErrInterrupted.
func TestExecuteSMISEInterrupted(t *testing.T) {
	config := func(dir string) *SMISEConfig {
		c := NewSMISEConfig()
		c.Alpha, c.Samples, c.MaxIter, c.Tol, c.GenSamples, c.Seed, c.Workers = "0.3,0.6,0.9,1.2", 32, 40, 1e-3, 0, 3, 1
		c.Out, c.Plot = filepath.Join(dir, "smi.csv"), filepath.Join(dir, "smi.png")
		return validated(t, c)
	}
	fullDir := t.TempDir()
	if _, err := ExecuteSMISE(config(fullDir), Env{}); err != nil {
		t.Fatal(err)
	}
	full := readCSVLines(t, filepath.Join(fullDir, "smi.csv"))
	dir := t.TempDir()
	_, err := ExecuteSMISE(config(dir), interruptAfter(3)) // the thresholds, then two points
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	got := readCSVLines(t, filepath.Join(dir, "smi.csv"))
	// The curve may finish a point between the cancellation and the return: two or three rows.
	if n := len(got) - 1; n < 2 || n > 3 || !slices.Equal(got, full[:len(got)]) {
		t.Fatalf("rows\n%s\nwant the first two or three of the full run\n%s", strings.Join(got, "\n"), strings.Join(full, "\n"))
	}
	man := readManifest(t, filepath.Join(dir, "smi.json"))
	var missing []float64
	if ms, ok := man["missing"].([]any); ok {
		for _, m := range ms {
			missing = append(missing, m.(map[string]any)["alpha"].(float64))
		}
	}
	if want := []float64{0.3, 0.6, 0.9, 1.2}[len(got)-1:]; man["complete"] != false || !slices.Equal(missing, want) {
		t.Errorf("manifest complete = %v, missing %v, want false and %v", man["complete"], missing, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, "smi.png")); err != nil || fi.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
	noTemporaries(t, dir)
}
