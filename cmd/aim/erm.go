package main

import (
	"context"
	"flag"
	"io"
	"math"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
)

const ermUsage = `Usage: aim erm [flags]

State evolution of empirical risk minimisation (ERM) with weight decay in the extensive-width
quadratic network, the attention-indexed model's linear channel at T = 1, or in the softmax AIM
(--channel softmax, T >= 2) (docs/theory/aim.md 4.1, docs/guide/erm.md): the minimiser S-hat of
the square loss aim gd trains plus lambda Tr S over PSD matrices (the nuclear norm of S, what
weight decay on W with S = W^T W / sqrt(R D) becomes), which gradient descent reaches with a
wide enough student. With --penalty ridge the regulariser is lambda ||S||_F^2
over symmetric S instead, what weight decay becomes when S itself is trained (aim gd
--direct): S-hat = s Y, a shrinkage s (column shrink) of every eigenvalue, no threshold. One
line per --rho and --weight-decay of its test error ||S-hat - S||_F^2 / D against alpha =
N/D^2, beside the Bayes-optimal error of aim se at the same point, written as CSV (one row per
point), a JSON manifest beside it, and a plot.

  aim erm --rho 0.5 --noise 0.25 --weight-decay 0,0.1,1
  aim erm --rho 0.5 --alpha 0.3 --spectrum 0.3 --weight-decay 0.1
  aim erm --rho 0.5 --alpha 0.1,0.2,0.3 --weight-decay 0,0.1 --gd results/gd.csv
  aim erm --rho 0.5 --penalty ridge --weight-decay 0,0.1 --spectrum 0.3
  aim erm --teacher powerlaw:1.25 --D 100 --rho 1 --noise 0.1 --weight-decay 0.05 --spectrum 0.3
  aim erm --channel softmax --T 2 --rho 0.5 --alpha 0.05:0.3:6 --weight-decay 0,0.01,0.1

The softmax's channel average at lambda > 0 is Monte Carlo over --samples draws (seconds a
point; columns test_error_err and train_error_err, the standard errors they leave); its lambda = 0 (noiseless labels
only) is the linear channel's at alpha (T^2 + T - 2)/2, exactly, and its alpha_c is 2/(T^2 + T - 2)
times the linear channel's. Weight decay 0 is the limit lambda -> 0+: the minimal nuclear-norm interpolator while the data
can be interpolated (column interpolating), least squares over PSD matrices beyond (ridge: the
minimal Frobenius-norm interpolator below alpha = 1/2, least squares above; at alpha = 1/2 its
error is infinite and the row is left out, the manifest says so under infinite). The manifest
records, per rho, the nuclear estimator's thresholds at lambda -> 0+ under thresholds:
perfect_recovery, alpha_c above which it recovers S from noiseless labels, and with --noise > 0
interpolation, alpha_interp below which it fits every label; the plot draws them beside the
nuclear line of lambda = 0 when --weight-decay has 0. --gd draws the points of an aim gd CSV
(the same channel, T and beta; its weight_decay column, 0 where it has none, picks the line's colour; only
its runs that match --penalty: direct true for ridge, false or no column for nuclear).
--spectrum ALPHA also writes <out>_spectrum.csv, the density of the continuous part of S-hat's
limiting spectrum on a grid of 400 points over its support for each rho and lambda, every row
with the atom at 0 (column atom = 1 - rank; ridge: 0, and the support can reach below 0), and
its figure; --eigenvalues draws the eigenvalues of an aim gd --spectrum CSV at that alpha
beside it as histograms (of the students that match --penalty; nuclear: those below 1e-6 left
out, their share set beside the predicted atom).

--teacher powerlaw:GAMMA puts a target whose eigenvalues decay as k^-gamma in place of the
paper's Marchenko-Pastur one: the ERM and Bayes-optimal theories are solved at each --D (one
line each, column D; empty for mp), the thresholds are the MP teacher's and left out, and the
spectrum of --spectrum has the teacher's outliers beside its bulk.

Grids: a list "0.05,0.1", a linear range "a:b:n" or a geometric range "a:b:n:log".

Flags:
`

