package aimjob

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/job/jobtest"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/aim/se"
)

// TestRowsFormat checks the cells the AIM schemas write for known rows: 12 significant digits, NaN
// as an empty cell, seconds with three decimals, the layers in order and the header beside.
func TestRowsFormat(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name         string
		header, row  []string
		wantH, wantR string
	}{
		{"se", SESchema.Header(0), SESchema.Row(&SERow{Channel: "hardmax-paper", T: 2, Rho: 0.5, Beta: nan, Teacher: "mp", D: nan, Alpha: 0.1, AlphaBar: 0.4, AlphaR: 0.2,
			MMSE: 1.0 / 3, MMSEErr: 2e-5, Q: nan, QHat: math.Inf(1), GenError: nan, GenErrorStderr: nan, Iterations: 7, Converged: true, FreeEntropy: nan}),
			"channel,T,rho,beta,noise,teacher,D,alpha,alpha_bar,alpha_r,mmse,mmse_err,q,qhat,gen_error,gen_error_stderr,iterations,converged,free_entropy,coexist",
			"hardmax-paper,2,0.5,,0,mp,,0.1,0.4,0.2,0.333333333333,2e-05,,+Inf,,,7,true,,false"},
		{"amp", AMPSchema.Header(0), AMPSchema.Row(&AMPRow{Channel: "softmax", T: 3, Rho: 1, Beta: 2, Teacher: "mp", D: 30, N: 90, R: 30, Alpha: 0.1, AlphaBar: 1,
			Seed: 1 << 40, Error: nan, SEMMSE: 0.25, Iterations: 12, Distance: math.Inf(1), Seconds: 1.23456, Device: "cpu", Precision: "tf32"}),
			"channel,T,rho,beta,noise,weight_decay,teacher,D,N,R,alpha,alpha_bar,seed,error,se_mmse,iterations,distance,converged,seconds,device,precision",
			"softmax,3,1,2,0,0,mp,30,90,30,0.1,1,1099511627776,,0.25,12,+Inf,false,1.235,cpu,tf32"},
	} {
		if got := strings.Join(tc.header, ","); got != tc.wantH {
			t.Errorf("%s: header %s, want %s", tc.name, got, tc.wantH)
		}
		if got := strings.Join(tc.row, ","); got != tc.wantR {
			t.Errorf("%s: row %s, want %s", tc.name, got, tc.wantR)
		}
	}
}

// TestValidate checks that every AIM job refuses bad configurations with the messages of the
// command line, as bad input.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  interface{ Validate() error }
		want string
	}{
		{func() *SEConfig { c := NewSEConfig(); c.Rho = []string{"0.5", "-1"}; return c }(), "--rho -1: need rho > 0"},
		{func() *SEConfig { c := NewSEConfig(); c.Alpha, c.AlphaGiven = " ", true; return c }(), "--alpha: empty grid"},
		{func() *SEConfig { c := NewSEConfig(); c.Channel, c.T = "hardmax", 5; return c }(), "no state-evolution table for T = 5"},
		{func() *SEConfig { c := NewSEConfig(); c.Channel, c.T, c.Threshold = "hardmax", 7, true; return c }(), "--T 7, the largest supported is 6"},
		{func() *SEConfig { c := NewSEConfig(); c.GenSamples = 1; return c }(), "--gen-samples 1: need 0 (skip) or at least 2"},
		{func() *SEConfig { c := NewSEConfig(); c.Out = "x.txt"; return c }(), `--out "x.txt": the results file must end in .csv`},
		{func() *AMPConfig { c := NewAMPConfig(); c.D = 1; return c }(), "--D 1: need D >= 2"},
		{func() *AMPConfig { c := NewAMPConfig(); c.D, c.Alpha = 10, "0.001"; return c }(), "N = floor(alpha D^2) = 0"},
		{func() *AMPConfig { c := NewAMPConfig(); c.Damping = 1; return c }(), "--damping 1: need 0 <= damping < 1"},
		{func() *AMPConfig { c := NewAMPConfig(); c.Plot = "a.gif"; return c }(), "unknown format"},
		{func() *GDConfig { c := NewGDConfig(); c.Channel = "hardmax"; return c }(), "hardmax students are not offered"},
		{func() *GDConfig { c := NewGDConfig(); c.Optimizer = "sgd"; return c }(), `--optimizer "sgd": want adam or gd`},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !job.IsInput(err) {
			t.Errorf("%T: %v; want bad input saying %q", tc.cfg, err, tc.want)
		}
	}
	// The defaults are valid, and resolved: amp's iteration cap by channel, se's alpha grid.
	a := jobtest.Validated(t, NewAMPConfig())
	h := NewAMPConfig()
	h.Channel = "hardmax"
	if jobtest.Validated(t, h); a.MaxIter != 100 || h.MaxIter != 500 {
		t.Errorf("amp iteration caps %d (softmax), %d (hardmax), want 100 and 500", a.MaxIter, h.MaxIter)
	}
	if s := jobtest.Validated(t, NewSEConfig()); s.Alpha != "0.001:0.25:128" || len(s.Alphas()) != 128 || !slices.Equal(s.Rhos(), []float64{0.5}) {
		t.Errorf("se defaults: alpha %q (%d points), rho %v", s.Alpha, len(s.Alphas()), s.Rhos())
	}
}

