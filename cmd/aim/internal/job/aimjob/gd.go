package aimjob

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/gd"
)

// GDConfig is the configuration of `aim gd`: gradient-descent students of the softmax model or
// the quadratic network (linear channel), one training per (rho, alpha, seed), single or
// averaged over restarts.
type GDConfig struct {
	Sim
	Restarts    int     // students averaged per data set
	Steps       int     // full-batch steps per student
	LR          float64 // learning rate
	Optimizer   string  // adam or gd
	Uncentred   bool    // linear channel: train on x^T S x / sqrt(D), the authors' outputs (gd.Options.Uncentred)
	WeightDecay float64 // lambda >= 0: the training loss gains lambda Tr S = lambda ||W||_F^2 / sqrt(R D), or lambda ||S||_F^2 with Direct (gd.Options.WeightDecay)
	Direct      bool    // train S itself, element by element, from S = 0 (gd.Options.Direct): the weight decay is then ridge
	R           int     // student width (0: the teacher's)
	Spectrum    string  // a CSV of the eigenvalues of the first student's final S of every run ("" for none)
	TraceEvery  int     // steps between traced points (with Trace)
	AMP         string  // an `aim amp` CSV whose points the figure draws
	SE          string  // an `aim se` CSV whose lines the figure draws ("": solved on a dense grid)

	ampTable, seTable *table.Table
}

// NewGDConfig returns the configuration of `aim gd` with no flag set.
func NewGDConfig() *GDConfig {
	o := gd.DefaultOptions()
	c := &GDConfig{Sim: defaultSim("gd", 100, 4), Restarts: 1, Steps: o.Steps, LR: o.LR, Optimizer: "adam", TraceEvery: 10}
	c.Alpha = "0.0025,0.0125,0.025,0.075,0.25"
	return c
}

// Validate checks the configuration, parses its grids and reads the CSVs of c.AMP and c.SE;
// every problem is bad input.
func (c *GDConfig) Validate() error {
	if c.Channel == "hardmax" {
		return job.Inputf("hardmax students are not offered: the hardmax output has no useful gradient (use --channel softmax)")
	}
	if err := c.validate([]string{"0.5"}, ""); err != nil {
		return err
	}
	switch c.Optimizer {
	case "adam", "gd":
	default:
		return job.Inputf("--optimizer %q: want adam or gd", c.Optimizer)
	}
	if c.Uncentred && c.Channel != "linear" {
		return job.Inputf("--uncentred: the uncentred outputs are the linear channel's (--channel linear), not %s's", c.Channel)
	}
	switch {
	case c.Restarts < 1:
		return job.Inputf("--restarts %d: need at least 1", c.Restarts)
	case c.Steps < 1:
		return job.Inputf("--max-iter %d: need at least 1", c.Steps)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return job.Inputf("--lr %g: need a positive learning rate", c.LR)
	case c.R < 0:
		return job.Inputf("--R %d: need 0 (the teacher's width) or more", c.R)
	case c.TraceEvery < 1:
		return job.Inputf("--trace-every %d: need at least 1", c.TraceEvery)
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0):
		return job.Inputf("--weight-decay %g: need a finite lambda >= 0", c.WeightDecay)
	case c.Direct && c.Restarts != 1:
		return job.Inputf("--direct with --restarts %d: a direct student starts from S = 0, so every restart would repeat one training (use --restarts 1)", c.Restarts)
	case c.Direct && c.R != 0:
		return job.Inputf("--direct with --R %d: a direct student trains S itself, which has no width", c.R)
	}
	if c.Spectrum != "" {
		switch {
		case !strings.HasSuffix(strings.ToLower(c.Spectrum), ".csv"):
			return job.Inputf("--spectrum %q: the spectrum file must end in .csv", c.Spectrum)
		case filepath.Clean(c.Spectrum) == filepath.Clean(c.Out):
			return job.Inputf("--spectrum %q: the same file as --out", c.Spectrum)
		case c.Trace != "" && filepath.Clean(c.Spectrum) == filepath.Clean(c.Trace):
			return job.Inputf("--spectrum %q: the same file as --trace", c.Spectrum)
		}
	}
	if err := c.validateSim(); err != nil {
		return err
	}
	c.ampTable, c.seTable = nil, nil
	if c.AMP != "" {
		t, err := job.ReadTable(c.AMP)
		if err != nil {
			return job.Inputf("--amp: %v", err)
		}
		if t.Kind != table.AMP {
			return job.Inputf("--amp %s: an %s CSV, want one written by aim amp", c.AMP, t.Kind)
		}
		c.ampTable = t
	}
	if c.SE != "" {
		var err error
		if c.seTable, err = c.readSETable(c.SE, c.D); err != nil {
			return err
		}
	}
	return nil
}

