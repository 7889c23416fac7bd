package aimjob

import (
	"errors"
	"math"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/cuda"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/erm"
	"github.com/aimtheory/aim/engine/aim/se"
)

// AMPConfig is the configuration of `aim amp`: GAMP-RIE runs at dimension D, one per (rho,
// alpha, seed), beside the state evolution; with ERM, GAMP for empirical risk minimisation with
// weight decay beside the ERM state evolution (linear and softmax channels).
type AMPConfig struct {
	Sim
	MaxIter   int     // iteration cap; 0: amp.ChannelOptions's, 100 for softmax, 500 for hardmax (Validate sets it)
	Damping   float64 // damping theta in [0, 1), the starting one for hardmax; NaN: amp.ChannelOptions's (Validate sets it)
	Tol       float64 // stop when the estimated ||S-hat - S-hat*||^2/D < Tol (amp.Options.Tol)
	PaperInit bool    // start as the authors' code does
	SE        string  // an `aim se` CSV whose lines the figure draws ("": solved on a dense grid)
	// ERM runs GAMP for ERM with weight decay WeightDecay > 0 instead of GAMP-RIE
	// (amp.Options.ERM; --weight-decay given).
	ERM         bool
	WeightDecay float64

	seTable *table.Table
}

// NewAMPConfig returns the configuration of `aim amp` with no flag set.
func NewAMPConfig() *AMPConfig {
	o := amp.DefaultOptions()
	c := &AMPConfig{Sim: defaultSim("amp", 200, 8), Damping: math.NaN(), Tol: o.Tol}
	c.Alpha = "0.05,0.1,0.15"
	return c
}

// ERMMaxIter is the default iteration cap of GAMP for ERM: on the softmax at beta = 2 it takes
// about 110 iterations to the default tolerance, past GAMP-RIE's 100.
const ERMMaxIter = 500

// Validate checks the configuration, parses its grids, sets the iteration cap and reads the
// SE CSV of c.SE; every problem is bad input.
func (c *AMPConfig) Validate() error {
	c.hardmaxAnyT = true // GAMP-RIE runs the hardmax channel at any 2 <= T <= 6
	if err := c.validate([]string{"0.5"}, "0.05,0.1,0.15"); err != nil {
		return err
	}
	if c.ERM {
		switch {
		case c.Channel == "hardmax":
			return job.Inputf("--weight-decay with --channel hardmax: GAMP for ERM is implemented for the linear and softmax channels (the hardmax output has no useful loss)")
		case !(c.WeightDecay > 0) || math.IsInf(c.WeightDecay, 0):
			return job.Inputf("--weight-decay %g: GAMP for ERM needs a finite lambda > 0 (the limit lambda -> 0+ is the state evolution's: aim erm --weight-decay 0)", c.WeightDecay)
		case c.SE != "":
			return job.Inputf("--se with --weight-decay: the line beside GAMP for ERM is the ERM state evolution's, solved here (aim erm), not aim se's")
		}
	}
	def := amp.ChannelOptions(c.channelSpec())
	if c.ERM {
		def.MaxIter = max(def.MaxIter, ERMMaxIter)
	}
	if c.MaxIter == 0 {
		c.MaxIter = def.MaxIter
	}
	if math.IsNaN(c.Damping) {
		c.Damping = def.Damping
	}
	switch {
	case c.MaxIter < 1:
		return job.Inputf("--max-iter %d: need at least 1", c.MaxIter)
	case !(c.Damping >= 0 && c.Damping < 1):
		return job.Inputf("--damping %g: need 0 <= damping < 1", c.Damping)
	case !(c.Tol > 0):
		return job.Inputf("--tol %g: need a positive tolerance", c.Tol)
	}
	if err := c.validateSim(); err != nil {
		return err
	}
	if strings.HasPrefix(c.Device, "cuda") {
		// Known before a GPU is opened: the channels the CUDA backend declares.
		if err := cuda.Channels.Check(c.channelSpec()); err != nil {
			return job.ChannelRefused(c.channelSpec(), "--device "+c.Device, err)
		}
	}
	c.seTable = nil
	if c.SE != "" {
		var err error
		if c.seTable, err = c.readSETable(c.SE, c.D); err != nil {
			return err
		}
	}
	return nil
}

func (c *AMPConfig) options() amp.Options {
	o := amp.ChannelOptions(c.channelSpec())
	o.MaxIter, o.Damping, o.Tol, o.PaperInit = c.MaxIter, c.Damping, c.Tol, c.PaperInit
	o.Precision = c.prec
	o.ERM, o.WeightDecay = c.ERM, c.WeightDecay
	return o
}

