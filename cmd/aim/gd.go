package main

import (
	"context"
	"flag"
	"io"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
)

const gdUsage = `Usage: aim gd [flags]

Gradient-descent students of the softmax attention-indexed model (docs/theory/aim.md section 4),
or of the extensive-width quadratic network with --channel linear (section 2.8):
W in R^{R x D}, S = W^T W / sqrt(R D), full-batch loss sum (y-hat - y)^2 / D, Adam or plain GD;
--weight-decay lambda adds lambda Tr S to the loss trained (final_loss stays the data loss, and
the penalty column holds lambda Tr S). --direct trains S itself, symmetric and element by
element from S = 0, instead of W: the weight decay is then lambda ||S||_F^2 (ridge), and the
penalty column holds that.
One training per (rho, alpha, seed); with --restarts K the estimate is the average of the final
S of K students on the same data ("averaged GD"), trained as many at once as fit in memory
(one pass over the tokens per step for all of them; the same numbers as one at a time). The
plot puts GD single, GD averaged, AMP
(from --amp) and the SE line against alpha-bar = alpha (T^2 + T - 2), as in the paper's figure.

  aim gd --T 2 --rho 0.5 --D 100 --alpha 0.01,0.05,0.1,0.25 --seeds 4 --restarts 32
  aim gd --D 100 --alpha 0.1 --seeds 1 --trace results/gd_trace.csv
  aim gd --channel linear --rho 0.5 --D 100 --alpha 0.1,0.2,0.3 --seeds 2 --restarts 16
  aim gd --channel linear --D 100 --alpha 0.2 --weight-decay 0.01 --spectrum results/gd_spectrum.csv
  aim gd --channel linear --D 100 --alpha 0.2,0.4 --direct --weight-decay 0.1 --optimizer gd --lr 0.05

Hardmax students are not offered: the hardmax output has no useful gradient.

Flags:
`

// gdFlags registers the flags of `aim gd` into c.
func gdFlags(fs *flag.FlagSet, c *aimjob.GDConfig, pm *progressMode) {
	simFlags(fs, &c.Sim, pm, false)
	noiseFlag(fs, &c.Sim.Model)
	gridVar(fs, &c.Alpha, "alpha", "sample complexity alpha = N/D^2: a list or range (linear: default "+aimjob.LinearAlpha+")")
	teacherFlag(fs, &c.Sim.Model, "the runs draw it at --D; with a power law, the se_mmse column and the plot's line are its state evolution at that D")
	fs.IntVar(&c.Restarts, "restarts", c.Restarts, "students averaged per data set (1: GD single; the paper's averaged GD uses 32)")
	fs.IntVar(&c.Steps, "max-iter", c.Steps, usage("max-iter", "full-batch steps per student, every one taken (GD has no stopping rule)"))
	deprecate(fs, "steps", "max-iter", "")
	fs.Float64Var(&c.LR, "lr", c.LR, "learning rate")
	fs.StringVar(&c.Optimizer, "optimizer", c.Optimizer, "adam or gd")
	fs.BoolVar(&c.Uncentred, "uncentred", c.Uncentred, "linear channel: train on the uncentred outputs x^T S x / sqrt(D) of student and teacher, as the authors' GD of the quadratic network does (docs/theory/aim.md 2.8), instead of the centred h")
	fs.Float64Var(&c.WeightDecay, "weight-decay", c.WeightDecay, vocabulary["weight-decay"]+" = lambda ||W||_F^2 / sqrt(R D), nuclear-norm regularisation of S (docs/theory/aim.md 4.1); with --direct lambda ||S||_F^2")
	fs.BoolVar(&c.Direct, "direct", c.Direct, "train S itself, element by element (symmetric, from S = 0), instead of W: the weight decay is then lambda ||S||_F^2 (ridge) instead of lambda Tr S (docs/theory/aim.md 4.1); one student (--restarts 1), no --R")
	fs.IntVar(&c.R, "R", c.R, "student width (0: the teacher's R = floor(rho D); with --direct the R_student column holds D)")
	fs.StringVar(&c.Trace, "trace", c.Trace, "write the training curve (loss and error against step) of the first student of each run to this CSV, and its plot beside it")
	fs.StringVar(&c.Spectrum, "spectrum", c.Spectrum, "write the D eigenvalues of the first student's final S of each run to this CSV: columns rho, alpha, seed, weight_decay, direct, index (0 the smallest), eigenvalue")
	fs.IntVar(&c.TraceEvery, "trace-every", c.TraceEvery, "steps between traced points (with --trace)")
	fs.StringVar(&c.AMP, "amp", c.AMP, "an 'aim amp' CSV whose points to draw on the plot")
	fs.StringVar(&c.SE, "se", c.SE, "an 'aim se' CSV (same T and beta, a curve at every --rho) whose lines to draw on the plot, instead of solving the SE on a dense grid")
}

// newGDFlags returns the flag set of `aim gd` (docs/cli/gd.md is made from it) and the
// configuration and --quiet that parsing it fills.
func newGDFlags(stderr io.Writer) (*flag.FlagSet, *aimjob.GDConfig, *progressMode) {
	c, pm := aimjob.NewGDConfig(), new(progressMode)
	fs := newFlags("aim gd", gdUsage, stderr)
	gdFlags(fs, c, pm)
	return fs, c, pm
}

// parseGD fills the configuration of `aim gd` from its flags and validates it.
func parseGD(args []string, stderr io.Writer) (*aimjob.GDConfig, progressMode, error) {
	fs, c, pm := newGDFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	if given(fs, "trace-every") && !given(fs, "trace") {
		return nil, "", usagef("--trace-every needs --trace (without a trace file it is ignored)")
	}
	c.AlphaGiven = given(fs, "alpha")
	c.TGiven = given(fs, "T")
	if err := c.Validate(); err != nil {
		return c, *pm, err
	}
	return c, *pm, checkRhos(c.Rhos())
}

// runGD runs `aim gd`; cancelling ctx stops it with the runs done written.
func runGD(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseGD(args, stderr)
	if err != nil {
		return err
	}
	return report(stdout)(aimjob.ExecuteGD(c, envContext(ctx, stderr, pm)))
}
