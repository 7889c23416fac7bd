package main

import (
	"context"
	"flag"
	"io"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
)

const ampUsage = `Usage: aim amp [flags]

GAMP-RIE (docs/theory/aim.md section 3) on teachers and data drawn at dimension D, beside the state
evolution of the same parameters: one run per (rho, alpha, seed), written as CSV, a JSON
manifest, and a plot of the mean final error with its standard error over the SE line.

  aim amp --channel softmax --T 2 --rho 0.5 --D 200 --alpha 0.05,0.1,0.15 --seeds 8
  aim amp --channel hardmax --rho 0.5 --D 100 --alpha 0.2,1 --seeds 4 --max-iter 500
  aim amp --channel linear --rho 0.5 --D 200 --alpha 0.2,0.4,0.6 --weight-decay 0.1
  aim amp --channel softmax --T 2 --rho 0.5 --D 100 --alpha 0.1,0.25 --weight-decay 0.01
  aim amp --channel linear --teacher powerlaw:1.25 --rho 1 --D 100 --alpha 0.1,0.2,0.3

--weight-decay LAMBDA (> 0, linear and softmax channels) runs GAMP for empirical risk
minimisation instead: the estimator is the minimiser of the square loss (the one aim gd trains)
plus lambda Tr S over PSD S (docs/theory/aim.md 4.1; the softmax's channel step is a Newton
solve per sample on the host), the weight_decay column holds lambda, se_mmse the ERM state
evolution's test error (aim erm --weight-decay LAMBDA) instead of the Bayes-optimal mmse, and
the plot's line is that state evolution's. The limit lambda -> 0+ has no GAMP fixed point: it
is aim erm --weight-decay 0.

Seeds: run s of a point uses seed --seed + s for its teacher, data and start, so the same
seed gives the same numbers on any device, and every alpha shares its teachers.

Flags:
`

// ampFlags registers the flags of `aim amp` into c.
func ampFlags(fs *flag.FlagSet, c *aimjob.AMPConfig, pm *progressMode) {
	simFlags(fs, &c.Sim, pm, true)
	noiseFlag(fs, &c.Sim.Model)
	gridVar(fs, &c.Alpha, "alpha", "sample complexity alpha = N/D^2: a list or range (linear: default "+aimjob.LinearAlpha+")")
	teacherFlag(fs, &c.Sim.Model, "the runs draw it at --D; with a power law, the se_mmse column and the plot's line are its state evolution at that D (the ERM one with --weight-decay)")
	fs.StringVar(&c.Trace, "trace", c.Trace, "also write every iteration of every run to this CSV")
	fs.IntVar(&c.MaxIter, "max-iter", c.MaxIter, usage("max-iter", "GAMP-RIE iterations (0: 100 for softmax, 500 for hardmax, as in the paper; 500 for GAMP for ERM)"))
	dampingFlag(fs, &c.Damping, "of omega and V; auto: 0.5 for softmax, as in the paper, 0 for hardmax, which converges several times faster undamped; hardmax raises it halfway to 1, at most to 0.75, when the iteration cycles")
	fs.Float64Var(&c.Tol, "tol", c.Tol, usage("tol", "stop when the estimated distance to the fixed point, ||S-hat - S-hat*||^2/D (the step over (1 - r)^2, r the contraction rate of the last steps), is below tol"))
	fs.BoolVar(&c.PaperInit, "paper-init", c.PaperInit, "start as the authors' code: a random prior draw with omega = V = c-hat = 10 (default: the prior mean, as state evolution starts)")
	fs.StringVar(&c.SE, "se", c.SE, "an 'aim se' CSV (same channel, T and beta, a curve at every --rho) whose lines to draw on the plot, instead of solving the SE on a dense grid")
	fs.Float64Var(&c.WeightDecay, "weight-decay", c.WeightDecay, usage("weight-decay", "one lambda > 0: run GAMP for ERM, the minimiser of the square loss plus lambda Tr S over PSD S, instead of GAMP-RIE, beside the ERM state evolution instead of the Bayes-optimal one (linear and softmax channels; lambda -> 0+ is aim erm --weight-decay 0); not given: GAMP-RIE, column weight_decay 0"))
}

// newAMPFlags returns the flag set of `aim amp` (docs/cli/amp.md is made from it) and the
// configuration and --quiet that parsing it fills.
func newAMPFlags(stderr io.Writer) (*flag.FlagSet, *aimjob.AMPConfig, *progressMode) {
	c, pm := aimjob.NewAMPConfig(), new(progressMode)
	fs := newFlags("aim amp", ampUsage, stderr)
	ampFlags(fs, c, pm)
	return fs, c, pm
}

// parseAMP fills the configuration of `aim amp` from its flags and validates it.
func parseAMP(args []string, stderr io.Writer) (*aimjob.AMPConfig, progressMode, error) {
	fs, c, pm := newAMPFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	c.AlphaGiven = given(fs, "alpha")
	c.TGiven = given(fs, "T")
	c.ERM = given(fs, "weight-decay")
	if err := c.Validate(); err != nil {
		return c, *pm, err
	}
	return c, *pm, checkRhos(c.Rhos())
}

// runAMP runs `aim amp`; cancelling ctx stops it with the runs done written.
func runAMP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseAMP(args, stderr)
	if err != nil {
		return err
	}
	return report(stdout)(aimjob.ExecuteAMP(c, envContext(ctx, stderr, pm)))
}