// ermProblem is the ERM estimator that GAMP for ERM computes at (rho, alpha): the nuclear
// penalty at the weight decay, the command's noise, and a power-law teacher's law at the runs'
// D (nil, MP(rho), for mp).
func (c *AMPConfig) ermProblem(rho, alpha float64) erm.Problem {
	p := erm.Problem{Rho: rho, Alpha: alpha, Noise: c.Noise, Lambda: c.WeightDecay, Penalty: erm.Nuclear}
	if c.Channel == "softmax" {
		p.T, p.Beta = c.T, c.Beta
	}
	if c.teacher.PowerLaw {
		p.Prior = c.prior(rho, c.D)
	}
	return p
}

// ermError is the ERM state evolution's test error at (rho, alpha) beside a GAMP-ERM run (NaN
// where it does not converge).
func (c *AMPConfig) ermError(rho, alpha float64) float64 {
	pt, err := erm.Solve(c.ermProblem(rho, alpha), se.DefaultOptions())
	if err != nil {
		return math.NaN()
	}
	return pt.TestError
}

// CheckMemory refuses the configuration when its largest run fits in d's memory (within
// --max-memory) neither with stored nor with streamed tokens, as --tokens allows.
func (c *AMPConfig) CheckMemory(d *job.Device) error { _, err := c.planTokens(d); return err }

// planTokens chooses the token mode of the grid (Tokens).
func (c *AMPConfig) planTokens(d *job.Device) (TokenPlan, error) {
	o, lead := c.options(), d.Group.Lead()
	return c.Sim.PlanTokens(d, func(p aim.Params, n int) uint64 {
		return StoredPeak(p, n, amp.Bytes(p, n)+amp.Scratch(lead, p, o, n, n))
	},
		func(p aim.Params, n, chunk int) uint64 {
			return StreamedPeak(p, n, chunk, amp.StreamedBytes(p, n, chunk)+amp.Scratch(lead, p, o, n, min(chunk, n)))
		})
}

// AMPRow is one GAMP-RIE run: a row of the `aim amp` CSV.
type AMPRow struct {
	Channel         string
	T               int
	Rho, Beta       float64 // Beta NaN (empty) for hardmax
	Noise           float64 // label noise Delta (0: noiseless)
	WeightDecay     float64 // lambda of GAMP for ERM (0: Bayes-optimal GAMP-RIE)
	Teacher         string  // the law of S: mp or powerlaw:GAMMA (aim.Teacher.String)
	D, N, R         int
	Alpha, AlphaBar float64
	Seed            uint64
	Error           float64 // the final ||S-hat - S||_F^2 / D; NaN for a diverged run
	SEMMSE          float64 // the state evolution at (rho, alpha) (a power-law teacher's at D): the Bayes-optimal mmse, or with WeightDecay > 0 the ERM test error
	Iterations      int
	Distance        float64 // the estimated ||S-hat - S-hat*||_F^2 / D at the end (amp.Result.Distance)
	Converged       bool
	Seconds         float64
	Device          string
	Precision       string // of the large contractions: fp64, fp32, tf32, bf16x9 (empty in older CSVs: fp64)
}

// AMPSchema is the one definition of an `aim amp` row.
var AMPSchema = &table.Schema[AMPRow]{Kind: table.AMP, Columns: []table.Column[AMPRow]{
	table.Word("channel", func(r *AMPRow) string { return r.Channel }),
	table.Int("T", func(r *AMPRow) int { return r.T }),
	table.Float("rho", func(r *AMPRow) float64 { return r.Rho }),
	table.Float("beta", func(r *AMPRow) float64 { return r.Beta }),
	table.Added(table.Float("noise", func(r *AMPRow) float64 { return r.Noise })),
	table.Added(table.Float("weight_decay", func(r *AMPRow) float64 { return r.WeightDecay })),
	table.Added(table.Word("teacher", func(r *AMPRow) string { return r.Teacher })),
	table.Int("D", func(r *AMPRow) int { return r.D }),
	table.Int("N", func(r *AMPRow) int { return r.N }),
	table.Int("R", func(r *AMPRow) int { return r.R }),
	table.Float("alpha", func(r *AMPRow) float64 { return r.Alpha }),
	table.Float("alpha_bar", func(r *AMPRow) float64 { return r.AlphaBar }),
	table.Uint("seed", func(r *AMPRow) uint64 { return r.Seed }),
	table.Float("error", func(r *AMPRow) float64 { return r.Error }),
	table.Float("se_mmse", func(r *AMPRow) float64 { return r.SEMMSE }),
	table.Int("iterations", func(r *AMPRow) int { return r.Iterations }),
	table.Added(table.Float("distance", func(r *AMPRow) float64 { return r.Distance })),
	table.Bool("converged", func(r *AMPRow) bool { return r.Converged }),
	table.Seconds("seconds", func(r *AMPRow) float64 { return r.Seconds }),
	table.Word("device", func(r *AMPRow) string { return r.Device }),
	table.Added(table.Word("precision", func(r *AMPRow) string { return r.Precision })),
}}

