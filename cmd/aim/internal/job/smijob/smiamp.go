package smijob

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/smi"
	smiamp "github.com/aimtheory/aim/engine/smi/amp"
)

// SMIAMPConfig is the configuration of `aim smi amp`: GAMP on SMI teachers at dimension D, one
// run per (alpha, seed).
type SMIAMPConfig struct {
	SMI
	D            int
	Alpha        string // the alpha grid
	Seeds        int
	Seed         uint64  // run s uses seed Seed + s
	Iters        int     // GAMP iterations (at most)
	Damping      float64 // theta in [0, 1), the weight on the old iterate; NaN: the engine's (Validate sets it)
	Epsilon      float64 // ridge of the channel variance
	Noise        float64 // variance of the noise on the teacher's pre-activations (smi.Params.Noise)
	Tol          float64 // stop early below this step (0: never)
	Init         string  // the start: random, consistent, informed or zero (smiamp.Options.Init)
	InitScale    float64 // the scale of the random What_0, or the informed start's overlap q
	TestSamples  int     // fresh samples of e_gen at each iteration (0: none)
	QuadMaxEval  int     // the channel quadrature's evaluation budget per sample (0: smi.DefaultDeepMaxEval)
	SMIIntegrals         // L = 3: importance sampling (--draws) or the cubature
	Trace        string  // a CSV of every iteration of every run ("" for none, auto: beside Out, TracePath)
	SE           string  // an `aim smi se` CSV whose Q_ll the figure draws

	alphas  []float64
	seTable *table.Table
}

// NewSMIAMPConfig returns the configuration of `aim smi amp` with no flag set.
func NewSMIAMPConfig() *SMIAMPConfig {
	o := smiamp.DefaultOptions(2) // the fields read here are the same at every L
	return &SMIAMPConfig{SMI: defaultSMI("amp"), D: 1000, Alpha: "0.2,0.5,0.9,1.2,1.5", Seeds: 4, Seed: 1, Iters: o.MaxIter,
		Damping: math.NaN(), Epsilon: o.Epsilon, Tol: o.Tol, Init: o.Init, InitScale: o.InitScale, TestSamples: o.TestSamples, Trace: "auto",
		SMIIntegrals: SMIIntegrals{Device: DefaultSMIDevice}}
}

// Validate checks the configuration, parses its grid and reads the SE CSV of c.SE; every
// problem is bad input.
func (c *SMIAMPConfig) Validate() error {
	var err error
	if _, c.alphas, err = c.theory(c.Alpha); err != nil {
		return err
	}
	if math.IsNaN(c.Damping) {
		// The engine's theta (the same at every L) as the command line has always passed it:
		// through the weight on the new iterate and back, 1 - (1 - theta), which rounds the
		// engine's 0.2 to 0.19999999999999996; the written numbers depend on that last bit.
		c.Damping = 1 - (1 - smiamp.DefaultOptions(2).Damping)
	}
	switch {
	case c.D < 2:
		return job.Inputf("--D %d: need D >= 2", c.D)
	case c.Seeds < 1:
		return job.Inputf("--seeds %d: need at least 1", c.Seeds)
	case c.Iters < 1:
		return job.Inputf("--max-iter %d: need at least 1", c.Iters)
	case !(c.Damping >= 0 && c.Damping < 1):
		return job.Inputf("--damping %g: need 0 <= damping < 1, the weight on the old iterate (0: undamped)", c.Damping)
	case !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 0):
		return job.Inputf("--epsilon %g: need 0 <= epsilon < inf", c.Epsilon)
	case !(c.Noise >= 0) || math.IsInf(c.Noise, 0):
		return job.Inputf("--noise %g: need 0 <= noise < inf", c.Noise)
	case !(c.Tol >= 0) || math.IsInf(c.Tol, 0):
		return job.Inputf("--tol %g: need 0 <= tol < inf", c.Tol)
	case c.TestSamples < 0:
		return job.Inputf("--gen-samples %d: need 0 (none) or more", c.TestSamples)
	case c.Init != "random" && c.Init != "consistent" && c.Init != "informed" && c.Init != "zero":
		return job.Inputf("--init %q: need random, consistent, informed or zero", c.Init)
	case !(c.InitScale > 0) || math.IsInf(c.InitScale, 0):
		return job.Inputf("--init-scale %g: need 0 < scale < inf", c.InitScale)
	case c.Init == "consistent" && !(c.InitScale < 1):
		return job.Inputf("--init-scale %g: the consistent start (C-hat_0 = I - What_0 What_0^T / D) needs scale < 1", c.InitScale)
	case c.Init == "informed" && !(c.InitScale < 1):
		return job.Inputf("--init-scale %g: the informed start needs an overlap 0 < q < 1", c.InitScale)
	}
	if err := checkQuadMaxEval(c.QuadMaxEval); err != nil {
		return err
	}
	if err := c.SMIIntegrals.check(c.L, smiamp.DefaultDraws(c.L), smiamp.MaxDraws); err != nil {
		return err
	}
	if c.Trace != "" && c.Trace != "auto" && !strings.HasSuffix(strings.ToLower(c.Trace), ".csv") {
		return job.Inputf("--trace %q: the trace file must end in .csv", c.Trace)
	}
	for _, a := range c.alphas {
		if err := c.teacher(a, 0).Validate(); err != nil {
			return job.Inputf("%v", err)
		}
	}
	c.seTable = nil
	if c.SE != "" {
		if c.seTable, err = job.ReadTable(c.SE); err != nil {
			return job.Inputf("--se: %v", err)
		}
		if c.seTable.Kind != table.SMISE {
			return job.Inputf("--se %s: an %s CSV, want one written by aim smi se", c.SE, c.seTable.Kind)
		}
		if err = checkSMISETable(c.seTable, &c.SMI); err != nil {
			return job.Inputf("--se: %v", err)
		}
	}
	return nil
}

