package job

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/aim/se"
	"github.com/aimtheory/aim/engine/smi"
	smiamp "github.com/aimtheory/aim/engine/smi/amp"
	smise "github.com/aimtheory/aim/engine/smi/se"
	"github.com/aimtheory/aim/engine/smi/sgd"
)

// validated returns c after Validate, failing the test on an error.
func validated[C interface{ Validate() error }](t *testing.T, c C) C {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRowsFormat checks the cells the schemas write for known rows: 12 significant digits, NaN
// as an empty cell, seconds with three decimals, the layers in order and the header beside.
func TestRowsFormat(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name         string
		header, row  []string
		wantH, wantR string
	}{
		{"se", SESchema.Header(0), SESchema.Row(&SERow{Channel: "hardmax-paper", T: 2, Rho: 0.5, Beta: nan, Alpha: 0.1, AlphaBar: 0.4, AlphaR: 0.2,
			MMSE: 1.0 / 3, MMSEErr: 2e-5, Q: nan, QHat: math.Inf(1), GenError: nan, GenErrorStderr: nan, Iterations: 7, Converged: true, FreeEntropy: nan}),
			"channel,T,rho,beta,noise,alpha,alpha_bar,alpha_r,mmse,mmse_err,q,qhat,gen_error,gen_error_stderr,iterations,converged,free_entropy,coexist",
			"hardmax-paper,2,0.5,,0,0.1,0.4,0.2,0.333333333333,2e-05,,+Inf,,,7,true,,false"},
		{"amp", AMPSchema.Header(0), AMPSchema.Row(&AMPRow{Channel: "softmax", T: 3, Rho: 1, Beta: 2, D: 30, N: 90, R: 30, Alpha: 0.1, AlphaBar: 1,
			Seed: 1 << 40, Error: nan, SEMMSE: 0.25, Iterations: 12, Distance: math.Inf(1), Seconds: 1.23456, Device: "cpu"}),
			"channel,T,rho,beta,noise,D,N,R,alpha,alpha_bar,seed,error,se_mmse,iterations,distance,converged,seconds,device",
			"softmax,3,1,2,0,30,90,30,0.1,1,1099511627776,,0.25,12,+Inf,false,1.235,cpu"},
		{"smi se L = 3", SMISESchema.Header(3), SMISESchema.Row(&SMISERow{L: 3, M: 2, C: 1, Beta: 1, Alpha: 0.5, Q: []float64{0.1, 0.2, 0.3},
			QErr: []float64{0, 0.002, nan}, QHat: []float64{1, 2, 3}, GenError: 0.5, GenStderr: 0.01, GenBO: 0.4, BOStderr: 0.005, GenLast: nan, LastStderr: nan,
			Samples: 8000, Iterations: 4, Converged: true, Inexact: 2, Start: "informed", Coexist: true, FreeEntropy: -1.25, FreeStderr: nan}),
			"L,M,c,beta,alpha,Q11,Q22,Q33,Qerr11,Qerr22,Qerr33,qhat11,qhat22,qhat33,gen_error,gen_error_stderr,gen_error_bo,gen_error_bo_stderr," +
				"gen_error_last_layer,gen_error_last_layer_stderr,samples,iterations,converged,inexact,start,coexist,free_entropy,free_entropy_stderr",
			"3,2,1,1,0.5,0.1,0.2,0.3,0,0.002,,1,2,3,0.5,0.01,0.4,0.005,,,8000,4,true,2,informed,true,-1.25,"},
		{"smi thresholds L = 3", SMIThresholdsSchema.Header(3), SMIThresholdsSchema.Row(&SMIThresholdsRow{L: 3, M: 2, Beta: 1, C: 0.5,
			Stability: []float64{math.Inf(1), 0.25, 0.2}, Conditional: []float64{nan, 0.75}}),
			"L,M,beta,c,alpha_stability_1,alpha_stability_2,alpha_stability_3,alpha_conditional_1,alpha_conditional_2",
			"3,2,1,0.5,+Inf,0.25,0.2,,0.75"},
		{"smi amp trace L = 1", SMIAMPTraceSchema.Header(1), SMIAMPTraceSchema.Row(&SMIAMPTraceRow{Alpha: 1, Seed: 5, Iteration: 3, Q: []float64{0.5},
			AbsM: []float64{0.4}, MNorm: []float64{0.8}, Cos: []float64{0.9}, EGen: 0.1, Step: 1e-9, Distance: 4e-8, Damping: 0.6, QuadInexact: 1, QuadFailed: 0, QuadSeconds: 0.0004, Seconds: 2}),
			"alpha,seed,iteration,Q11,absM11,m11,cos1,e_gen,step,distance,damping,quad_inexact,quad_failed,quad_seconds,seconds",
			"1,5,3,0.5,0.4,0.8,0.9,0.1,1e-09,4e-08,0.6,1,0,0.000,2.000"},
	} {
		if got := strings.Join(tc.header, ","); got != tc.wantH {
			t.Errorf("%s: header %s, want %s", tc.name, got, tc.wantH)
		}
		if got := strings.Join(tc.row, ","); got != tc.wantR {
			t.Errorf("%s: row %s, want %s", tc.name, got, tc.wantR)
		}
	}
}