// AMPTraceRow is one iteration of one run: a row of the --trace CSV of `aim amp`.
type AMPTraceRow struct {
	Rho, Alpha float64
	Seed       uint64
	Iter       int
	Error      float64 // ||S-hat - S||_F^2 / D after the iteration
	Step       float64 // ||S-hat_new - S-hat_old||_F^2 / D
	Distance   float64 // the estimated ||S-hat_old - S-hat*||_F^2 / D (+Inf until known)
	Damping    float64 // theta of the iteration
	Delta      float64 // the denoiser's noise variance
	Seconds    float64 // since the run started
}

// AMPTraceSchema is the one definition of an `aim amp --trace` row.
var AMPTraceSchema = &table.Schema[AMPTraceRow]{Kind: table.AMPTrace, Columns: []table.Column[AMPTraceRow]{
	table.Float("rho", func(r *AMPTraceRow) float64 { return r.Rho }),
	table.Float("alpha", func(r *AMPTraceRow) float64 { return r.Alpha }),
	table.Uint("seed", func(r *AMPTraceRow) uint64 { return r.Seed }),
	table.Int("iter", func(r *AMPTraceRow) int { return r.Iter }),
	table.Float("error", func(r *AMPTraceRow) float64 { return r.Error }),
	table.Float("step", func(r *AMPTraceRow) float64 { return r.Step }),
	table.Added(table.Float("distance", func(r *AMPTraceRow) float64 { return r.Distance })),
	table.Added(table.Float("damping", func(r *AMPTraceRow) float64 { return r.Damping })),
	table.Float("delta", func(r *AMPTraceRow) float64 { return r.Delta }),
	table.Float("seconds", func(r *AMPTraceRow) float64 { return r.Seconds }),
}}

// AMPResult is what RunAMP computed.
type AMPResult struct {
	Tokens  TokenPlan     // the token mode the runs used
	Rows    []AMPRow      // per rho, per alpha, per seed
	Trace   []AMPTraceRow // every iteration of every run
	Failed  []string      // the diverged runs (their rows have no error)
	Missing []job.Missing // the runs not done when the job was interrupted (with ErrInterrupted): rho, alpha, seed
	Note    string        // the device chosen, and why
}

// Err is the error of the result when runs diverged (their rows written without values).
func (r *AMPResult) Err() error { return job.Failures(r.Failed, len(r.Rows), "runs diverged") }

// ampJob is a validated `aim amp` with its device open.
type ampJob struct {
	simJob
	c *AMPConfig
}

// RunAMP runs every (rho, alpha, seed) of a validated configuration on its device. When env's
// context is cancelled it starts no new run and returns the runs done, the missing ones and
// ErrInterrupted.
func RunAMP(c *AMPConfig, env job.Env) (*AMPResult, error) {
	open := func() (*job.Device, error) {
		d, err := job.OpenDevice(c.Device, c.Workers, c.Threads)
		if err == nil {
			if err := d.CheckChannel(c.channelSpec()); err != nil {
				d.Close()
				return nil, err
			}
		}
		return d, err
	}
	return runSimJob(&c.Sim, env, open, c.planTokens, func(j simJob) (*AMPResult, error) {
		return (&ampJob{simJob: j, c: c}).run(env)
	})
}

// tf32Tol is a --tol GAMP-RIE meets at tf32: its estimated distance to the fixed point does
// not fall below about 2e-5 there (the noise of the TF32 products), and with 1e-3 it stopped at
// the iteration where fp64's distance fell under 1e-3 (docs/validation/precision.md, "The
// stopping rule at each precision").
const tf32Tol = 1e-3

