package job_test

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"

	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

func readTable(r *strings.Reader, name string) (*table.Table, error) {
	return table.Read(r, name, job.Kinds())
}

// TestReadTable checks kind detection (with the number of layers of the SMI kinds) and the
// parsed values: empty cells and word columns are NaN, +Inf parses.
func TestReadTable(t *testing.T) {
	for _, tc := range []struct {
		header []string
		kind   table.Kind
		L      int
	}{
		{aimjob.SESchema.Header(0), table.SE, 0}, {aimjob.AMPSchema.Header(0), table.AMP, 0}, {aimjob.GDSchema.Header(0), table.GD, 0},
		{aimjob.AMPTraceSchema.Header(0), table.AMPTrace, 0}, {aimjob.GDTraceSchema.Header(0), table.GDTrace, 0},
		{aimjob.ERMSchema.Header(0), table.ERM, 0}, {aimjob.ERMSpectrumSchema.Header(0), table.ERMSpectrum, 0},
		{smijob.SMISESchema.Header(3), table.SMISE, 3}, {smijob.SMIAMPSchema.Header(1), table.SMIAMP, 1}, {smijob.SMIAMPTraceSchema.Header(2), table.SMIAMPTrace, 2},
		{smijob.SMISGDSchema.Header(4), table.SMISGD, 4}, {smijob.SMIThresholdsSchema.Header(3), table.SMIThresholds, 3}, {smijob.SMIThresholdsSchema.Header(1), table.SMIThresholds, 1},
	} {
		tab, err := readTable(strings.NewReader(strings.Join(tc.header, ",")+"\n"), "x.csv")
		if err != nil || tab.Kind != tc.kind || tab.L != tc.L || tab.Rows() != 0 {
			t.Errorf("header %v: %+v, %v; want %s with L = %d", tc.header, tab, err, tc.kind, tc.L)
		}
	}
	text := strings.Join(smijob.SMIThresholdsSchema.Header(2), ",") + "\n2,2,1,0.5,+Inf,0.25,\n"
	tab, err := readTable(strings.NewReader(text), "th.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(tab.V(0, "alpha_stability_1"), 1) || tab.V(0, "alpha_stability_2") != 0.25 || !math.IsNaN(tab.V(0, "alpha_conditional_1")) || tab.V(0, "c") != 0.5 {
		t.Errorf("values %v", tab.Values(0))
	}
	tab, err = readTable(strings.NewReader(strings.Join(aimjob.SESchema.Header(0), ",")+"\nhardmax-paper,2,0.5,,0,mp,,0.1,0.4,0.2,0.5,0,0.4,1.2,,,10,true,,false\n"), "se.csv")
	if err != nil {
		t.Fatal(err)
	}
	// An SE CSV from before noise, teacher, D, mmse_err, free_entropy and coexist (table.Added)
	// still plots, and reads as noiseless.
	old := "channel,T,rho,beta,alpha,alpha_bar,alpha_r,mmse,q,qhat,gen_error,gen_error_stderr,iterations,converged\n" +
		"softmax,2,0.5,1,0.1,0.4,0.2,0.5,1,2,,,10,true\n"
	if ot, err := readTable(strings.NewReader(old), "old.csv"); err != nil || ot.Kind != table.SE || ot.V(0, "mmse") != 0.5 || !math.IsNaN(ot.V(0, "free_entropy")) || ot.S(0, "noise") != "" {
		t.Errorf("old SE CSV: %+v, %v", ot, err)
	} else if _, err := plot.Build([]*table.Table{ot}, plot.Options{}); err != nil {
		t.Errorf("old SE CSV: plot: %v", err)
	}
	// An SMI SE CSV from before start, coexist, free_entropy and free_entropy_stderr still plots.
	oldSMI := "L,M,c,beta,alpha,Q11,Q22,Qerr11,Qerr22,qhat11,qhat22,gen_error,gen_error_stderr,gen_error_bo,gen_error_bo_stderr," +
		"gen_error_last_layer,gen_error_last_layer_stderr,samples,iterations,converged,inexact\n" +
		"2,2,1,1,0.5,0,0.77,0,0.01,0,3.3,0.18,0.001,0.17,0.001,0.18,0.001,4000,30,true,0\n"
	if ot, err := readTable(strings.NewReader(oldSMI), "old-smi.csv"); err != nil || ot.Kind != table.SMISE || ot.L != 2 || ot.V(0, "Q22") != 0.77 || !math.IsNaN(ot.V(0, "free_entropy")) {
		t.Errorf("old SMI SE CSV: %+v, %v", ot, err)
	} else if _, err := plot.Build([]*table.Table{ot}, plot.Options{}); err != nil {
		t.Errorf("old SMI SE CSV: plot: %v", err)
	}
	// The channel as the figure reads it: hardmax in the paper-compat form, T = 2, no beta.
	f, err := plot.Build([]*table.Table{tab}, plot.Options{})
	if err != nil || f.Title != "State evolution: hardmax, paper-compat, T = 2" || tab.V(0, "T") != 2 || !math.IsNaN(tab.V(0, "beta")) ||
		!math.IsNaN(tab.V(0, "converged")) || tab.S(0, "converged") != "true" {
		t.Errorf("channel info: title %q (%v), T %g, beta %g, converged %q", f.Title, err, tab.V(0, "T"), tab.V(0, "beta"), tab.S(0, "converged"))
	}
}

