package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

const smiUsage = `Usage: aim smi se|thresholds|amp|sgd [flags]

The sequence multi-index (SMI) model with deep tied low-rank attention output (docs/theory/smi.md):
L rank-1 attention layers on M tokens with skip strength c; the label is the last layer's
attention matrix y = softmax_row(beta v_L v_L^T), and alpha = N/D.

  aim smi se          Bayes-optimal state evolution: the overlaps Q_ll and the generalisation
                      error against alpha, with the weak-recovery thresholds of each layer
  aim smi thresholds  the stability thresholds alpha_l = 1/F_l and the conditional
                      (grand-staircase) thresholds against the skip strength c
  aim smi amp         GAMP on teachers drawn at dimension D: final overlaps per (alpha, seed)
                      and the per-iteration trace
  aim smi sgd         mini-batch SGD of the same architecture (the paper's Fig. 2, bottom)

The state evolution, the thresholds and AMP need M = 2 and L <= 4 (the channel integrals: L = 3
by importance sampling or the cubature, L = 4 sampled); SGD takes any L >= 1 and M >= 2.

Run 'aim smi se -h' for the flags of a subcommand.
`

// runSMI dispatches `aim smi <sub>`; every error names the subcommand. ctx stops aim smi se
// and aim smi amp.
func runSMI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, smiUsage)
		return usagef("missing subcommand (want se, thresholds, amp or sgd)")
	}
	var err error
	switch sub := args[0]; sub {
	case "se":
		err = runSMISE(ctx, args[1:], stdout, stderr)
	case "thresholds":
		err = runSMIThresholds(args[1:], stdout, stderr)
	case "amp":
		err = runSMIAMP(ctx, args[1:], stdout, stderr)
	case "sgd":
		err = runSMISGD(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, smiUsage)
		return errHelp
	default:
		fmt.Fprint(stderr, smiUsage)
		return usagef("unknown subcommand %q (want se, thresholds, amp or sgd)", sub)
	}
	return err
}

// smiError prefixes the error of subcommand sub with its name, keeping bad input bad input:
// the error of an SMI run of a sweep.
func smiError(sub string, err error) error {
	if err == nil || errors.Is(err, errHelp) {
		return err
	}
	var u job.InputError
	if errors.As(err, &u) {
		return job.InputError{Err: fmt.Errorf("%s: %w", sub, u.Err)}
	}
	return fmt.Errorf("%s: %w", sub, err)
}

const smiSEUsage = `Usage: aim smi se [flags]

Bayes-optimal state evolution of the SMI model with deep tied attention (docs/theory/smi.md 2.2):
the diagonal overlaps Q_ll per layer against alpha = N/D (each point continued from the
previous one) with their Monte Carlo standard errors Qerr_ll, the generalisation errors
(gen_error: the authors' plug-in E||g(Z) - g(omega)||^2; gen_error_bo: the Bayes-optimal
E tr Cov(g(Z) | omega); gen_error_last_layer: the plug-in one with every other layer's overlap
set to 0), the stability thresholds alpha_l = 1/F_l at Q = 0 and the onsets of the overlaps
read off the curve (first Q_ll > 0.01, extrapolated to 0).

Each SE iteration averages over --samples draws, split into --replicates independent
randomisations (shifts of the Halton points, or batches with --monte-carlo); their spread
gives Qerr_ll, propagated through the fixed point. --samples is a fixed count unless
--mc-error E > 0 is given: then --samples is the first count, and the draws grow until every
Qerr_ll <= E, up to --max-samples; a point that misses E there is written with the error it
reached and a warning. With --newton the solves at the larger counts take Newton steps from
the last fixed point (1 + 2L map evaluations a step, one to three steps) instead of damped
iterations: the cheap way to many samples where the map is flat (L = 3 and 4, a layer rising
behind a sharp one). At L >= 3 a layer that ends at the sampled floor (Q_ll = 0.01) is
written as Q_ll = 0 where the map's slope there is below 1 by two standard errors; where the
draws cannot settle that, its Qerr_ll is +Inf, with a warning (more draws, or --mc-error,
settle it).

--start uninformed (the default, Q = 0.05 I), informed (Q = (1 - 1e-4) I) or both (twice the
cost) picks where each point's iteration starts. Every row carries the free entropy
free_entropy = psi_in(q-hat) - tr(Q q-hat)/2 + alpha psi_out(Q) of its fixed point, with its
Monte Carlo error free_entropy_stderr; with both, a row is the fixed point of larger free
entropy, start says which start reached it (both: the two reached one), and coexist is true
where the two starts found two fixed points (both listed in the manifest).

  aim smi se --L 2 --alpha 0.05:1.6:32
  aim smi se --L 2 --alpha 0.3,1.2 --samples 400 --start both
  aim smi se --L 2 --alpha 0.3,0.5 --mc-error 5e-3
  aim smi se --L 3 --alpha 0.1:3:30 --samples 8000
  aim smi se --L 3 --alpha 1.5 --samples 4000 --mc-error 0.01 --max-samples 32000 --newton
  aim smi se --L 4 --alpha 4 --samples 1000 --start informed --device auto

Unconverged points are written with converged=false and no values, and the command exits 1.

Flags:
`

