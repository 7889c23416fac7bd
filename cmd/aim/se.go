package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"

	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

const seUsage = `Usage: aim se [flags]

State evolution of Bayes-optimal learning in the single-layer attention-indexed model
(docs/theory/aim.md section 2): one curve per --rho of the estimation error against alpha = N/D^2,
written as CSV (one row per point), a JSON manifest beside it, and a plot.

  aim se --channel softmax --T 2 --rho 0.1,0.2,0.5,1,2 --alpha 0.001:0.25:128
  aim se --channel hardmax --paper-compat --rho 0.5 --alpha 0.01:10:64:log
  aim se --channel hardmax --rescaled --rho 0.1,1 --alpha 0.1:20:64:log
  aim se --threshold --channel softmax --T 3 --rho 0.5
  aim se --channel hardmax --rho 0.5 --start both
  aim se --channel linear --noise 0.1 --teacher powerlaw:1.25 --D 100,400 --rho 1 --alpha 0.05:0.6:12

Columns free_entropy (Phi of the reported fixed point, per D^2, up to alpha times the channel's
q-independent constant) and coexist (two stable fixed points: the row reports the one of
largest Phi, the manifest lists both). --threshold also prints, per rho, a first-order
transition on the alpha grid: the information-theoretic alpha_IT (the branches' free entropies
cross) and the algorithmic alpha_alg (the uninformed branch jumps), or none.

--teacher powerlaw:GAMMA puts a target whose eigenvalues decay as k^-gamma in place of the
paper's Marchenko-Pastur one. Its theory is at a given dimension: one curve per --rho and --D
(column D; empty for mp), from the prior side of the D eigenvalues. The thresholds, the free
entropy (--start both) and the rho -> 0 limit (--rescaled) are the MP teacher's: refused with
a power law, and its manifest has no thresholds.

Grids: a list "0.05,0.1", a linear range "a:b:n" or a geometric range "a:b:n:log".

Flags:
`

// seFlags registers the flags of `aim se` into c.
func seFlags(fs *flag.FlagSet, c *aimjob.SEConfig, pm *progressMode) {
	modelFlags(fs, &c.Model, pm, true)
	noiseFlag(fs, &c.Model)
	gridVar(fs, &c.Alpha, "alpha", "sample complexity grid alpha = N/D^2 (alpha-bar_r = N/(D R) with --rescaled); default 0.001:0.25:128 for softmax, 0.01:10:128:log for hardmax, 0.005:0.6:120 for linear, 0.1:20:128:log rescaled")
	fs.BoolVar(&c.Rescaled, "rescaled", c.Rescaled, "add the rho -> 0 limit and put every curve against alpha-bar_r = alpha/rho (no default rho)")
	fs.BoolVar(&c.Threshold, "threshold", c.Threshold, "print alpha_PR per rho and alpha-bar_c, write no file")
	fs.IntVar(&c.GenSamples, "gen-samples", c.GenSamples, usage("gen-samples", "per point"))
	fs.Float64Var(&c.IntTol, "int-tol", c.IntTol, "hardmax T > 2: the largest relative error of the SE integral accepted at a point (0: any); a point beyond it is reported as unconverged")
	fs.IntVar(&c.GenInner, "gen-inner", c.GenInner, usage("gen-inner", ""))
	fs.Uint64Var(&c.Seed, "seed", c.Seed, usage("seed", "it seeds the Monte Carlo generalisation error"))
	fs.Float64Var(&c.Tol, "tol", c.Tol, usage("tol", "stop when the SE's estimation error moves less"))
	fs.IntVar(&c.MaxIter, "max-iter", c.MaxIter, usage("max-iter", "SE iterations"))
	dampingFlag(fs, &c.Damping, "auto: 0.5")
	fs.IntVar(&c.Workers, "workers", c.Workers, usage("workers", "points solved in parallel"))
	teacherFlag(fs, &c.Model, "a power law's theory is at each --D, with the prior side of its D eigenvalues (every channel); --start both, --threshold and --rescaled are the MP teacher's")
	theoryDFlag(fs, &c.Model)
	fs.StringVar(&c.Start, "start", c.Start, "SE start: uninformed (m = 1), informed (m = 1e-6) or both (report the fixed point of largest free entropy, flag where two coexist); both falls back to uninformed for channels without a free entropy (hardmax --paper-compat)")
}

// seThresholdConflicts are the flags that --threshold, which writes no file and solves no
// curve, would ignore.
var seThresholdConflicts = [][3]string{
	{"threshold", "rescaled", "--threshold would ignore --rescaled (its alpha-bar_c is the rho -> 0 threshold already)"},
	{"threshold", "out", "--threshold writes no file"},
	{"threshold", "plot", "--threshold draws no figure"},
	{"threshold", "size", "--threshold draws no figure"},
	{"threshold", "axes", "--threshold draws no figure"},
	{"threshold", "gen-samples", "--threshold computes no generalisation error"},
	{"threshold", "gen-inner", "--threshold computes no generalisation error"},
}