func (c *GDConfig) options() gd.Options {
	o := gd.DefaultOptions()
	o.Restarts, o.Steps, o.LR, o.R, o.Adam = c.Restarts, c.Steps, c.LR, c.R, c.Optimizer == "adam"
	o.Precision, o.Uncentred = c.prec, c.Uncentred
	o.WeightDecay, o.Direct, o.Spectrum = c.WeightDecay, c.Direct, c.Spectrum != ""
	if c.Trace != "" {
		o.TraceEvery = c.TraceEvery
	}
	return o
}

// CheckMemory refuses the configuration when its largest training fits in d's memory (within
// --max-memory) neither with stored nor with streamed tokens, as --tokens allows.
func (c *GDConfig) CheckMemory(d *job.Device) error { _, err := c.planTokens(d); return err }

// planTokens chooses the token mode of the grid (Tokens) and the students trained at once
// (gd.Options.Batch): all the restarts where they fit in the mode, and with the chunk, one
// student would get (stored tokens where one student fits beside them), else the largest of
// K/2, K/4, ... (rounded up) that fits so, else one at a time.
func (c *GDConfig) planTokens(d *job.Device) (TokenPlan, error) {
	lead := d.Group.Lead()
	plan := func(batch int) (TokenPlan, error) {
		o := c.options()
		o.Batch = batch
		pl, err := c.Sim.PlanTokens(d, func(p aim.Params, n int) uint64 {
			return StoredPeak(p, n, gd.Bytes(p, o, n)+gd.Scratch(lead, p, o, n, n))
		},
			func(p aim.Params, n, chunk int) uint64 {
				return StreamedPeak(p, n, chunk, gd.StreamedBytes(p, o, n, chunk)+gd.Scratch(lead, p, o, n, min(chunk, n)))
			})
		pl.Students = batch
		return pl, err
	}
	one, err := plan(1)
	if err != nil || c.Restarts == 1 {
		return one, err
	}
	for b := c.Restarts; b > 1; b = (b + 1) / 2 {
		if pl, err := plan(b); err == nil && pl.Streamed == one.Streamed && pl.Chunk == one.Chunk {
			pl.Note += fmt.Sprintf("; %d of the %d students at a time", b, c.Restarts)
			return pl, nil
		}
	}
	one.Note += fmt.Sprintf("; the %d students one at a time (two need more memory)", c.Restarts)
	return one, nil
}

// GDRow is one training: a row of the `aim gd` CSV.
type GDRow struct {
	Channel           string
	T                 int
	Rho, Beta         float64
	Noise             float64 // label noise Delta of the teacher's outputs (0: noiseless)
	Teacher           string  // the law of S: mp or powerlaw:GAMMA (aim.Teacher.String)
	D, N, R, RStudent int
	Alpha, AlphaBar   float64
	Seed              uint64
	Restarts, Steps   int
	LR                float64
	Optimizer         string
	Uncentred         bool    // the linear channel's uncentred outputs (the authors' GD)
	Direct            bool    // S trained itself, element by element, from S = 0 (the weight decay is ridge)
	WeightDecay       float64 // lambda of the training loss's lambda Tr S, or lambda ||S||_F^2 when Direct (0: none)
	Error             float64 // the averaged estimate's ||S-bar - S||_F^2 / D; NaN for a diverged run
	ErrorSingle       float64 // the mean error of the single students
	FinalLoss         float64 // the mean final data loss sum (y-hat - y)^2 / D of the students, without lambda Tr S
	Penalty           float64 // lambda Tr S (Direct: lambda ||S||_F^2) of the first student's final S (0 when lambda = 0)
	SEMMSE            float64
	Finished          bool
	Seconds           float64
	Device            string
	Precision         string // of the large contractions: fp64, fp32, tf32, bf16x9 (empty in older CSVs: fp64)
}

