package main

import (
	"context"
	"flag"
	"io"

	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"
)

const smiAMPUsage = `Usage: aim smi amp [flags]

GAMP for the SMI model (docs/theory/smi.md 3, the paper's Algorithm 1) on teachers and data drawn at
dimension D, N = floor(alpha D): one run per (alpha, seed), written as CSV (final overlaps per
layer: Q_ll, |M_ll|, the teacher-normalised m_ll = |M_ll|/(||w*_l||^2/D), the cosine
|M_ll|/sqrt(Q_ll ||w*_l||^2/D), e_gen on fresh samples), a trace CSV with every iteration, a
JSON manifest and two plots: the mean final m_ll per layer against alpha with its standard
error over seeds (beside the SE Q_ll of --se, which m_ll estimates), and beside the trace, the
cosines against the iteration for the first seed at each alpha.

  aim smi se --out results/smi-se.csv
  aim smi amp --D 1000 --alpha 0.2,0.5,0.9,1.2,1.5 --seeds 4 --se results/smi-se.csv

Seeds: run s uses seed --seed + s for its teacher, data, start and test set, at every alpha.

Flags:
`

// smiAMPFlags registers the flags of `aim smi amp` into c.
func smiAMPFlags(fs *flag.FlagSet, c *smijob.SMIAMPConfig, pm *progressMode) {
	smiFlags(fs, &c.SMI, true, pm)
	fs.IntVar(&c.D, "D", c.D, "token dimension")
	gridVar(fs, &c.Alpha, "alpha", "sample complexities alpha = N/D: a list or range")
	fs.IntVar(&c.Seeds, "seeds", c.Seeds, usage("seeds", "every alpha shares its teachers"))
	fs.Uint64Var(&c.Seed, "seed", c.Seed, usage("seed", "run s uses seed + s for its teacher, data, start and test set"))
	fs.IntVar(&c.Iters, "max-iter", c.Iters, usage("max-iter", "GAMP iterations"))
	deprecate(fs, "iters", "max-iter", "")
	dampingFlag(fs, &c.Damping, "of What; auto: 0.2 (What <- 0.2 What + 0.8 What_new, the authors')")
	fs.Float64Var(&c.Epsilon, "epsilon", c.Epsilon, "ridge of the channel variance V = C-hat + epsilon I")
	fs.Float64Var(&c.Noise, "noise", c.Noise, "variance Delta of Gaussian noise on the teacher's pre-activations, y = g(Z + sqrt(Delta) xi): the model of the SE run with --epsilon Delta (0: noiseless)")
	fs.Float64Var(&c.Tol, "tol", c.Tol, usage("tol", "stop when ||W-hat new - W-hat||^2/(L D) < tol (0: never)"))
	fs.StringVar(&c.Init, "init", c.Init, "the start: random (What_0 = init-scale N(0, 1), C-hat_0 = I, as the authors), consistent (the same What_0 with C-hat_0 = I - What_0 What_0^T / D, on the Nishimori line; init-scale < 1), informed (What_0 = q W* + sqrt(q (1 - q)) N(0, 1) with q = init-scale < 1 and the consistent C-hat_0: the SE's informed start) or zero (stays at the uninformative point)")
	fs.Float64Var(&c.InitScale, "init-scale", c.InitScale, "the scale of the random What_0, or the overlap q of the informed start")
	fs.IntVar(&c.TestSamples, "gen-samples", c.TestSamples, usage("gen-samples", "fresh samples at each iteration"))
	deprecate(fs, "test-samples", "gen-samples", "")
	quadMaxEvalFlag(fs, &c.QuadMaxEval)
	integralFlags(fs, &c.SMIIntegrals, smijob.SMIAMPDefaultDraws)
	fs.StringVar(&c.Trace, "trace", c.Trace, "CSV of every iteration of every run (its plot goes beside it as .png); auto: beside --out, its name with -trace before .csv; empty for none")
	fs.StringVar(&c.SE, "se", c.SE, "a CSV written by aim smi se (same L, M, c, beta) whose Q_ll to draw as lines on the plot")
}

// newSMIAMPFlags returns the flag set of `aim smi amp` (docs/cli/smi-amp.md is made from it)
// and the configuration and --quiet that parsing it fills.
func newSMIAMPFlags(stderr io.Writer) (*flag.FlagSet, *smijob.SMIAMPConfig, *progressMode) {
	c, pm := smijob.NewSMIAMPConfig(), new(progressMode)
	fs := newFlags("aim smi amp", smiAMPUsage, stderr)
	smiAMPFlags(fs, c, pm)
	return fs, c, pm
}