// teacher returns the SMI teacher of one run, with the configuration's noise.
func (c *SMIAMPConfig) teacher(alpha float64, seed uint64) smi.Params {
	p := c.model(c.D, alpha, seed)
	p.Noise = c.Noise
	return p
}

func (c *SMIAMPConfig) options() smiamp.Options {
	o := smiamp.DefaultOptions(c.L)
	o.MaxIter, o.Epsilon, o.Tol, o.TestSamples, o.Workers = c.Iters, c.Epsilon, c.Tol, c.TestSamples, c.Workers
	o.QuadMaxEval = c.QuadMaxEval
	o.Draws = c.draws(o.Draws)
	o.Damping = c.Damping
	o.Init, o.InitScale = c.Init, c.InitScale
	return o
}

// CheckMemory refuses the configuration when a run needs more memory than the host has
// available: its data and beside it the algorithm's buffers (the sum is the CLI's).
func (c *SMIAMPConfig) CheckMemory() error {
	var need uint64
	var at float64
	for _, a := range c.alphas {
		if n := smiAMPBytes(c.teacher(a, 0), c.options()); n > need {
			need, at = n, a
		}
	}
	return job.CheckHostMemory(job.Where(c.D, at), need)
}

// smiAMPBytes is the memory of one GAMP run: the data, and beside it the algorithm's buffers.
func smiAMPBytes(p smi.Params, o smiamp.Options) uint64 { return p.Bytes() + smiamp.Bytes(p, o) }

// SMIAMPRow is the final state of one GAMP run: a row of the `aim smi amp` CSV.
type SMIAMPRow struct {
	L, M       int
	C, Beta    float64
	D, N       int
	Alpha      float64
	Seed       uint64
	Q, AbsM    []float64 // per layer: Q_ll and |M_ll|; NaN for a failed run
	MNorm, Cos []float64 // the teacher-normalised m_ll = |M_ll|/(||w*_l||^2/D) and the cosines
	EGen       float64
	Iterations int
	Distance   float64 // the estimated ||What - What*||^2 / (P D) at the end (amp.Result.Distance)
	Converged  bool
	Seconds    float64
}