// TestValidate checks that every job refuses bad configurations with the messages of the
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
		{func() *SMISEConfig { c := NewSMISEConfig(); c.M = 3; return c }(), "M = 2 only"},
		{func() *SMISEConfig { c := NewSMISEConfig(); c.Damping = 1.5; return c }(), "--damping 1.5: need 0 <= damping < 1, the weight on the old iterate (0: undamped), or auto"},
		{func() *SMISEConfig { c := NewSMISEConfig(); c.GenInner = 1; return c }(), "--gen-inner 1: need at least 2"},
		{func() *SMISEConfig { c := NewSMISEConfig(); c.Replicates = 0; return c }(), "--replicates 0: need 1 to 1024"},
		{func() *SMISEConfig { c := NewSMISEConfig(); c.MCError = -1; return c }(), "--mc-error -1: need a standard error > 0, or 0"},
		{func() *SMISEConfig { c := NewSMISEConfig(); c.MCError, c.Replicates = 1e-3, 1; return c }(), "--mc-error 0.001 needs --replicates >= 2"},
		{func() *SMISEConfig { c := NewSMISEConfig(); c.MCError, c.MaxSamples = 1e-3, 100; return c }(), "--max-samples 100 is below --samples 4000"},
		{func() *SMIThresholdsConfig { c := NewSMIThresholdsConfig(); c.Hi = 0; return c }(), "--hi 0: need a positive, finite alpha"},
		{func() *SMIAMPConfig { c := NewSMIAMPConfig(); c.D, c.Alpha = 10, "0.05"; return c }(), "N = floor(alpha D) = 0"},
		{func() *SMISGDConfig { c := NewSMISGDConfig(); c.StudentSeed = -2; return c }(), "--student-seed -2: need -1 (the data seed) or a seed >= 0"},
		{&PlotConfig{Files: []string{"a.csv"}, Options: plot.Options{X: "beta", Axes: "auto"}}, `--x "beta": want alpha, alpha-bar, alpha-rho or auto`},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !IsInput(err) {
			t.Errorf("%T: %v; want bad input saying %q", tc.cfg, err, tc.want)
		}
	}
	// The defaults are valid, and resolved: amp's iteration cap by channel, se's alpha grid.
	a := validated(t, NewAMPConfig())
	h := NewAMPConfig()
	h.Channel = "hardmax"
	if validated(t, h); a.MaxIter != 100 || h.MaxIter != 500 {
		t.Errorf("amp iteration caps %d (softmax), %d (hardmax), want 100 and 500", a.MaxIter, h.MaxIter)
	}
	if s := validated(t, NewSEConfig()); s.Alpha != "0.001:0.25:128" || len(s.Alphas()) != 128 || !slices.Equal(s.Rhos(), []float64{0.5}) {
		t.Errorf("se defaults: alpha %q (%d points), rho %v", s.Alpha, len(s.Alphas()), s.Rhos())
	}
}