func (j *ampJob) run(env job.Env) (*AMPResult, error) {
	c := j.c
	if c.prec == device.TF32 && c.Tol < tf32Tol && !c.ERM {
		env.Notef("--precision tf32 with --tol %g: the TF32 products keep the estimated distance to the fixed point above about 2e-5, so runs will seldom stop before --max-iter; --tol %g or more lets them stop (docs/validation/precision.md)", c.Tol, tf32Tol)
	}
	res := &AMPResult{Note: j.dev.Note, Tokens: j.plan}
	what := "amp " + c.csvChannel()
	ch := j.ch
	theory := map[[2]float64]float64{} // ERM: the ERM state evolution's test error per (rho, alpha)
	if c.ERM {
		what, ch = "amp erm "+c.csvChannel(), nil // no Bayes-optimal SE beside ERM runs
	}
	bar := env.Meter(len(c.rhos)*len(c.alphas)*c.Seeds*c.MaxIter, what)
	defer bar.Finish()
	err := c.eachRun(env.Ctx(), ch, amp.ErrDiverged, &res.Failed, &res.Missing, func(r simRun) error {
		if c.ERM {
			k := [2]float64{r.rho, r.alpha}
			if _, ok := theory[k]; !ok {
				theory[k] = c.ermError(r.rho, r.alpha)
			}
			r.mmse = theory[k]
		}
		o := c.options()
		o.Progress = func(amp.Iteration) { bar.Add(1) }
		out, err := ampOnce(j.dev, j.plan, r.p, o)
		bar.Add(c.MaxIter - out.Iterations)
		if err != nil && !errors.Is(err, amp.ErrDiverged) {
			return err
		}
		for _, it := range out.Trace {
			res.Trace = append(res.Trace, AMPTraceRow{Rho: r.rho, Alpha: r.alpha, Seed: r.seed, Iter: it.Iter, Error: it.Error, Step: it.Step, Distance: it.Distance, Damping: it.Damping, Delta: it.Delta, Seconds: it.Seconds})
		}
		row := AMPRow{Channel: c.csvChannel(), T: c.T, Rho: r.rho, Beta: c.csvBeta(), Noise: c.csvNoise(), WeightDecay: c.WeightDecay, Teacher: c.csvTeacher(), D: c.D, N: r.p.N(), R: r.p.R(), Alpha: r.alpha,
			AlphaBar: r.alpha * c.directions(), Seed: r.seed, Error: out.Error, SEMMSE: r.mmse, Iterations: out.Iterations,
			Distance: out.Distance, Converged: err == nil && out.Converged, Seconds: out.Seconds, Device: j.dev.Name(),
			Precision: c.prec.String()}
		if err != nil {
			row.Error = math.NaN()
		}
		res.Rows = append(res.Rows, row)
		return err
	})
	if err != nil && !errors.Is(err, job.ErrInterrupted) {
		return nil, err
	}
	return res, err
}

// ampOnce draws the data of one run (in the plan's token mode), runs GAMP-RIE and frees
// everything.
func ampOnce(dev *job.Device, pl TokenPlan, p aim.Params, o amp.Options) (amp.Result, error) {
	parts, err := pl.Generate(dev, p)
	if err != nil {
		return amp.Result{}, err
	}
	defer aim.FreeGroup(dev.Group, parts)
	return amp.RunGroup(dev.Group, parts, o)
}

// ExecuteAMP runs `aim amp` as the command does: RunAMP, with the outputs opened once the device
// is open and the memory checked, then the CSV, the trace, the figure and the manifest
// written. It returns the line to print; diverged runs give an error after everything is
// written, and so does an interruption (ErrInterrupted: the runs done are written, the
// manifest lists the missing ones).
func ExecuteAMP(c *AMPConfig, env job.Env) (string, error) {
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, c.Trace, "") },
		func(e job.Env) (*AMPResult, error) { return RunAMP(c, e) })
	stop := err
	if err != nil && !job.Stopped(err, out) {
		return "", err
	}
	if err := AMPSchema.Write(out.CSV(), 0, res.Rows); err != nil {
		return "", out.Abort(err)
	}
	params := c.simParams()
	for k, v := range c.tokenParams(res.Tokens) {
		params[k] = v
	}
	for k, v := range map[string]any{"max_iter": c.MaxIter, "damping": c.Damping, "tol": c.Tol, "paper_init": c.PaperInit,
		"erm": c.ERM, "weight_decay": c.WeightDecay} {
		params[k] = v
	}
	man := env.Manifest("amp", res.Note, params, start)
	man["runs"] = len(res.Rows)
	man["diverged"] = len(res.Failed)
	if out.HasTrace() {
		if err := job.WriteTrace(out, AMPTraceSchema, 0, res.Trace, c.Figure, params, env.Manifest("amp trace", res.Note, params, start), stop, res.Missing); err != nil {
			return "", out.Abort(err)
		}
	}
	var fig *figure.Figure // none without --plot: its SE lines can take minutes (the noisy softmax)
	if c.Plot != "" && (stop == nil || len(res.Rows) > 0) {
		var err error
		if fig, err = c.figure(res.Rows); err != nil {
			return "", out.Abort(err)
		}
	}
	if stop != nil {
		job.MarkIncomplete(man, res.Missing)
	}
	return out.Complete(fig, man, len(res.Rows), start, errors.Join(stop, res.Err()))
}

