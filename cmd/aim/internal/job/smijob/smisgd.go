package smijob

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/smi/sgd"
)

// SMISGDConfig is the configuration of `aim smi sgd`: mini-batch SGD of a deep tied attention
// student with the teacher's architecture, one run per seed.
type SMISGDConfig struct {
	SMI
	D             int
	Alpha         float64
	Seeds         int
	Seed          uint64  // run s uses seed Seed + s
	StudentSeed   int64   // seed of every run's start and shuffling; -1: each run's data seed
	LR            float64 // learning rate
	WeightDecay   float64 // lambda; the decay applied is lambda / D
	Batch         int
	StepsPerBatch int
	Epochs        int
	InitScale     float64
	Every         int  // record every this many updates (0: once per epoch)
	TestSamples   int  // fresh samples of the test error (0: none)
	Shuffle       bool // reshuffle the samples each epoch
}

// NewSMISGDConfig returns the configuration of `aim smi sgd` with no flag set.
func NewSMISGDConfig() *SMISGDConfig {
	o := sgd.DefaultOptions()
	return &SMISGDConfig{SMI: defaultSMI("sgd"), D: 500, Alpha: 15, Seeds: 1, Seed: 1, StudentSeed: -1, LR: o.LR,
		WeightDecay: o.WeightDecay, Batch: o.Batch, StepsPerBatch: o.StepsPerBatch, Epochs: o.Epochs, InitScale: o.InitScale,
		TestSamples: o.TestSamples}
}

// Validate checks the configuration; every problem is bad input.
func (c *SMISGDConfig) Validate() error {
	if _, err := c.channel(c.C, false); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case c.D < 2:
		return job.Inputf("--D %d: need D >= 2", c.D)
	case !(c.Alpha > 0) || !finite(c.Alpha):
		return job.Inputf("--alpha %g: need alpha > 0", c.Alpha)
	case c.Seeds < 1:
		return job.Inputf("--seeds %d: need at least 1", c.Seeds)
	case c.StudentSeed < -1:
		return job.Inputf("--student-seed %d: need -1 (the data seed) or a seed >= 0", c.StudentSeed)
	case !(c.LR > 0) || !finite(c.LR):
		return job.Inputf("--lr %g: need a positive learning rate", c.LR)
	case !(c.WeightDecay >= 0) || !finite(c.WeightDecay):
		return job.Inputf("--wd %g: need 0 <= wd < inf", c.WeightDecay)
	case c.Batch < 1:
		return job.Inputf("--batch %d: need at least 1", c.Batch)
	case c.StepsPerBatch < 1:
		return job.Inputf("--steps-per-batch %d: need at least 1", c.StepsPerBatch)
	case c.Epochs < 1:
		return job.Inputf("--epochs %d: need at least 1", c.Epochs)
	case !(c.InitScale > 0) || !finite(c.InitScale):
		return job.Inputf("--init-scale %g: need a positive scale (w-hat = 0 is a stationary point)", c.InitScale)
	case c.Every < 0:
		return job.Inputf("--every %d: need 0 (once per epoch) or more", c.Every)
	case c.TestSamples < 0:
		return job.Inputf("--gen-samples %d: need 0 (none) or more", c.TestSamples)
	}
	if err := c.model(c.D, c.Alpha, 0).Validate(); err != nil {
		return job.Inputf("%v", err)
	}
	return nil
}

func (c *SMISGDConfig) options() sgd.Options {
	o := sgd.DefaultOptions()
	o.LR, o.WeightDecay, o.Batch, o.StepsPerBatch, o.Epochs, o.InitScale = c.LR, c.WeightDecay, c.Batch, c.StepsPerBatch, c.Epochs, c.InitScale
	o.Every, o.TestSamples, o.Shuffle, o.Workers = c.Every, c.TestSamples, c.Shuffle, c.Workers
	if c.StudentSeed >= 0 {
		s := uint64(c.StudentSeed)
		o.StudentSeed = &s
	}
	return o
}

// CheckMemory refuses the configuration when a run needs more memory than the host has
// available: its data and sgd.Bytes (the sum is the CLI's).
func (c *SMISGDConfig) CheckMemory() error {
	p := c.model(c.D, c.Alpha, 0)
	return job.CheckHostMemory(job.Where(c.D, c.Alpha), p.Bytes()+sgd.Bytes(p, c.options()))
}

// SMISGDRow is one recorded state of one run: a row of the `aim smi sgd` CSV.
type SMISGDRow struct {
	Seed                 uint64
	Update, Batch, Epoch int
	M, Q, Cos            []float64 // per layer: the signed overlap, the student's norm, the cosine
	Loss, TrainError     float64
	TestError            float64 // NaN without a test set
}

// SMISGDSchema is the one definition of an `aim smi sgd` row.
var SMISGDSchema = &table.Schema[SMISGDRow]{Kind: table.SMISGD, Columns: []table.Column[SMISGDRow]{
	table.Uint("seed", func(r *SMISGDRow) uint64 { return r.Seed }),
	table.Int("update", func(r *SMISGDRow) int { return r.Update }),
	table.Int("batch", func(r *SMISGDRow) int { return r.Batch }),
	table.Int("epoch", func(r *SMISGDRow) int { return r.Epoch }),
	table.Layers("M", true, 0, func(r *SMISGDRow) []float64 { return r.M }),
	table.Layers("Q", true, 0, func(r *SMISGDRow) []float64 { return r.Q }),
	table.Layers("cos", false, 0, func(r *SMISGDRow) []float64 { return r.Cos }),
	table.Float("loss", func(r *SMISGDRow) float64 { return r.Loss }),
	table.Float("train_error", func(r *SMISGDRow) float64 { return r.TrainError }),
	table.Float("test_error", func(r *SMISGDRow) float64 { return r.TestError }),
}}