// newSEFlags returns the flag set of `aim se` (docs/cli/se.md is made from it) and the
// configuration and --quiet that parsing it fills.
func newSEFlags(stderr io.Writer) (*flag.FlagSet, *aimjob.SEConfig, *progressMode) {
	c, pm := aimjob.NewSEConfig(), new(progressMode)
	fs := newFlags("aim se", seUsage, stderr)
	seFlags(fs, c, pm)
	return fs, c, pm
}

// parseSE fills the configuration of `aim se` from its flags and validates it.
func parseSE(args []string, stderr io.Writer) (*aimjob.SEConfig, progressMode, error) {
	fs, c, pm := newSEFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	if err := conflicts(fs, seThresholdConflicts...); err != nil {
		return nil, "", err
	}
	if math.IsNaN(c.Damping) {
		c.Damping = aimjob.NewSEConfig().Damping
	}
	c.AlphaGiven = given(fs, "alpha")
	c.TGiven = given(fs, "T")
	c.StartGiven = given(fs, "start")
	if err := c.Validate(); err != nil {
		return c, *pm, err
	}
	return c, *pm, checkRhos(c.Rhos())
}

// runSE runs `aim se`; cancelling ctx stops it with the points it solved written.
func runSE(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseSE(args, stderr)
	if err != nil {
		return err
	}
	if c.Threshold {
		th, err := aimjob.SEThresholdsOf(c)
		if err != nil {
			return err
		}
		printThresholds(stdout, c, th)
		return nil
	}
	return report(stdout)(aimjob.ExecuteSE(c, envContext(ctx, stderr, pm)))
}

// printThresholds prints alpha-bar_c and, per rho, alpha_PR beside the counting formula.
func printThresholds(stdout io.Writer, c *aimjob.SEConfig, th aimjob.SEThresholds) {
	mode := ""
	if c.PaperCompat {
		mode = " (paper-compat)"
	}
	fmt.Fprintf(stdout, "channel %s%s, T = %d\n", c.Channel, mode, c.T)
	if th.AlphaBarCErr > 0 {
		fmt.Fprintf(stdout, "alpha-bar_c = %.6g +- %.2g   (rho -> 0 weak recovery, in alpha/rho = N/(D R); error of the polytope integrals)\n", th.AlphaBarC, th.AlphaBarCErr)
	} else {
		fmt.Fprintf(stdout, "alpha-bar_c = %.10g   (rho -> 0 weak recovery, in alpha/rho = N/(D R))\n", th.AlphaBarC)
	}
	for _, r := range c.Rhos() {
		a := th.AlphaPR[table.RhoKey(r)]
		if math.IsInf(a, 1) {
			fmt.Fprintf(stdout, "rho = %-6g alpha_PR = none (the %s channel reaches mmse = 0 only as alpha -> inf)\n", r, c.Channel)
			continue
		}
		cnt := th.AlphaPRCounting[table.RhoKey(r)]
		fmt.Fprintf(stdout, "rho = %-6g alpha_PR = %.8g   counting formula %.8g   relative difference %.1e\n", r, a, cnt, math.Abs(a-cnt)/cnt)
	}
	printFirstOrder(stdout, c, th)
}

// printFirstOrder prints, per rho, the first-order transition found on the alpha grid, or
// none, or why it was not searched.
func printFirstOrder(stdout io.Writer, c *aimjob.SEConfig, th aimjob.SEThresholds) {
	as := c.Alphas()
	if c.Rescaled || len(as) == 0 {
		return
	}
	for _, r := range c.Rhos() {
		tr, ok := th.FirstOrder[table.RhoKey(r)]
		switch {
		case !ok:
			fmt.Fprintf(stdout, "rho = %-6g first-order transition: not searched (the %s channel has no free entropy)\n", r, c.Channel)
		case !tr.Found:
			fmt.Fprintf(stdout, "rho = %-6g first-order transition: none (the uninformed and informed starts reach one fixed point at each of %d alphas in [%g, %g])\n",
				r, len(as), as[0], as[len(as)-1])
		default:
			fmt.Fprintf(stdout, "rho = %-6g first-order transition: alpha_IT = %s (free entropies cross)   alpha_alg = %s (the uninformed branch jumps)   spinodal %s (the informed branch appears)\n",
				r, orBeyond(tr.AlphaIT, "none on the interval"), orBeyond(tr.AlphaAlg, "above the grid"), orBeyond(tr.AlphaSpinodal, "below the grid"))
		}
	}
}

// orBeyond formats a threshold, or says why there is none.
func orBeyond(v float64, none string) string {
	if math.IsNaN(v) {
		return none
	}
	return fmt.Sprintf("%.8g", v)
}