// TestRunSE checks the rows of RunSE against the SE solver and the generalisation error at the
// point's own seed, the thresholds against the solver, and that a point's row does not depend
// on the grid it is solved in.
func TestRunSE(t *testing.T) {
	c := NewSEConfig()
	c.Rho, c.Alpha, c.GenSamples, c.Seed, c.Workers = []string{"0.5", "2"}, "0.05,0.3", 200, 7, 2
	res, err := RunSE(validated(t, c), Env{})
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
	alone, err := RunSE(validated(t, one), Env{})
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
	res, err := RunAMP(validated(t, c), Env{})
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
	res, err := RunGD(validated(t, c), Env{})
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

// TestSMISEQuadBudget: --quad-max-eval reaches the state evolution's channel integrals: the
// job's Q equals the engine's at that budget and differs from the default budget's (at 200
// evaluations the L = 2 integrals stop far from their tolerance).
func TestSMISEQuadBudget(t *testing.T) {
	sc := NewSMISEConfig()
	sc.Alpha, sc.Samples, sc.MaxIter, sc.Tol, sc.GenSamples, sc.Seed, sc.Workers, sc.QuadMaxEval = "0.5", 16, 80, 1e-3, 0, 3, 1, 200
	res, err := RunSMISE(validated(t, sc), Env{})
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	ch, _ := smi.NewDeep(2, 2, 1, 1)
	q := func(budget int) []float64 {
		o := smise.DefaultOptions(2)
		o.Samples, o.MaxIter, o.Tol, o.Seed, o.Workers, o.QuadMaxEval = 16, 80, 1e-3, 3, 1, budget
		pts, err := smise.SolveCurve(ch, []float64{0.5}, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pts[0].Q
	}
	if got, want, def := res.Rows[0].Q, q(200), q(0); !slices.Equal(got, want) || slices.Equal(got, def) {
		t.Errorf("Q %v with --quad-max-eval 200: engine %v at that budget, %v at the default", got, want, def)
	}
}

// TestSMISEGenErrorsOutside checks that a row whose Q leaves [0, 1] (only --at's Newton step
// can) keeps its Q with no e_gen and a warning, while the next row's e_gen is computed.
func TestSMISEGenErrorsOutside(t *testing.T) {
	sc := NewSMISEConfig()
	sc.Alpha, sc.GenSamples, sc.Workers = "1", 64, 1
	sc = validated(t, sc)
	points := []smise.Point{{Alpha: 1, Q: []float64{-0.2, 0.5}, Converged: true}, {Alpha: 1, Q: []float64{0.2, 0.5}, Converged: true}}
	rows := make([]SMISERow, len(points))
	for i := range rows {
		rows[i].GenError, rows[i].GenBO, rows[i].GenLast = math.NaN(), math.NaN(), math.NaN()
	}
	var log strings.Builder
	if err := sc.genErrors(points, rows, noProgress{}, Env{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(rows[0].GenError) || !math.IsNaN(rows[0].GenBO) || !strings.Contains(log.String(), "Q = -0.2, 0.5 leaves [0, 1]") {
		t.Errorf("Q outside [0, 1]: e_gen %v, e_BO %v, log %q", rows[0].GenError, rows[0].GenBO, log.String())
	}
	want, _, err := smise.GenError(sc.ch, points[1].Q, smise.GenErrorOptions{Samples: 64, Inner: sc.GenInner, Seed: sc.Seed, Workers: 1})
	if err != nil || rows[1].GenError != want {
		t.Errorf("Q inside [0, 1]: e_gen %v, engine %v (%v)", rows[1].GenError, want, err)
	}
}

// TestSMIAMPDraws checks GAMP's draws per sampled integral as the job passes them to the
// engine: the engine's default for the run's L (1000 at L = 3, 4000 at L = 4), --draws where
// given, and none with --cubature.
func TestSMIAMPDraws(t *testing.T) {
	for _, c := range []struct {
		L, draws int
		cubature bool
		want     int
	}{{3, 0, false, 1000}, {4, 0, false, 4000}, {4, 600, false, 600}, {3, 0, true, 0}} {
		ac := NewSMIAMPConfig()
		ac.L, ac.Draws, ac.Cubature = c.L, c.draws, c.cubature
		if got := validated(t, ac).options().Draws; got != c.want {
			t.Errorf("L = %d, --draws %d, --cubature %v: %d draws, want %d", c.L, c.draws, c.cubature, got, c.want)
		}
	}
}

// TestRunSMI checks the SMI jobs' rows against the engine: the SE curve and its e_gen, GAMP's
// final overlaps with the teacher-normalised m_ll, and every SGD record.
func TestRunSMI(t *testing.T) {
	sc := NewSMISEConfig()
	sc.Alpha, sc.Samples, sc.MaxIter, sc.Tol, sc.GenSamples, sc.Seed, sc.Workers = "0.3", 32, 40, 1e-3, 300, 3, 1
	ses, err := RunSMISE(validated(t, sc), Env{})
	if err != nil || len(ses.Rows) != 1 {
		t.Fatalf("%+v, %v", ses, err)
	}
	ch, _ := smi.NewDeep(2, 2, 1, 1)
	o := smise.DefaultOptions(2)
	o.Samples, o.MaxIter, o.Tol, o.Seed, o.Workers = 32, 40, 1e-3, 3, 1
	pts, err := smise.SolveCurve(ch, []float64{0.3}, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	go3 := smise.GenErrorOptions{Samples: 300, Inner: 8, Seed: 3, Workers: 1}
	g, _, _ := smise.GenError(ch, pts[0].Q, go3)
	bo, _, _ := smise.GenErrorBO(ch, pts[0].Q, go3)
	gl, _, _ := smise.GenError(ch, []float64{0, pts[0].Q[1]}, go3)
	if r := ses.Rows[0]; !slices.Equal(r.Q, pts[0].Q) || !slices.Equal(r.QErr, pts[0].QErr) || r.Samples != pts[0].Samples || r.Iterations != pts[0].Iterations ||
		r.GenError != g || r.GenBO != bo || r.GenLast != gl || !(r.GenBO < r.GenError) {
		t.Errorf("SE row %+v; engine %+v, e_gen %v, e_BO %v, last layer %v", r, pts[0], g, bo, gl)
	}

	ac := NewSMIAMPConfig()
	ac.D, ac.Alpha, ac.Seeds, ac.Seed, ac.Iters, ac.TestSamples, ac.Trace = 40, "1", 1, 5, 3, 50, ""
	amps, err := RunSMIAMP(validated(t, ac), Env{})
	if err != nil || len(amps.Rows) != 1 || len(amps.Trace) != 3 {
		t.Fatalf("%+v, %v", amps, err)
	}
	data, _ := smi.Generate(smi.Params{D: 40, Alpha: 1, M: 2, L: 2, C: 1, Beta: 1, Seed: 5})
	ao := smiamp.DefaultOptions(2)
	ao.MaxIter, ao.TestSamples = 3, 50
	want, err := smiamp.Run(data, ao)
	if err != nil {
		t.Fatal(err)
	}
	last := want.Trace[len(want.Trace)-1]
	r := amps.Rows[0]
	for l := 0; l < 2; l++ {
		var wn float64
		for _, v := range data.W[l*40 : (l+1)*40] {
			wn += v * v / 40
		}
		if r.Q[l] != last.Q[l] || r.AbsM[l] != last.M[l] || r.MNorm[l] != last.M[l]/wn || r.Cos[l] != last.Cos[l] {
			t.Errorf("AMP layer %d: row %+v, engine %+v (norm %v)", l+1, r, last, wn)
		}
	}
	if r.EGen != last.EGen || r.N != 40 || r.Iterations != 3 {
		t.Errorf("AMP row %+v", r)
	}

	gc := NewSMISGDConfig()
	gc.D, gc.Alpha, gc.Epochs, gc.Seeds, gc.TestSamples = 20, 5, 2, 2, 20
	sgds, err := RunSMISGD(validated(t, gc), Env{})
	if err != nil || len(sgds.Last) != 2 || sgds.Err() != nil {
		t.Fatalf("%+v, %v", sgds, err)
	}
	k := 0
	for s, seed := range []uint64{1, 2} {
		data, _ := smi.Generate(smi.Params{D: 20, Alpha: 5, M: 2, L: 2, C: 1, Beta: 1, Seed: seed})
		so := sgd.DefaultOptions()
		so.Epochs, so.TestSamples = 2, 20
		want, err := sgd.Run(data, so)
		if err != nil {
			t.Fatal(err)
		}
		for _, pt := range want.Trace {
			if r := sgds.Rows[k]; r.Seed != seed || r.Update != pt.Update || !slices.Equal(r.Cos, pt.Cos) || r.Loss != pt.Loss || r.TestError != pt.TestError {
				t.Errorf("SGD record %d %+v, engine %+v", k, r, pt)
			}
			k++
		}
		if sgds.Last[s] != k-1 || sgds.Updates[s] != want.Updates {
			t.Errorf("run %d: last record %d, updates %d; want %d, %d", s, sgds.Last[s], sgds.Updates[s], k-1, want.Updates)
		}
	}
}

// TestSMISGDDiverged checks that a diverged SGD run is a failed run, not an error: its records
// up to the divergence are kept, and the result's error says which run diverged.
func TestSMISGDDiverged(t *testing.T) {
	c := NewSMISGDConfig()
	c.D, c.Alpha, c.Epochs, c.LR, c.TestSamples = 20, 5, 1, 1e300, 0
	res, err := RunSMISGD(validated(t, c), Env{})
	if err != nil {
		t.Fatalf("a diverged run stops the job: %v", err)
	}
	if len(res.Failed) != 1 || len(res.Rows) < 1 || res.Rows[0].Update != 0 || res.Err() == nil ||
		!strings.Contains(res.Err().Error(), "1 of 1 runs diverged (their records up to the divergence are written)") {
		t.Errorf("failed %v, %d records, error %v", res.Failed, len(res.Rows), res.Err())
	}
}

// TestCheckSMISETable checks the SE table of `aim smi amp --se`: it is read by the one table
// reader, and its L, M, c and beta must be the command's on every row.
func TestCheckSMISETable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "se.csv")
	os.WriteFile(path, []byte(strings.Join(SMISESchema.Header(2), ",")+"\n"+
		"2,2,1,1,1.2,0.8,0.99,,,,,,,,,,,4000,10,true,0,uninformed,false,-1.6,0.04\n2,2,1,1,0.5,,,,,,,,,,,,,4000,200,false,0,uninformed,false,,\n"+
		"2,2,1,1,0.3,0,0.1,,,,,,,,,,,4000,10,true,0,both,false,-0.9,0.01\n"), 0o644)
	tab, err := ReadTable(path)
	if err != nil || tab.Kind != table.SMISE || tab.Rows() != 3 || tab.V(0, "Q22") != 0.99 {
		t.Fatalf("SE table %+v, %v", tab, err)
	}
	if err := checkSMISETable(tab, &SMI{L: 2, M: 2, C: 1, Beta: 1}); err != nil {
		t.Errorf("the command's own table: %v", err)
	}
	if err := checkSMISETable(tab, &SMI{L: 2, M: 2, C: 0.5, Beta: 1}); err == nil || !strings.Contains(err.Error(), "line 2: c = 1, the command has c = 0.5") {
		t.Errorf("another c: %v", err)
	}
	if err := checkSMISETable(tab, &SMI{L: 3, M: 2, C: 1, Beta: 1}); err == nil || !strings.Contains(err.Error(), `no column "Q33"`) {
		t.Errorf("another L: %v", err)
	}
}

// TestFailures checks the message of failed rows, which the sweep's journal records.
func TestFailures(t *testing.T) {
	if err := Failures(nil, 3, "runs diverged"); err != nil {
		t.Errorf("no failures: %v", err)
	}
	err := Failures([]string{"rho 0.5 alpha 0.1 seed 3: x", "rho 1 alpha 0.1 seed 3: y"}, 4, "runs diverged")
	want := "2 of 4 runs diverged (written with converged=false and no values):\n  rho 0.5 alpha 0.1 seed 3: x\n  rho 1 alpha 0.1 seed 3: y"
	if err == nil || err.Error() != want || IsInput(err) {
		t.Errorf("%v, want %q (not bad input)", err, want)
	}
	if e := Inputf("x %d", 1); !IsInput(e) || !IsInput(errors.Join(e)) || e.Error() != "x 1" {
		t.Errorf("Inputf: %v", e)
	}
}