// ermFlags registers the flags of `aim erm` into c.
func ermFlags(fs *flag.FlagSet, c *aimjob.ERMConfig, pm *progressMode) {
	fs.StringVar(&c.Channel, "channel", c.Channel, "output channel: linear (y = h at T = 1: the extensive-width quadratic network, width ratio kappa = rho) or softmax (the loss aim gd trains, sum (y-hat - y)^2 / D; lambda > 0 by Monte Carlo, --samples); the hardmax output has no useful loss")
	fs.IntVar(&c.T, "T", c.T, "tokens per sequence, an integer (linear: 1, its default)")
	fs.Float64Var(&c.Beta, "beta", c.Beta, "softmax inverse temperature")
	fs.Var((*listFlag)(&c.Rho), "rho", "rank ratio rho = R/D: a value, list or range; repeatable, each value once (default 0.5)")
	repeatable(fs, "rho")
	gridVar(fs, &c.Alpha, "alpha", "sample complexity grid alpha = N/D^2 (default "+aimjob.ERMAlpha+")")
	fs.Float64Var(&c.Noise, "noise", c.Noise, "label noise Delta >= 0: y = g(h) + sqrt(Delta) xi per output entry (softmax: lambda > 0 only)")
	fs.IntVar(&c.Samples, "samples", c.Samples, "Monte Carlo draws of the channel average per SE iteration (softmax at lambda > 0; the columns test_error_err and train_error_err are the standard errors they leave)")
	gridVar(fs, &c.WeightDecay, "weight-decay", usage("weight-decay", "the nuclear-norm regularisation of S (--penalty ridge: lambda ||S||_F^2); a list or range of lambda, one line each; 0 is the limit lambda -> 0+ (the minimal nuclear-norm interpolator, then PSD least squares)"))
	teacherFlag(fs, &c.Model, "a power law's theory (ERM and Bayes-optimal) is at each --D; the thresholds alpha_c and alpha_interp are the MP teacher's, neither recorded nor drawn for it")
	theoryDFlag(fs, &c.Model)
	fs.StringVar(&c.Penalty, "penalty", c.Penalty, "the estimator's regulariser: nuclear (lambda Tr S over PSD S, weight decay on W, as aim gd trains) or ridge (lambda ||S||_F^2 over symmetric S, weight decay on S itself, as aim gd --direct trains)")
	fs.Float64Var(&c.Spectrum, "spectrum", c.Spectrum, "also write the limiting spectrum of S-hat at this alpha to <out>_spectrum.csv, and its figure beside the plot")
	fs.StringVar(&c.GD, "gd", c.GD, "an 'aim gd' CSV of the same channel whose points (mean and standard error over seeds of its error column per alpha and weight decay) to draw on the plot")
	fs.StringVar(&c.Eigenvalues, "eigenvalues", c.Eigenvalues, "with --spectrum: an 'aim gd --spectrum' CSV whose eigenvalues at that alpha, a --rho and a --weight-decay to draw beside the predicted density as histograms")
	outputFlags(fs, &c.Out, &c.Plot, &c.Figure, pm)
	fs.StringVar(&c.Axes, "axes", c.Axes, "plot axes: auto, lin, logx, logy or loglog (auto: lin)")
	fs.Float64Var(&c.Tol, "tol", c.Tol, usage("tol", "stop when the ERM SE's test error moves less"))
	fs.IntVar(&c.MaxIter, "max-iter", c.MaxIter, usage("max-iter", "ERM SE iterations"))
	dampingFlag(fs, &c.Damping, "auto: 0.5")
	fs.IntVar(&c.Workers, "workers", c.Workers, usage("workers", "points solved in parallel"))
}

// newERMFlags returns the flag set of `aim erm` (docs/cli/erm.md is made from it) and the
// configuration and --quiet that parsing it fills.
func newERMFlags(stderr io.Writer) (*flag.FlagSet, *aimjob.ERMConfig, *progressMode) {
	c, pm := aimjob.NewERMConfig(), new(progressMode)
	fs := newFlags("aim erm", ermUsage, stderr)
	ermFlags(fs, c, pm)
	return fs, c, pm
}

// parseERM fills the configuration of `aim erm` from its flags and validates it.
func parseERM(args []string, stderr io.Writer) (*aimjob.ERMConfig, progressMode, error) {
	fs, c, pm := newERMFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	if math.IsNaN(c.Damping) {
		c.Damping = aimjob.NewERMConfig().Damping
	}
	c.AlphaGiven = given(fs, "alpha")
	c.TGiven = given(fs, "T")
	c.SpectrumGiven = given(fs, "spectrum")
	if err := c.Validate(); err != nil {
		return c, *pm, err
	}
	return c, *pm, checkRhos(c.Rhos())
}

// runERM runs `aim erm`; cancelling ctx stops it with the points it solved written.
func runERM(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseERM(args, stderr)
	if err != nil {
		return err
	}
	return report(stdout)(aimjob.ExecuteERM(c, envContext(ctx, stderr, pm)))
}