// parseSMIAMP fills the configuration of `aim smi amp` from its flags and validates it.
func parseSMIAMP(args []string, stderr io.Writer) (*smijob.SMIAMPConfig, progressMode, error) {
	fs, c, pm := newSMIAMPFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	if given(fs, "init-scale") && c.Init == "zero" {
		return nil, "", usagef("--init-scale and --init zero conflict: the zero start has no scale")
	}
	smiDampingNote(fs, c.Damping)
	return c, *pm, c.Validate()
}

// runSMIAMP runs `aim smi amp`; cancelling ctx stops it with the runs done written.
func runSMIAMP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseSMIAMP(args, stderr)
	if err != nil {
		return err
	}
	return report(stdout)(smijob.ExecuteSMIAMP(c, envContext(ctx, stderr, pm)))
}

const smiSGDUsage = `Usage: aim smi sgd [flags]

Mini-batch SGD of a deep tied attention student with the teacher's architecture
(docs/theory/smi.md 4, the paper's Fig. 2 bottom): loss sum_batch ||y-hat - y||_F^2 / D, learning
rate --lr, weight decay --wd / D, --steps-per-batch consecutive updates on each mini-batch
of --batch samples, --epochs passes. One run per seed (teacher, data and test set from
seed --seed + s). The CSV holds one row per (seed, record): per layer the overlap
M_ll = w-hat_l . w*_l / D (signed), Q_ll = ||w-hat_l||^2/D and the cosine
|M_ll| / sqrt(Q_ll ||w*_l||^2/D), the mini-batch loss and the test error; the plot draws the
cosines against the update.

  aim smi sgd --D 500 --alpha 15 --seeds 8 --student-seed 42

Flags:
`

// smiSGDFlags registers the flags of `aim smi sgd` into c.
func smiSGDFlags(fs *flag.FlagSet, c *smijob.SMISGDConfig, pm *progressMode) {
	smiFlags(fs, &c.SMI, true, pm)
	fs.IntVar(&c.D, "D", c.D, "token dimension")
	fs.Float64Var(&c.Alpha, "alpha", c.Alpha, "sample complexity alpha = N/D")
	fs.IntVar(&c.Seeds, "seeds", c.Seeds, usage("seeds", ""))
	fs.Uint64Var(&c.Seed, "seed", c.Seed, usage("seed", "run s uses seed + s for its teacher, data and test set"))
	fs.Int64Var(&c.StudentSeed, "student-seed", c.StudentSeed, "seed of the student's start (and shuffling) for every run; -1: each run's data seed")
	fs.Float64Var(&c.LR, "lr", c.LR, "learning rate")
	fs.Float64Var(&c.WeightDecay, "wd", c.WeightDecay, "weight decay lambda; the decay applied is lambda / D")
	fs.IntVar(&c.Batch, "batch", c.Batch, "mini-batch size")
	fs.IntVar(&c.StepsPerBatch, "steps-per-batch", c.StepsPerBatch, "consecutive updates on each mini-batch")
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "passes over the training set")
	fs.Float64Var(&c.InitScale, "init-scale", c.InitScale, "the student starts at init-scale N(0, 1) entrywise")
	fs.IntVar(&c.Every, "every", c.Every, "record every this many updates (0: once per epoch); the start and the last update are always recorded")
	fs.IntVar(&c.TestSamples, "gen-samples", c.TestSamples, usage("gen-samples", "fresh samples of the test error at each record"))
	deprecate(fs, "test-samples", "gen-samples", "")
	fs.BoolVar(&c.Shuffle, "shuffle", c.Shuffle, "reshuffle the samples each epoch (default: the notebook's fixed order)")
}

// newSMISGDFlags returns the flag set of `aim smi sgd` (docs/cli/smi-sgd.md is made from it)
// and the configuration and --quiet that parsing it fills.
func newSMISGDFlags(stderr io.Writer) (*flag.FlagSet, *smijob.SMISGDConfig, *progressMode) {
	c, pm := smijob.NewSMISGDConfig(), new(progressMode)
	fs := newFlags("aim smi sgd", smiSGDUsage, stderr)
	smiSGDFlags(fs, c, pm)
	return fs, c, pm
}

// parseSMISGD fills the configuration of `aim smi sgd` from its flags and validates it.
func parseSMISGD(args []string, stderr io.Writer) (*smijob.SMISGDConfig, progressMode, error) {
	fs, c, pm := newSMISGDFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	return c, *pm, c.Validate()
}

func runSMISGD(args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseSMISGD(args, stderr)
	if err != nil {
		return err
	}
	return report(stdout)(smijob.ExecuteSMISGD(c, env(stderr, pm)))
}