// SMIAMPSchema is the one definition of an `aim smi amp` row.
var SMIAMPSchema = &table.Schema[SMIAMPRow]{Kind: table.SMIAMP, Columns: []table.Column[SMIAMPRow]{
	table.Int("L", func(r *SMIAMPRow) int { return r.L }),
	table.Int("M", func(r *SMIAMPRow) int { return r.M }),
	table.Float("c", func(r *SMIAMPRow) float64 { return r.C }),
	table.Float("beta", func(r *SMIAMPRow) float64 { return r.Beta }),
	table.Int("D", func(r *SMIAMPRow) int { return r.D }),
	table.Int("N", func(r *SMIAMPRow) int { return r.N }),
	table.Float("alpha", func(r *SMIAMPRow) float64 { return r.Alpha }),
	table.Uint("seed", func(r *SMIAMPRow) uint64 { return r.Seed }),
	table.Layers("Q", true, 0, func(r *SMIAMPRow) []float64 { return r.Q }),
	table.Layers("absM", true, 0, func(r *SMIAMPRow) []float64 { return r.AbsM }),
	table.Layers("m", true, 0, func(r *SMIAMPRow) []float64 { return r.MNorm }),
	table.Layers("cos", false, 0, func(r *SMIAMPRow) []float64 { return r.Cos }),
	table.Float("e_gen", func(r *SMIAMPRow) float64 { return r.EGen }),
	table.Int("iterations", func(r *SMIAMPRow) int { return r.Iterations }),
	table.Added(table.Float("distance", func(r *SMIAMPRow) float64 { return r.Distance })),
	table.Bool("converged", func(r *SMIAMPRow) bool { return r.Converged }),
	table.Seconds("seconds", func(r *SMIAMPRow) float64 { return r.Seconds }),
}}

// SMIAMPTraceRow is one iteration of one run: a row of `aim smi amp --trace`.
type SMIAMPTraceRow struct {
	Alpha       float64
	Seed        uint64
	Iteration   int
	Q, AbsM     []float64
	MNorm, Cos  []float64
	EGen, Step  float64
	Distance    float64 // the estimated ||What - What*||^2 / (P D) (+Inf until known)
	Damping     float64 // the damping theta the iteration's update took (adaptive damping)
	QuadInexact int
	QuadFailed  int
	QuadSeconds float64
	Seconds     float64
}

// SMIAMPTraceSchema is the one definition of an `aim smi amp --trace` row.
var SMIAMPTraceSchema = &table.Schema[SMIAMPTraceRow]{Kind: table.SMIAMPTrace, Columns: []table.Column[SMIAMPTraceRow]{
	table.Float("alpha", func(r *SMIAMPTraceRow) float64 { return r.Alpha }),
	table.Uint("seed", func(r *SMIAMPTraceRow) uint64 { return r.Seed }),
	table.Int("iteration", func(r *SMIAMPTraceRow) int { return r.Iteration }),
	table.Layers("Q", true, 0, func(r *SMIAMPTraceRow) []float64 { return r.Q }),
	table.Layers("absM", true, 0, func(r *SMIAMPTraceRow) []float64 { return r.AbsM }),
	table.Layers("m", true, 0, func(r *SMIAMPTraceRow) []float64 { return r.MNorm }),
	table.Layers("cos", false, 0, func(r *SMIAMPTraceRow) []float64 { return r.Cos }),
	table.Float("e_gen", func(r *SMIAMPTraceRow) float64 { return r.EGen }),
	table.Float("step", func(r *SMIAMPTraceRow) float64 { return r.Step }),
	table.Added(table.Float("distance", func(r *SMIAMPTraceRow) float64 { return r.Distance })),
	table.Float("damping", func(r *SMIAMPTraceRow) float64 { return r.Damping }),
	table.Int("quad_inexact", func(r *SMIAMPTraceRow) int { return r.QuadInexact }),
	table.Int("quad_failed", func(r *SMIAMPTraceRow) int { return r.QuadFailed }),
	table.Seconds("quad_seconds", func(r *SMIAMPTraceRow) float64 { return r.QuadSeconds }),
	table.Seconds("seconds", func(r *SMIAMPTraceRow) float64 { return r.Seconds }),
}}

// SMIAMPResult is what RunSMIAMP computed.
type SMIAMPResult struct {
	Rows   []SMIAMPRow      // per alpha, per seed
	Trace  []SMIAMPTraceRow // every iteration of every run
	Failed []string         // the runs that failed (their rows have no values)
	// Missing lists the runs not done when the job was interrupted (with ErrInterrupted):
	// alpha and seed.
	Missing []job.Missing
	Note    string // where the runs ran
}