// GDSchema is the one definition of an `aim gd` row.
var GDSchema = &table.Schema[GDRow]{Kind: table.GD, Columns: []table.Column[GDRow]{
	table.Word("channel", func(r *GDRow) string { return r.Channel }),
	table.Int("T", func(r *GDRow) int { return r.T }),
	table.Float("rho", func(r *GDRow) float64 { return r.Rho }),
	table.Float("beta", func(r *GDRow) float64 { return r.Beta }),
	table.Added(table.Float("noise", func(r *GDRow) float64 { return r.Noise })),
	table.Added(table.Word("teacher", func(r *GDRow) string { return r.Teacher })),
	table.Int("D", func(r *GDRow) int { return r.D }),
	table.Int("N", func(r *GDRow) int { return r.N }),
	table.Int("R", func(r *GDRow) int { return r.R }),
	table.Int("R_student", func(r *GDRow) int { return r.RStudent }),
	table.Float("alpha", func(r *GDRow) float64 { return r.Alpha }),
	table.Float("alpha_bar", func(r *GDRow) float64 { return r.AlphaBar }),
	table.Uint("seed", func(r *GDRow) uint64 { return r.Seed }),
	table.Int("restarts", func(r *GDRow) int { return r.Restarts }),
	table.Int("steps", func(r *GDRow) int { return r.Steps }),
	table.Float("lr", func(r *GDRow) float64 { return r.LR }),
	table.Word("optimizer", func(r *GDRow) string { return r.Optimizer }),
	table.Added(table.Bool("uncentred", func(r *GDRow) bool { return r.Uncentred })),
	table.Added(table.Bool("direct", func(r *GDRow) bool { return r.Direct })),
	table.Added(table.Float("weight_decay", func(r *GDRow) float64 { return r.WeightDecay })),
	table.Float("error", func(r *GDRow) float64 { return r.Error }),
	table.Float("error_single", func(r *GDRow) float64 { return r.ErrorSingle }),
	table.Float("final_loss", func(r *GDRow) float64 { return r.FinalLoss }),
	table.Added(table.Float("penalty", func(r *GDRow) float64 { return r.Penalty })),
	table.Float("se_mmse", func(r *GDRow) float64 { return r.SEMMSE }),
	table.Bool("finished", func(r *GDRow) bool { return r.Finished }),
	table.Seconds("seconds", func(r *GDRow) float64 { return r.Seconds }),
	table.Word("device", func(r *GDRow) string { return r.Device }),
	table.Added(table.Word("precision", func(r *GDRow) string { return r.Precision })),
}}

// GDTraceRow is one traced step of the first student of a run: a row of `aim gd --trace`.
type GDTraceRow struct {
	Rho, Alpha  float64
	Seed        uint64
	Step        int
	Loss, Error float64
}

// GDTraceSchema is the one definition of an `aim gd --trace` row.
var GDTraceSchema = &table.Schema[GDTraceRow]{Kind: table.GDTrace, Columns: []table.Column[GDTraceRow]{
	table.Float("rho", func(r *GDTraceRow) float64 { return r.Rho }),
	table.Float("alpha", func(r *GDTraceRow) float64 { return r.Alpha }),
	table.Uint("seed", func(r *GDTraceRow) uint64 { return r.Seed }),
	table.Int("step", func(r *GDTraceRow) int { return r.Step }),
	table.Float("loss", func(r *GDTraceRow) float64 { return r.Loss }),
	table.Float("error", func(r *GDTraceRow) float64 { return r.Error }),
}}

// GDSpectrumRow is one eigenvalue of the first student's final S of a run: a row of
// `aim gd --spectrum`.
type GDSpectrumRow struct {
	Rho, Alpha  float64
	Seed        uint64
	WeightDecay float64
	Direct      bool    // S trained itself (its eigenvalues can be negative)
	Index       int     // 0 to D-1, the eigenvalues in ascending order
	Eigenvalue  float64 // of S = W^T W / sqrt(R D), or of the direct student's S
}

// GDSpectrumSchema is the one definition of an `aim gd --spectrum` row.
var GDSpectrumSchema = &table.Schema[GDSpectrumRow]{Kind: table.GDSpectrum, Columns: []table.Column[GDSpectrumRow]{
	table.Float("rho", func(r *GDSpectrumRow) float64 { return r.Rho }),
	table.Float("alpha", func(r *GDSpectrumRow) float64 { return r.Alpha }),
	table.Uint("seed", func(r *GDSpectrumRow) uint64 { return r.Seed }),
	table.Float("weight_decay", func(r *GDSpectrumRow) float64 { return r.WeightDecay }),
	table.Added(table.Bool("direct", func(r *GDSpectrumRow) bool { return r.Direct })),
	table.Int("index", func(r *GDSpectrumRow) int { return r.Index }),
	table.Float("eigenvalue", func(r *GDSpectrumRow) float64 { return r.Eigenvalue }),
}}