// smiSECommandFlags registers the flags of `aim smi se` into c.
func smiSECommandFlags(fs *flag.FlagSet, c *smijob.SMISEConfig, pm *progressMode) {
	smiFlags(fs, &c.SMI, true, pm)
	gridVar(fs, &c.Alpha, "alpha", "sample complexity grid alpha = N/D: a list, a:b:n or a:b:n:log")
	smiSEFlags(fs, &c.SMISEOptions)
	fs.IntVar(&c.Replicates, "replicates", c.Replicates, "independent randomisations of the SE's draws (Halton shifts, or batches with --monte-carlo); their spread gives Qerr; 1: a single shift, Qerr unknown")
	fs.Float64Var(&c.MCError, "mc-error", c.MCError, "target standard error of every Q_ll: the draws grow from --samples until it is met, up to --max-samples; 0: --samples fixed")
	fs.IntVar(&c.MaxSamples, "max-samples", c.MaxSamples, "cap on the draws per SE iteration with --mc-error")
	fs.BoolVar(&c.Newton, "newton", c.Newton, "with --mc-error: the solves at more draws take Newton steps from the last fixed point (1 + 2L evaluations a step) instead of damped iterations")
	fs.IntVar(&c.GenSamples, "gen-samples", c.GenSamples, usage("gen-samples", "e_gen and e_BO per point, the same draws at every point"))
	fs.IntVar(&c.GenInner, "gen-inner", c.GenInner, usage("gen-inner", "draws of Z given omega per sample of the Bayes-optimal e_BO"))
	fs.StringVar(&c.Start, "start", c.Start, "SE start: uninformed (Q = 0.05 I, the authors'), informed (Q = (1 - 1e-4) I) or both (twice the cost: report the fixed point of larger free entropy, flag where two coexist)")
	gridVar(fs, &c.At, "at", "Q11,...,QLL: instead of solving, linearise the SE map there (1 + 2L evaluations) and report the fixed point one Newton step away with its error; the manifest's \"at\" has G(Q) - Q in standard errors")
}

// newSMISEFlags returns the flag set of `aim smi se` (docs/cli/smi-se.md is made from it) and
// the configuration and --quiet that parsing it fills.
func newSMISEFlags(stderr io.Writer) (*flag.FlagSet, *smijob.SMISEConfig, *progressMode) {
	c, pm := smijob.NewSMISEConfig(), new(progressMode)
	fs := newFlags("aim smi se", smiSEUsage, stderr)
	smiSECommandFlags(fs, c, pm)
	return fs, c, pm
}

// parseSMISE fills the configuration of `aim smi se` from its flags and validates it.
func parseSMISE(args []string, stderr io.Writer) (*smijob.SMISEConfig, progressMode, error) {
	fs, c, pm := newSMISEFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	if given(fs, "max-samples") && !given(fs, "mc-error") {
		return nil, "", usagef("--max-samples needs --mc-error (without it the draws stay at --samples)")
	}
	if err := conflicts(fs, [3]string{"at", "start", "--at linearises the map at the given Q and starts no iteration"}); err != nil {
		return nil, "", err
	}
	smiDampingNote(fs, c.Damping)
	return c, *pm, c.Validate()
}

