package smijob

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/job/jobtest"
)

// TestExecuteSMISEInterrupted interrupts `aim smi se` (ExecuteSMISE) after the stability
// thresholds and the first two points of a four-point curve: the CSV holds exactly the full
// run's first two rows, the manifest says incomplete and lists the last two alphas, the plot is
// written, no temporary remains, and the error is ErrInterrupted.
func TestExecuteSMISEInterrupted(t *testing.T) {
	config := func(dir string) *SMISEConfig {
		c := NewSMISEConfig()
		c.Alpha, c.Samples, c.MaxIter, c.Tol, c.GenSamples, c.Seed, c.Workers = "0.3,0.6,0.9,1.2", 32, 40, 1e-3, 0, 3, 1
		c.Out, c.Plot = filepath.Join(dir, "smi.csv"), filepath.Join(dir, "smi.png")
		return jobtest.Validated(t, c)
	}
	fullDir := t.TempDir()
	if _, err := ExecuteSMISE(config(fullDir), job.Env{}); err != nil {
		t.Fatal(err)
	}
	full := jobtest.ReadCSVLines(t, filepath.Join(fullDir, "smi.csv"))
	dir := t.TempDir()
	_, err := ExecuteSMISE(config(dir), jobtest.InterruptAfter(3)) // the thresholds, then two points
	if !errors.Is(err, job.ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	got := jobtest.ReadCSVLines(t, filepath.Join(dir, "smi.csv"))
	// The curve may finish a point between the cancellation and the return: two or three rows.
	if n := len(got) - 1; n < 2 || n > 3 || !slices.Equal(got, full[:len(got)]) {
		t.Fatalf("rows\n%s\nwant the first two or three of the full run\n%s", strings.Join(got, "\n"), strings.Join(full, "\n"))
	}
	man := jobtest.ReadManifest(t, filepath.Join(dir, "smi.json"))
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
	jobtest.NoTemporaries(t, dir)
}