// GDResult is what RunGD computed.
type GDResult struct {
	Tokens   TokenPlan       // the token mode the runs used
	Rows     []GDRow         // per rho, per alpha, per seed
	Trace    []GDTraceRow    // the first student of every run, every TraceEvery steps
	Spectrum []GDSpectrumRow // with Spectrum: the eigenvalues of the first student's final S of every finished run
	Failed   []string        // the diverged runs (their rows have no values)
	Missing  []job.Missing   // the runs not done when the job was interrupted (with ErrInterrupted): rho, alpha, seed
	Note     string          // the device chosen, and why
}

// Err is the error of the result when runs diverged (their rows written without values).
func (r *GDResult) Err() error { return job.Failures(r.Failed, len(r.Rows), "runs diverged") }

// gdJob is a validated `aim gd` with its device open.
type gdJob struct {
	simJob
	c *GDConfig
}

// openTrainer opens a device with the training operations (the capability
// device.Caps.Trainer); auto falls back to the CPU on a device without them.
func (c *GDConfig) openTrainer() (*job.Device, error) {
	dev, err := job.OpenDevice(c.Device, c.Workers, c.Threads)
	if err != nil || dev.HasTrainer() {
		return dev, err
	}
	dev.Close()
	if c.Device != "auto" {
		return nil, job.Inputf("device %s has no training operations (use --device cpu)", dev.Name())
	}
	if dev, err = job.OpenDevice("cpu", c.Workers, c.Threads); err != nil {
		return nil, err
	}
	dev.Note = "auto: using the CPU (" + dev.Note + "): the device it found has no training operations"
	return dev, nil
}

// RunGD trains every (rho, alpha, seed) of a validated configuration on its device; it stops
// on env's context as RunAMP does.
func RunGD(c *GDConfig, env job.Env) (*GDResult, error) {
	return runSimJob(&c.Sim, env, c.openTrainer, c.planTokens, func(j simJob) (*GDResult, error) {
		return (&gdJob{simJob: j, c: c}).run(env)
	})
}

func (j *gdJob) run(env job.Env) (*GDResult, error) {
	c := j.c
	res := &GDResult{Note: j.dev.Note, Tokens: j.plan}
	steps := c.Steps * c.Restarts
	bar := env.Meter(len(c.rhos)*len(c.alphas)*c.Seeds*steps, "gd")
	defer bar.Finish()
	err := c.eachRun(env.Ctx(), j.ch, gd.ErrDiverged, &res.Failed, &res.Missing, func(r simRun) error {
		o := c.options()
		o.Batch = j.plan.Students
		done := 0
		o.Progress = func() { done++; bar.Add(1) }
		parts, err := j.plan.Generate(j.dev, r.p)
		if err != nil {
			return err
		}
		out, err := gd.RunGroup(j.dev.Group, parts, o)
		aim.FreeGroup(j.dev.Group, parts)
		bar.Add(steps - done)
		if err != nil && !errors.Is(err, gd.ErrDiverged) {
			return err
		}
		for _, pt := range out.Trace {
			res.Trace = append(res.Trace, GDTraceRow{Rho: r.rho, Alpha: r.alpha, Seed: r.seed, Step: pt.Step, Loss: pt.Loss, Error: pt.Error})
		}
		if err == nil {
			for i, l := range out.Eigenvalues {
				res.Spectrum = append(res.Spectrum, GDSpectrumRow{Rho: r.rho, Alpha: r.alpha, Seed: r.seed, WeightDecay: c.WeightDecay, Direct: c.Direct, Index: i, Eigenvalue: l})
			}
		}
		res.Rows = append(res.Rows, c.row(r.rho, r.alpha, r.seed, r.p, out, err, r.mmse, j.dev.Name()))
		return err
	})
	if err != nil && !errors.Is(err, job.ErrInterrupted) {
		return nil, err
	}
	return res, err
}