// runSMISE runs `aim smi se`; cancelling ctx stops it with the points done written.
func runSMISE(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseSMISE(args, stderr)
	if err != nil {
		return err
	}
	return report(stdout)(smijob.ExecuteSMISE(c, envContext(ctx, stderr, pm)))
}

const smiThresholdsUsage = `Usage: aim smi thresholds [flags]

Weak-recovery thresholds of the SMI state evolution against the skip strength c
(docs/theory/smi.md 2.3): for each c, the stability threshold alpha_l = 1/F_l of every layer at
Q = 0, and for each layer l < L the conditional (grand-staircase) threshold where Q_ll = 0
turns unstable with the later layers at their fixed point, searched in [1.2 alpha_L, --hi]
(just above alpha_L the SE restricted to the later layers converges too slowly). A conditional
threshold that is not bracketed is written empty (NaN) with a note on stderr.

  aim smi thresholds --c 0.0001,0.01,0.1,0.5,1,2,4
  aim smi thresholds --c 0.1:4:16:log --samples 8000

Flags:
`

// smiThresholdsFlags registers the flags of `aim smi thresholds` into c.
func smiThresholdsFlags(fs *flag.FlagSet, c *smijob.SMIThresholdsConfig, pm *progressMode) {
	smiFlags(fs, &c.SMI, false, pm)
	gridVar(fs, &c.CGrid, "c", "skip strengths c >= 0: a list, a:b:n or a:b:n:log")
	smiSEFlags(fs, &c.SMISEOptions)
	fs.Float64Var(&c.Hi, "hi", c.Hi, "upper end of the alpha search for the conditional thresholds")
}

// newSMIThresholdsFlags returns the flag set of `aim smi thresholds` (docs/cli/smi-thresholds.md
// is made from it) and the configuration and --quiet that parsing it fills.
func newSMIThresholdsFlags(stderr io.Writer) (*flag.FlagSet, *smijob.SMIThresholdsConfig, *progressMode) {
	c, pm := smijob.NewSMIThresholdsConfig(), new(progressMode)
	fs := newFlags("aim smi thresholds", smiThresholdsUsage, stderr)
	smiThresholdsFlags(fs, c, pm)
	return fs, c, pm
}

// parseSMIThresholds fills the configuration of `aim smi thresholds` from its flags and
// validates it.
func parseSMIThresholds(args []string, stderr io.Writer) (*smijob.SMIThresholdsConfig, progressMode, error) {
	fs, c, pm := newSMIThresholdsFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	smiDampingNote(fs, c.Damping)
	return c, *pm, c.Validate()
}

func runSMIThresholds(args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseSMIThresholds(args, stderr)
	if err != nil {
		return err
	}
	res, summary, err := smijob.ExecuteSMIThresholds(c, env(stderr, pm))
	if res != nil {
		for _, n := range res.Notes {
			fmt.Fprintln(stderr, "note:", n)
		}
		printSMIThresholds(stdout, c, res.Rows)
	}
	return report(stdout)(summary, err)
}

// printSMIThresholds prints the thresholds as a table, one row per c.
func printSMIThresholds(w io.Writer, c *smijob.SMIThresholdsConfig, rows []smijob.SMIThresholdsRow) {
	fmt.Fprintf(w, "SMI thresholds: L = %d, M = %d, beta = %g (stability alpha_l = 1/F_l at Q = 0; conditional: the grand staircase)\n", c.L, c.M, c.Beta)
	head := []string{"c"}
	for l := 0; l < c.L; l++ {
		head = append(head, fmt.Sprintf("stab_%d", l+1))
	}
	for l := 0; l < c.L-1; l++ {
		head = append(head, fmt.Sprintf("cond_%d", l+1))
	}
	cell := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("%-12s", "-")
		}
		return fmt.Sprintf("%-12.6g", v)
	}
	for _, h := range head {
		fmt.Fprintf(w, "%-12s", h)
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprint(w, cell(r.C))
		for _, v := range r.Stability {
			fmt.Fprint(w, cell(v))
		}
		for _, v := range r.Conditional {
			fmt.Fprint(w, cell(v))
		}
		fmt.Fprintln(w)
	}
}
