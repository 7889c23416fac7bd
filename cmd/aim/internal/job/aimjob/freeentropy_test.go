package aimjob

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim/se"
)

// A first-order transition's thresholds reach the figure as vertical lines at alpha_IT
// (dotted) and alpha_alg (dash-dot), converted to the figure's axis like alpha_PR, and survive
// the manifest's JSON (aim plot reads them back); a rho without one draws none.
func TestFirstOrderLines(t *testing.T) {
	th := SEThresholds{AlphaPR: map[string]float64{}, AlphaBarC: 0.25, FirstOrder: map[string]se.Transition{
		table.RhoKey(0.5): {Found: true, AlphaSpinodal: 0.05, AlphaIT: 0.1, AlphaAlg: 0.15},
		table.RhoKey(1):   {Found: false, AlphaSpinodal: math.NaN(), AlphaIT: math.NaN(), AlphaAlg: math.NaN()},
	}}
	m := &Model{Channel: "softmax", T: 2, Beta: 1}
	var rows []SERow
	for _, r := range []float64{0.5, 1} {
		for _, a := range []float64{0.05, 0.2} {
			rows = append(rows, seRow(m, r, a/r, se.Point{Alpha: a, Rho: r, MMSE: 0.5, Q: r + 0.5, QHat: 1, Converged: true}))
		}
	}
	tab, err := SESchema.Table("se.csv", 0, rows)
	if err != nil {
		t.Fatal(err)
	}
	// Through the manifest's JSON, as aim plot reads it.
	b, err := json.Marshal(map[string]any{"thresholds": jsonThresholds(th)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "se.csv")
	var buf bytes.Buffer
	if err := SESchema.Write(&buf, 0, rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csvPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(csvPath, ".csv")+".json", b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := job.ReadTable(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]*table.Table{"direct": tab, "from the manifest": back} {
		if name == "direct" {
			tt.Th = figureThresholds(th)
		}
		for _, axes := range []string{"alpha", "alpha-bar"} {
			f, err := plot.Build([]*table.Table{tt}, plot.Options{X: axes})
			if err != nil {
				t.Fatal(err)
			}
			scale := 1.0
			if axes == "alpha-bar" {
				scale = 4
			}
			got := map[figure.VStyle][]float64{}
			for _, v := range f.VLines {
				got[v.Style] = append(got[v.Style], v.X)
			}
			if len(got[figure.VDotted]) != 1 || got[figure.VDotted][0] != 0.1*scale ||
				len(got[figure.VDashDot]) != 1 || got[figure.VDashDot][0] != 0.15*scale {
				t.Errorf("%s, axes %s: vertical lines %+v; want alpha_IT = %g dotted and alpha_alg = %g dash-dot", name, axes, f.VLines, 0.1*scale, 0.15*scale)
			}
		}
	}
}