// TestRunSE checks the rows of RunSE against the SE solver and the generalisation error at the
// point's own seed, the thresholds against the solver, and that a point's row does not depend
// on the grid it is solved in.
func TestRunSE(t *testing.T) {
	c := NewSEConfig()
	c.Rho, c.Alpha, c.GenSamples, c.Seed, c.Workers = []string{"0.5", "2"}, "0.05,0.3", 200, 7, 2
	res, err := RunSE(jobtest.Validated(t, c), job.Env{})
	if err != nil || len(res.Rows) != 4 || len(res.Failed) != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	ch, _ := aim.NewSoftmax(2, 1)
	for _, r := range res.Rows {
		p, err := se.Solve(ch, r.Rho, r.AlphaR*r.Rho, se.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		g, gs, err := se.GenError(ch, p.Q, p.MMSE, se.GenErrorOptions{Samples: 200, Inner: 8, Seed: PointSeed(7, r.Rho, r.AlphaR), Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.MMSE != p.MMSE || r.Iterations != p.Iterations || r.GenError != g || r.GenErrorStderr != gs || r.AlphaBar != 4*r.Alpha || r.Channel != "softmax" {
			t.Errorf("row %+v; solver mmse %v after %d, e_gen %v ± %v", r, p.MMSE, p.Iterations, g, gs)
		}
	}
	if a := res.Thresholds.AlphaPR["0.5"]; math.Abs(a-0.1875) > 1e-6 || res.Thresholds.AlphaPRCounting["0.5"] != se.AlphaPRCounting(0.5, 4) {
		t.Errorf("thresholds %+v", res.Thresholds)
	}
	// The point (rho 2, alpha 0.3) alone gives the same row.
	one := NewSEConfig()
	one.Rho, one.Alpha, one.GenSamples, one.Seed, one.Workers = []string{"2"}, "0.3", 200, 7, 1
	alone, err := RunSE(jobtest.Validated(t, one), job.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := SESchema.Row(&alone.Rows[0]), SESchema.Row(&res.Rows[3]); !slices.Equal(got, want) {
		t.Errorf("the point alone: %v; in the grid: %v", got, want)
	}
}

// TestRunAMP checks every row and the trace of RunAMP against GAMP-RIE run by the engine with
// the same seed.
func TestRunAMP(t *testing.T) {
	c := NewAMPConfig()
	c.Device, c.D, c.Alpha, c.Seeds, c.Seed, c.MaxIter = "cpu", 24, "0.1,0.2", 2, 3, 12
	res, err := RunAMP(jobtest.Validated(t, c), job.Env{})
	if err != nil || len(res.Rows) != 4 || !strings.HasPrefix(res.Note, "cpu: ") {
		t.Fatalf("%+v, %v", res, err)
	}
	dev := cpu.New(0)
	ch, _ := aim.NewSoftmax(2, 1)
	k := 0
	for _, r := range res.Rows {
		data, err := aim.Generate(dev, aim.Params{D: 24, Alpha: r.Alpha, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: r.Seed})
		if err != nil {
			t.Fatal(err)
		}
		o := amp.DefaultOptions()
		o.MaxIter = 12
		want, err := amp.Run(dev, data, o)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := se.Solve(ch, 0.5, r.Alpha, se.DefaultOptions())
		if r.Error != want.Error || r.Iterations != want.Iterations || r.Converged != want.Converged || r.SEMMSE != p.MMSE ||
			r.N != data.P.N() || r.R != data.P.R() || r.Device != "cpu" {
			t.Errorf("row %+v; engine error %v after %d, SE %v", r, want.Error, want.Iterations, p.MMSE)
		}
		for _, it := range want.Trace {
			if tr := res.Trace[k]; tr.Seed != r.Seed || tr.Alpha != r.Alpha || tr.Iter != it.Iter || tr.Error != it.Error || tr.Delta != it.Delta {
				t.Errorf("trace row %d %+v, engine %+v", k, tr, it)
			}
			k++
		}
	}
	if k != len(res.Trace) {
		t.Errorf("trace has %d rows, the engine ran %d iterations", len(res.Trace), k)
	}
	// Seeds: run s of every alpha uses seed Seed + s.
	if got := []uint64{res.Rows[0].Seed, res.Rows[1].Seed, res.Rows[2].Seed, res.Rows[3].Seed}; !slices.Equal(got, []uint64{3, 4, 3, 4}) {
		t.Errorf("seeds %v", got)
	}
}

// TestRunGD checks the rows of RunGD against the engine's training with the same seed.
func TestRunGD(t *testing.T) {
	c := NewGDConfig()
	c.Device, c.D, c.Alpha, c.Seeds, c.Restarts, c.Steps, c.R = "cpu", 16, "0.2", 2, 2, 15, 5
	res, err := RunGD(jobtest.Validated(t, c), job.Env{})
	if err != nil || len(res.Rows) != 2 {
		t.Fatalf("%+v, %v", res, err)
	}
	dev := cpu.New(0)
	o := gd.DefaultOptions()
	o.Steps, o.Restarts, o.R = 15, 2, 5
	for _, r := range res.Rows {
		data, err := aim.Generate(dev, aim.Params{D: 16, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: r.Seed})
		if err != nil {
			t.Fatal(err)
		}
		want, err := gd.Run(dev, data, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Error != want.Error || r.ErrorSingle != mean(want.SingleErrors) || r.FinalLoss != mean(want.FinalLoss) || r.RStudent != 5 ||
			r.R != 8 || !r.Finished || r.Optimizer != "adam" {
			t.Errorf("row %+v; engine %v, %v", r, want.Error, want.SingleErrors)
		}
	}
}