// Err is the error of the result when runs failed (their rows written without values).
func (r *SMIAMPResult) Err() error { return job.Failures(r.Failed, len(r.Rows), "runs failed") }

// RunSMIAMP runs every (alpha, seed) of a validated configuration; it stops on env's context
// as RunAMP does.
func RunSMIAMP(c *SMIAMPConfig, env job.Env) (*SMIAMPResult, error) {
	if err := c.CheckMemory(); err != nil {
		return nil, err
	}
	if err := env.Begin(); err != nil {
		return nil, err
	}
	return c.run(env)
}

func (c *SMIAMPConfig) run(env job.Env) (*SMIAMPResult, error) {
	dev, err := c.open(c.Workers)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	res := &SMIAMPResult{Note: fmt.Sprintf("cpu (host GAMP, %d goroutines)%s", c.workers(), c.where())}
	env.Notef("%s", res.Note)
	bar := env.Meter(len(c.alphas)*c.Seeds*c.Iters, "smi amp")
	defer bar.Finish()
	ctx := env.Ctx()
	for _, a := range c.alphas {
		for s := 0; s < c.Seeds; s++ {
			seed := job.RunSeed(c.Seed, s)
			if ctx.Err() != nil { // the run in flight has ended: no new one
				res.Missing = append(res.Missing, job.Missing{"alpha": a, "seed": seed})
				continue
			}
			p := c.teacher(a, seed)
			data, err := smi.Generate(p)
			if err != nil {
				return nil, err
			}
			wn := teacherNorms(data.W, c.L, c.D)
			o := c.options()
			o.Device = engineDevice(dev)
			o.Progress = func(smiamp.Iteration) { bar.Add(1) }
			out, err := smiamp.Run(data, o)
			bar.Add(c.Iters - len(out.Trace))
			if err != nil {
				res.Failed = append(res.Failed, fmt.Sprintf("alpha %g seed %d: %v", a, seed, err))
			}
			for _, it := range out.Trace {
				res.Trace = append(res.Trace, SMIAMPTraceRow{Alpha: a, Seed: seed, Iteration: it.Iter, Q: it.Q, AbsM: it.M, MNorm: ratios(it.M, wn),
					Cos: it.Cos, EGen: it.EGen, Step: it.Step, Distance: it.Distance, Damping: it.Damping, QuadInexact: it.Inexact, QuadFailed: it.Failed, QuadSeconds: it.QuadSeconds, Seconds: it.Seconds})
			}
			row := SMIAMPRow{L: c.L, M: c.M, C: c.C, Beta: c.Beta, D: c.D, N: p.N(), Alpha: a, Seed: seed,
				Q: table.NaNs(c.L), AbsM: table.NaNs(c.L), MNorm: table.NaNs(c.L), Cos: table.NaNs(c.L), EGen: math.NaN(),
				Iterations: out.Iterations, Distance: out.Distance, Converged: err == nil && out.Converged, Seconds: out.Seconds}
			if err == nil && len(out.Trace) > 0 {
				last := out.Trace[len(out.Trace)-1]
				row.Q, row.AbsM, row.MNorm, row.Cos, row.EGen = last.Q, last.M, ratios(last.M, wn), last.Cos, last.EGen
			}
			res.Rows = append(res.Rows, row)
		}
	}
	if len(res.Missing) > 0 {
		return res, job.Interrupted(len(res.Rows), len(res.Rows)+len(res.Missing), "runs")
	}
	return res, nil
}

// teacherNorms returns ||w*_l||^2 / D per layer of the P x D teacher W (computed here, beside
// the engine's overlaps).
func teacherNorms(W []float64, L, D int) []float64 {
	wn := make([]float64, L)
	for l := range wn {
		for _, v := range W[l*D : (l+1)*D] {
			wn[l] += v * v / float64(D)
		}
	}
	return wn
}

// ratios returns a_l / b_l entrywise: the teacher-normalised overlaps |M_ll| / (||w*_l||^2 / D)
// from teacherNorms (the quantity the SE's Q_ll predicts: at finite D the teacher's norm is 1
// only to O(1/sqrt(D))), or differences in standard errors.
func ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for l := range a {
		out[l] = a[l] / b[l]
	}
	return out
}