// SMISGDResult is what RunSMISGD computed.
type SMISGDResult struct {
	Rows    []SMISGDRow // per seed, its records in order
	Last    []int       // per run, the index in Rows of its last record (-1: none)
	Updates []int       // per run, the updates done
	Seconds []float64   // per run, its wall time
	Failed  []string    // the diverged runs (their records up to the divergence are kept)
	Note    string      // where the runs ran
}

// Err is the error of the result when runs diverged (their records up to the divergence
// kept).
func (r *SMISGDResult) Err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d runs diverged (their records up to the divergence are written):\n  %s",
		len(r.Failed), len(r.Last), strings.Join(r.Failed, "\n  "))
}

// RunSMISGD trains one student per seed of a validated configuration.
func RunSMISGD(c *SMISGDConfig, env job.Env) (*SMISGDResult, error) {
	if err := c.CheckMemory(); err != nil {
		return nil, err
	}
	if err := env.Begin(); err != nil {
		return nil, err
	}
	return c.run(env)
}

func (c *SMISGDConfig) run(env job.Env) (*SMISGDResult, error) {
	res := &SMISGDResult{Note: fmt.Sprintf("cpu (host SGD, %d goroutines)", c.workers())}
	env.Notef("%s", res.Note)
	N := c.model(c.D, c.Alpha, 0).N()
	B := min(c.Batch, N)
	perRun := c.Epochs * ((N + B - 1) / B) * c.StepsPerBatch // the updates of a run, for the progress bar
	bar := env.Meter(c.Seeds*perRun, "smi sgd")
	defer bar.Finish()
	for s := 0; s < c.Seeds; s++ {
		seed := job.RunSeed(c.Seed, s)
		data, err := smi.Generate(c.model(c.D, c.Alpha, seed))
		if err != nil {
			return nil, err
		}
		o := c.options()
		done := 0
		o.Progress = func(int) { done++; bar.Add(1) }
		out, err := sgd.Run(data, o)
		bar.Add(perRun - done)
		if err != nil {
			if !errors.Is(err, sgd.ErrDiverged) {
				return nil, err
			}
			res.Failed = append(res.Failed, fmt.Sprintf("seed %d: %v", seed, err))
		}
		for _, pt := range out.Trace {
			res.Rows = append(res.Rows, SMISGDRow{Seed: seed, Update: pt.Update, Batch: pt.Batch, Epoch: pt.Epoch, M: pt.M, Q: pt.Q, Cos: pt.Cos,
				Loss: pt.Loss, TrainError: pt.TrainError, TestError: pt.TestError})
		}
		res.Last = append(res.Last, len(res.Rows)-1)
		res.Updates, res.Seconds = append(res.Updates, out.Updates), append(res.Seconds, out.Seconds)
	}
	return res, nil
}

// ExecuteSMISGD runs `aim smi sgd` as the command does: RunSMISGD with the outputs opened once
// the memory is checked, then the CSV (every record of every run), the figure and the
// manifest written. It returns the line to print; diverged runs give an error after
// everything is written.
func ExecuteSMISGD(c *SMISGDConfig, env job.Env) (string, error) {
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, "", "") },
		func(e job.Env) (*SMISGDResult, error) { return RunSMISGD(c, e) })
	if err != nil {
		return "", err
	}
	if err := SMISGDSchema.Write(out.CSV(), c.L, res.Rows); err != nil {
		return "", out.Abort(err)
	}
	params := c.params()
	for k, v := range map[string]any{"c": c.C, "D": c.D, "N": c.model(c.D, c.Alpha, 0).N(), "alpha": c.Alpha, "seeds": c.Seeds, "seed": c.Seed,
		"student_seed": c.StudentSeed, "lr": c.LR, "wd": c.WeightDecay, "weight_decay_applied": c.WeightDecay / float64(c.D),
		"batch": c.Batch, "steps_per_batch": c.StepsPerBatch, "epochs": c.Epochs, "init_scale": c.InitScale,
		"every": c.Every, "test_samples": c.TestSamples, "shuffle": c.Shuffle} {
		params[k] = v
	}
	man := env.Manifest("smi sgd", res.Note, params, start)
	man["runs"] = c.Seeds
	man["diverged"] = len(res.Failed)
	man["updates"] = res.Updates
	man["seconds"] = res.Seconds
	t, err := SMISGDSchema.Table(c.Out, c.L, res.Rows)
	if err != nil {
		return "", out.Abort(err)
	}
	t.Params = params
	fig, err := job.DrawFigure([]*table.Table{t}, c.Figure.Options(plot.Options{}))
	if err != nil {
		return "", out.Abort(err)
	}
	return out.Complete(fig, man, len(res.Rows), start, res.Err())
}