// FuzzReadTable checks that the reader never panics and either fails or returns a table whose
// every numeric cell is the number written (NaN for an empty cell), of a recognised kind.
func FuzzReadTable(f *testing.F) {
	f.Add([]byte(strings.Join(aimjob.SESchema.Header(0), ",") + "\nsoftmax,2,0.5,1,0,0.1,0.4,0.2,0.5,0,0.4,1.2,,,10,true\n"))
	f.Add([]byte(strings.Join(smijob.SMIAMPSchema.Header(2), ",") + "\n2,2,1,1,60,60,1,5,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,3,false,0.1\n"))
	f.Add([]byte(strings.Join(aimjob.ERMSchema.Header(0), ",") + "\n0.5,0.1,0,0,nuclear,1,2,0,0.7,2,1,0.3,0.2,1,true,0,9\n0.5,0.2,0,0.1,ridge,,,,,,,,,,false,,3\n"))
	f.Add([]byte(strings.Join(aimjob.ERMSpectrumSchema.Header(0), ",") + "\n0.5,0.3,0,0,nuclear,0,0.2,0.4\n0.5,0.3,0,0,ridge,-1,0.1,0\n"))
	f.Add([]byte("a,b\n1,2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := table.Read(bytes.NewReader(data), "fuzz.csv", job.Kinds())
		if err != nil {
			if tab != nil {
				t.Fatal("a table with an error")
			}
			return
		}
		if tab.Kind == "" {
			t.Fatalf("table %+v", tab)
		}
		for i := 0; i < tab.Rows(); i++ {
			row, vals := tab.Cells(i), tab.Values(i)
			if len(row) != len(tab.Header) || len(vals) != len(row) {
				t.Fatalf("row %d has %d cells for %d columns", i, len(row), len(tab.Header))
			}
			for j, cell := range row {
				v := vals[j]
				if cell == "" || tab.Word(j) {
					if !math.IsNaN(v) {
						t.Fatalf("row %d column %s: %q read as %g, want NaN", i, tab.Header[j], cell, v)
					}
					continue
				}
				want, err := strconv.ParseFloat(cell, 64)
				if err != nil {
					t.Fatalf("row %d column %s: %q accepted but is not a number", i, tab.Header[j], cell)
				}
				if v != want && !(math.IsNaN(v) && math.IsNaN(want)) {
					t.Fatalf("row %d column %s: %q read as %g", i, tab.Header[j], cell, v)
				}
			}
		}
		// Whatever the table, drawing it must not panic.
		if f, err := plot.Build([]*table.Table{tab}, plot.Options{}); err == nil && f == nil {
			t.Fatal("no figure and no error")
		}
	})
}

// TestWordColumns checks that the columns a reader keeps as words are exactly those the old
// reader listed by name (channel, converged, device, optimizer, finished), aim bench's
// algorithm and tokens, aim se's coexist, the precision of aim amp and aim gd, aim gd's
// uncentred and direct, aim erm's interpolating and the teacher of aim se, amp, gd and erm, in
// every kind, and aim erm's penalty (the regulariser's name; aim gd's penalty column is its
// value).
func TestWordColumns(t *testing.T) {
	for _, d := range job.Kinds() {
		want := map[string]bool{"channel": true, "converged": true, "device": true, "optimizer": true, "finished": true,
			"algorithm": true, "tokens": true, "coexist": true, "start": true, "precision": true, "uncentred": true, "interpolating": true,
			"direct": true, "teacher": true, "penalty": d.Kind == table.ERM || d.Kind == table.ERMSpectrum}
		h := d.Header(2)
		tab, err := table.Read(strings.NewReader(strings.Join(h, ",")+"\n"), "x.csv", []table.Def{d})
		if err != nil {
			t.Fatal(err)
		}
		for j, name := range h {
			if tab.Word(j) != want[name] {
				t.Errorf("%s: column %s is a word column: %v, want %v", d.Kind, name, tab.Word(j), want[name])
			}
		}
	}
}
