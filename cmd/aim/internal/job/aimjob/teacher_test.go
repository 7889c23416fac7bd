package aimjob

import (
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job/jobtest"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/erm"
	"github.com/aimtheory/aim/engine/aim/se"
)

// TestTeacherDenseLines: the theory lines of a simulation's figure are a power-law teacher's at
// the runs' D: the dense SE line (se.SolvePrior at D = 30, column D 30) and the dense ERM line
// beside GAMP for ERM (erm.Problem.Prior at D = 30); the MP teacher's are se.Solve's, without D.
func TestTeacherDenseLines(t *testing.T) {
	c := NewAMPConfig()
	c.Channel, c.Teacher, c.D, c.Rho, c.Alpha, c.AlphaGiven = "linear", "powerlaw:1.25", 30, []string{"1"}, "0.3", true
	jobtest.Validated(t, c)
	prior := aim.Params{D: 30, Rho: 1, Teacher: aim.Teacher{PowerLaw: true, Gamma: 1.25}}.Prior()
	ch, _ := aim.NewLinear(0)
	lines, err := denseSE(&c.Model, c.D, 0.1, 0.3, 1, 2, false)
	if err != nil || lines.Rows() != 2 {
		t.Fatalf("dense SE: %v, %d rows", err, lines.Rows())
	}
	for i, a := range []float64{0.15, 0.3} {
		p, err := se.SolvePrior(ch, prior, a, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if lines.S(i, "mmse") != table.FormatFloat(p.MMSE) || lines.S(i, "D") != "30" || lines.S(i, "teacher") != "powerlaw:1.25" {
			t.Errorf("dense SE at alpha %g: mmse %s, D %s, teacher %s; want %s, 30, powerlaw:1.25", a, lines.S(i, "mmse"), lines.S(i, "D"), lines.S(i, "teacher"), table.FormatFloat(p.MMSE))
		}
	}
	c.ERM, c.WeightDecay = true, 0.1
	jobtest.Validated(t, c)
	elines, err := c.denseERM(0.1, 0.3, 2, false)
	if err != nil || elines.Rows() != 2 {
		t.Fatalf("dense ERM: %v, %d rows", err, elines.Rows())
	}
	pt, err := erm.Solve(erm.Problem{Rho: 1, Alpha: 0.3, Lambda: 0.1, Prior: prior}, se.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if elines.S(1, "test_error") != table.FormatFloat(pt.TestError) || elines.S(1, "D") != "30" {
		t.Errorf("dense ERM at alpha 0.3: test error %s, D %s; want %s, 30", elines.S(1, "test_error"), elines.S(1, "D"), table.FormatFloat(pt.TestError))
	}
	// The MP teacher: se.Solve, no D.
	m := NewAMPConfig()
	m.Channel, m.D, m.Rho, m.Alpha, m.AlphaGiven = "linear", 30, []string{"1"}, "0.3", true
	jobtest.Validated(t, m)
	mp, err := denseSE(&m.Model, m.D, 0.1, 0.3, 2, 2, false)
	if err != nil || mp.Rows() != 1 {
		t.Fatalf("dense SE (mp): %v", err)
	}
	p, err := se.Solve(ch, 1, 0.3, se.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if mp.S(0, "mmse") != table.FormatFloat(p.MMSE) || mp.S(0, "D") != "" || mp.S(0, "teacher") != "mp" {
		t.Errorf("dense SE (mp): mmse %s, D %q, teacher %s; want %s, empty, mp", mp.S(0, "mmse"), mp.S(0, "D"), mp.S(0, "teacher"), table.FormatFloat(p.MMSE))
	}
}