// TracePath is the trace CSV the command writes: Trace, or with auto the results file's name
// with -trace before its .csv ("results/smi-amp.csv" gives "results/smi-amp-trace.csv"); ""
// for none.
func (c *SMIAMPConfig) TracePath() string {
	if c.Trace != "auto" {
		return c.Trace
	}
	return c.Out[:len(c.Out)-len(".csv")] + "-trace.csv"
}

// ExecuteSMIAMP runs `aim smi amp` as the command does: RunSMIAMP with the outputs opened once
// the memory is checked, then the CSV, the trace (with its figure beside it as .png when the
// command has a plot), the figure and the manifest written. It returns the line to print;
// failed runs give an error after everything is written, and so does an interruption
// (ErrInterrupted: the runs done are written, the manifest lists the missing ones).
func ExecuteSMIAMP(c *SMIAMPConfig, env job.Env) (string, error) {
	trace, tracePlot := c.TracePath(), ""
	if trace != "" && c.Plot != "" {
		tracePlot = strings.TrimSuffix(trace, trace[len(trace)-4:]) + ".png"
	}
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, trace, tracePlot) },
		func(e job.Env) (*SMIAMPResult, error) { return RunSMIAMP(c, e) })
	stop := err
	if err != nil && !job.Stopped(err, out) {
		return "", err
	}
	if err := SMIAMPSchema.Write(out.CSV(), c.L, res.Rows); err != nil {
		return "", out.Abort(err)
	}
	params := c.params()
	for k, v := range map[string]any{"c": c.C, "D": c.D, "alpha": c.Alpha, "alphas": c.alphas, "seeds": c.Seeds, "seed": c.Seed,
		"iters": c.Iters, "damping": c.Damping, "epsilon": c.Epsilon, "noise": c.Noise, "tol": c.Tol, "init": c.options().Init,
		"init_scale": c.options().InitScale, "test_samples": c.TestSamples, "quad_max_eval": c.QuadMaxEval, "se": c.SE, "trace": trace} {
		params[k] = v
	}
	c.SMIIntegrals.addParams(params)
	man := env.Manifest("smi amp", res.Note, params, start)
	man["runs"] = len(res.Rows)
	man["failed"] = len(res.Failed)
	if out.HasTrace() {
		if err := job.WriteTrace(out, SMIAMPTraceSchema, c.L, res.Trace, c.Figure, params, env.Manifest("smi amp trace", res.Note, params, start), stop, res.Missing); err != nil {
			return "", out.Abort(err)
		}
	}
	t, err := SMIAMPSchema.Table(c.Out, c.L, res.Rows)
	if err != nil {
		return "", out.Abort(err)
	}
	tables := []*table.Table{t}
	if c.seTable != nil {
		tables = append(tables, c.seTable)
	}
	var fig *figure.Figure
	if stop == nil || len(res.Rows) > 0 {
		if fig, err = job.DrawFigure(tables, c.Figure.Options(plot.Options{})); err != nil {
			return "", out.Abort(err)
		}
	}
	if stop != nil {
		job.MarkIncomplete(man, res.Missing)
	}
	return out.Complete(fig, man, len(res.Rows), start, errors.Join(stop, res.Err()))
}

// checkSMISETable checks that an `aim smi se` table (the CSV of --se, read by ReadTable) has
// the command's L, M, c and beta on every row, and a Q_ll column per layer.
func checkSMISETable(t *table.Table, f *SMI) error {
	for _, n := range table.LayerNames("Q", f.L, true) {
		if !slices.Contains(t.Header, n) {
			return fmt.Errorf("%s: no column %q (is it an `aim smi se` CSV with L = %d?)", t.Path, n, f.L)
		}
	}
	for i := 0; i < t.Rows(); i++ {
		for _, c := range []struct {
			name string
			want float64
		}{{"L", float64(f.L)}, {"M", float64(f.M)}, {"c", f.C}, {"beta", f.Beta}} {
			if v := t.V(i, c.name); v != c.want {
				return fmt.Errorf("%s line %d: %s = %s, the command has %s = %g", t.Path, i+2, c.name, t.S(i, c.name), c.name, c.want)
			}
		}
	}
	return nil
}
