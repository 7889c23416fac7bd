package smijob

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/job/jobtest"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/smi"
	smiamp "github.com/aimtheory/aim/engine/smi/amp"
	smise "github.com/aimtheory/aim/engine/smi/se"
	"github.com/aimtheory/aim/engine/smi/sgd"
)

// TestRowsFormat checks the cells the SMI schemas write for known rows: 12 significant digits, NaN
// as an empty cell, seconds with three decimals, the layers in order and the header beside.
func TestRowsFormat(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name         string
		header, row  []string
		wantH, wantR string
	}{
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

// TestValidate checks that every SMI job refuses bad configurations with the messages of the
// command line, as bad input.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  interface{ Validate() error }
		want string
	}{
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
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !job.IsInput(err) {
			t.Errorf("%T: %v; want bad input saying %q", tc.cfg, err, tc.want)
		}
	}
}

// TestSMISEQuadBudget: --quad-max-eval reaches the state evolution's channel integrals: the
// job's Q equals the engine's at that budget and differs from the default budget's (at 200
// evaluations the L = 2 integrals stop far from their tolerance).
func TestSMISEQuadBudget(t *testing.T) {
	sc := NewSMISEConfig()
	sc.Alpha, sc.Samples, sc.MaxIter, sc.Tol, sc.GenSamples, sc.Seed, sc.Workers, sc.QuadMaxEval = "0.5", 16, 80, 1e-3, 0, 3, 1, 200
	res, err := RunSMISE(jobtest.Validated(t, sc), job.Env{})
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
	sc = jobtest.Validated(t, sc)
	points := []smise.Point{{Alpha: 1, Q: []float64{-0.2, 0.5}, Converged: true}, {Alpha: 1, Q: []float64{0.2, 0.5}, Converged: true}}
	rows := make([]SMISERow, len(points))
	for i := range rows {
		rows[i].GenError, rows[i].GenBO, rows[i].GenLast = math.NaN(), math.NaN(), math.NaN()
	}
	var log strings.Builder
	if err := sc.genErrors(points, rows, noProgress{}, job.Env{Log: &log}); err != nil {
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
		if got := jobtest.Validated(t, ac).options().Draws; got != c.want {
			t.Errorf("L = %d, --draws %d, --cubature %v: %d draws, want %d", c.L, c.draws, c.cubature, got, c.want)
		}
	}
}

// TestRunSMI checks the SMI jobs' rows against the engine: the SE curve and its e_gen, GAMP's
// final overlaps with the teacher-normalised m_ll, and every SGD record.
func TestRunSMI(t *testing.T) {
	sc := NewSMISEConfig()
	sc.Alpha, sc.Samples, sc.MaxIter, sc.Tol, sc.GenSamples, sc.Seed, sc.Workers = "0.3", 32, 40, 1e-3, 300, 3, 1
	ses, err := RunSMISE(jobtest.Validated(t, sc), job.Env{})
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
	amps, err := RunSMIAMP(jobtest.Validated(t, ac), job.Env{})
	if err != nil || len(amps.Rows) != 1 || len(amps.Trace) != 3 {
		t.Fatalf("%+v, %v", amps, err)
	}
	data, _ := smi.Generate(smi.Params{D: 40, Alpha: 1, M: 2, L: 2, C: 1, Beta: 1, Seed: 5})
	ao := smiamp.DefaultOptions(2)
	ao.MaxIter, ao.TestSamples = 3, 50
	ao.Damping = 1 - (1 - ao.Damping) // the command line's default (SMIAMPConfig.Validate)
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
	sgds, err := RunSMISGD(jobtest.Validated(t, gc), job.Env{})
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
	res, err := RunSMISGD(jobtest.Validated(t, c), job.Env{})
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
	tab, err := job.ReadTable(path)
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

// noProgress is a Progress that counts nothing.
type noProgress struct{}

func (noProgress) Add(int) {}
func (noProgress) Finish() {}