// figure draws the figure of `aim amp` from the rows of its CSV, as `aim plot` draws it from
// the file beside the SE CSV of --se: per rho, the SE line (from --se, or solved on a dense
// grid over [0, 1.1 max alpha]; none where the model has no SE yet) and the mean final error of the runs that did not diverge,
// with its standard error, per alpha. With ERM the line is the ERM state evolution's test
// error at the weight decay on that grid (as aim erm writes it), beside GAMP for ERM.
func (c *AMPConfig) figure(rows []AMPRow) (*figure.Figure, error) {
	t, err := AMPSchema.Table(c.Out, 0, rows)
	if err != nil {
		return nil, err
	}
	if c.ERM {
		amin, amax := c.alphaRange()
		logx, _ := c.logAxes()
		n := 96
		if c.teacher.PowerLaw {
			// The ERM state evolution of a power-law teacher costs up to a second a point at
			// D = 30 (the spectrum of its D eigenvalues under noise): a coarser line.
			n = 24
		}
		if c.Channel == "softmax" {
			// Each point of the softmax's is a Monte Carlo state evolution of seconds.
			n = 12
		}
		lines, err := c.denseERM(amin/2, 1.1*amax, n, logx)
		if err != nil {
			return nil, err
		}
		return job.DrawFigure([]*table.Table{lines, t}, c.Figure.Options(plot.Options{Axes: c.Axes}))
	}
	lines := c.seTable
	if lines == nil && !c.hasSE() {
		// The runs alone: linear axes unless asked (a log axis over one point has no range).
		axes := c.Axes
		if axes == "auto" {
			axes = "lin"
		}
		return job.DrawFigure([]*table.Table{t}, c.Figure.Options(plot.Options{Axes: axes}))
	}
	if lines == nil {
		amin, amax := c.alphaRange()
		logx, _ := c.logAxes()
		if lines, err = denseSE(&c.Model, c.D, amin/2, 1.1*amax, 0, 96, logx); err != nil {
			return nil, err
		}
	}
	return job.DrawFigure([]*table.Table{lines, t}, c.Figure.Options(plot.Options{Axes: c.Axes}))
}

// denseERM returns the ERM state evolution's test error at the weight decay on a grid of n
// alphas up to a1 (from a0 on a log axis) at every rho, as `aim erm` rows (the Bayes-optimal
// error left empty): the line of the figure of GAMP for ERM. Unconverged points are left out.
func (c *AMPConfig) denseERM(a0, a1 float64, n int, logx bool) (*table.Table, error) {
	var rows []ERMRow
	seen := map[float64]bool{}
	for _, r := range c.rhos {
		if seen[r] {
			continue
		}
		seen[r] = true
		for k := 1; k <= n; k++ {
			a := a1 * float64(k) / float64(n)
			if logx {
				a = a0 * math.Pow(a1/a0, float64(k)/float64(n))
			}
			p := c.ermProblem(r, a)
			pt, err := erm.Solve(p, se.DefaultOptions())
			if err != nil {
				continue
			}
			rows = append(rows, ERMRow{Channel: c.Channel, T: c.T, Beta: c.csvBeta(), Rho: r, Alpha: a, Noise: c.Noise, Teacher: c.csvTeacher(), D: csvD(c.theoryD(c.D)), WeightDecay: p.Lambda, Penalty: p.Penalty.String(),
				TestError: pt.TestError, TestErr: pt.TestErr, TrainErr: pt.TrainErr, GenError: pt.GenError, TrainError: pt.TrainError, BOError: math.NaN(), Tau: pt.Tau,
				Shrink: pt.Shrink, Rank: pt.Rank, TrS: pt.TrS, DeltaEff: pt.DeltaEff, Interpolating: pt.Interpolating,
				QuadError: pt.QuadError, Iterations: pt.Iterations})
		}
	}
	return ERMSchema.Table("erm", 0, rows)
}