// row is the CSV row of one training; the error of the single students and the final loss are
// their means over the restarts (computed here, not by the engine), the penalty the first
// student's.
func (c *GDConfig) row(rho, alpha float64, seed uint64, p aim.Params, out gd.Result, err error, mmse float64, dev string) GDRow {
	errAvg, errSingle, loss, penalty := math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if err == nil {
		errAvg, errSingle, loss, penalty = out.Error, mean(out.SingleErrors), mean(out.FinalLoss), out.Penalty[0]
	}
	width := c.R
	switch {
	case c.Direct:
		width = c.D // S itself, D x D
	case width == 0:
		width = p.R()
	}
	return GDRow{Channel: c.csvChannel(), T: c.T, Rho: rho, Beta: c.csvBeta(), Noise: c.csvNoise(), Teacher: c.csvTeacher(), D: c.D, N: p.N(), R: p.R(), RStudent: width,
		Alpha: alpha, AlphaBar: alpha * c.directions(), Seed: seed, Restarts: c.Restarts, Steps: c.Steps, LR: c.LR,
		Optimizer: c.Optimizer, Uncentred: c.Uncentred, Direct: c.Direct, WeightDecay: c.WeightDecay, Error: errAvg, ErrorSingle: errSingle, FinalLoss: loss, Penalty: penalty,
		SEMMSE: mmse, Finished: err == nil,
		Seconds: out.Seconds, Device: dev, Precision: c.prec.String()}
}

// mean returns the mean of xs (gonum's stat), NaN for none.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stat.Mean(xs, nil)
}

// ExecuteGD runs `aim gd` as the command does: RunGD with the outputs opened once the device
// is open and the memory checked (as ExecuteAMP, interruption included); the trace's figure
// goes beside the trace as .png, and --spectrum's CSV gets its manifest and no figure.
func ExecuteGD(c *GDConfig, env job.Env) (string, error) {
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) {
		out, err := job.OpenOutputs(c.Out, c.Plot, c.Trace, strings.TrimSuffix(c.Trace, ".csv")+".png")
		if err == nil && c.Spectrum != "" {
			if err = out.OpenExtra(c.Spectrum); err != nil {
				return nil, err
			}
		}
		return out, err
	}, func(e job.Env) (*GDResult, error) { return RunGD(c, e) })
	stop := err
	if err != nil && !job.Stopped(err, out) {
		return "", err
	}
	if err := GDSchema.Write(out.CSV(), 0, res.Rows); err != nil {
		return "", out.Abort(err)
	}
	var fig *figure.Figure // none without --plot: its SE lines can take minutes (the noisy softmax)
	if c.Plot != "" && (stop == nil || len(res.Rows) > 0) {
		var err error
		if fig, err = c.figure(res.Rows); err != nil {
			return "", out.Abort(err)
		}
	}
	params := c.simParams()
	for k, v := range c.tokenParams(res.Tokens) {
		params[k] = v
	}
	for k, v := range map[string]any{"restarts": c.Restarts, "steps": c.Steps, "lr": c.LR, "optimizer": c.Optimizer,
		"R_student": c.R, "amp": c.AMP, "weight_decay": c.WeightDecay, "direct": c.Direct, "students_at_once": res.Tokens.Students} {
		params[k] = v
	}
	man := env.Manifest("gd", res.Note, params, start)
	man["runs"] = len(res.Rows)
	man["diverged"] = len(res.Failed)
	if out.HasTrace() {
		if err := job.WriteTrace(out, GDTraceSchema, 0, res.Trace, c.Figure, params, env.Manifest("gd trace", res.Note, params, start), stop, res.Missing); err != nil {
			return "", out.Abort(err)
		}
	}
	if out.HasExtra() {
		if err := job.WriteExtra(out, GDSpectrumSchema, 0, res.Spectrum, env.Manifest("gd spectrum", res.Note, params, start), stop, res.Missing); err != nil {
			return "", out.Abort(err)
		}
	}
	if stop != nil {
		job.MarkIncomplete(man, res.Missing)
	}
	return out.Complete(fig, man, len(res.Rows), start, errors.Join(stop, res.Err()))
}

// figure draws the figure of `aim gd` from the rows of its CSV, as `aim plot` draws it from the
// file beside the CSVs of --se and --amp: per rho, the SE line (from --se, or solved on a dense
// grid), GD single, GD averaged and the AMP points against alpha.
func (c *GDConfig) figure(rows []GDRow) (*figure.Figure, error) {
	t, err := GDSchema.Table(c.Out, 0, rows)
	if err != nil {
		return nil, err
	}
	lines := c.seTable
	if lines == nil {
		_, amax := c.alphaRange()
		if lines, err = denseSE(&c.Model, c.D, 0, 1.1*amax, 1, 96, false); err != nil {
			return nil, err
		}
	}
	tables := []*table.Table{t, lines}
	if c.ampTable != nil {
		tables = append(tables, c.ampTable)
	}
	return job.DrawFigure(tables, c.Figure.Options(plot.Options{Axes: c.Axes}))
}
