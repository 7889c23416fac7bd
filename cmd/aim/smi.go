package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/grid"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/smi"
	smiamp "github.com/aimtheory/aim/engine/smi/amp"
	smise "github.com/aimtheory/aim/engine/smi/se"
	"github.com/aimtheory/aim/engine/smi/sgd"
	"github.com/aimtheory/aim/internal/par"
)

const smiUsage = `Usage: aim smi se|thresholds|amp|sgd [flags]

The sequence multi-index (SMI) model with deep tied low-rank attention output (docs/SMI.md):
L rank-1 attention layers on M tokens with skip strength c; the label is the last layer's
attention matrix y = softmax_row(beta v_L v_L^T), and alpha = N/D.

  aim smi se          Bayes-optimal state evolution: the overlaps Q_ll and the generalisation
                      error against alpha, with the weak-recovery thresholds of each layer
  aim smi thresholds  the stability thresholds alpha_l = 1/F_l and the conditional
                      (grand-staircase) thresholds against the skip strength c
  aim smi amp         GAMP on teachers drawn at dimension D: final overlaps per (alpha, seed)
                      and the per-iteration trace
  aim smi sgd         mini-batch SGD of the same architecture (the paper's Fig. 2, bottom)

The state evolution, the thresholds and AMP need M = 2 and L <= 3 (the channel quadrature);
SGD takes any L >= 1 and M >= 2.

Run 'aim smi se -h' for the flags of a subcommand.
`

// runSMI dispatches `aim smi <sub>`; every error names the subcommand.
func runSMI(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, smiUsage)
		return usagef("missing subcommand (want se, thresholds, amp or sgd)")
	}
	var err error
	switch sub := args[0]; sub {
	case "se":
		err = runSMISE(args[1:], stdout, stderr)
	case "thresholds":
		err = runSMIThresholds(args[1:], stdout, stderr)
	case "amp":
		err = runSMIAMP(args[1:], stdout, stderr)
	case "sgd":
		err = runSMISGD(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, smiUsage)
		return errHelp
	default:
		fmt.Fprint(stderr, smiUsage)
		return usagef("unknown subcommand %q (want se, thresholds, amp or sgd)", sub)
	}
	if err == nil || errors.Is(err, errHelp) {
		return err
	}
	var u usageError
	if errors.As(err, &u) {
		return usageError{fmt.Errorf("%s: %w", args[0], u.err)}
	}
	return fmt.Errorf("%s: %w", args[0], err)
}

// smiFlags are the flags every `aim smi` subcommand shares.
type smiFlags struct {
	L, M      int
	c, beta   float64
	out, plot string
	quiet     bool
	workers   int
	// dampingRho is the SE's --damping: the authors' rho, the weight on the new iterate
	// (0: the authors' value). The engine's theta = 1 - rho is set by checkSMISEOptions.
	dampingRho float64
}

// parseSMIFlags parses the flags of a subcommand whose -h prints usage and the defaults.
func parseSMIFlags(fs *flag.FlagSet, args []string, usage string, stderr io.Writer) error {
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return parseFlags(fs, args)
}

// theory checks the shared flags for the state evolution and GAMP (an invertible channel:
// M = 2, L <= 3) and parses the alpha grid.
func (f *smiFlags) theory(alphaSpec string) (*smi.Deep, []float64, error) {
	ch, err := f.channel(f.c, true)
	if err != nil {
		return nil, nil, err
	}
	if err := f.check(); err != nil {
		return nil, nil, err
	}
	alphas, err := parseAlphas(alphaSpec)
	if err != nil {
		return nil, nil, err
	}
	return ch, alphas, nil
}

// register adds the shared flags; withC is false where --c is a list (thresholds).
func (f *smiFlags) register(fs *flag.FlagSet, sub string, withC bool) {
	fs.IntVar(&f.L, "L", 2, "attention layers, each of rank 1")
	fs.IntVar(&f.M, "M", 2, "tokens per sequence")
	if withC {
		fs.Float64Var(&f.c, "c", 1, "skip (residual) strength c >= 0")
	}
	fs.Float64Var(&f.beta, "beta", 1, "softmax inverse temperature")
	fs.StringVar(&f.out, "out", "results/smi-"+sub+".csv", "CSV output (the manifest goes beside it as .json)")
	fs.StringVar(&f.plot, "plot", "results/smi-"+sub+".png", "plot output, .png or .svg; empty for none")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fs.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores); the results do not depend on it")
}

// check validates the output paths and the worker count.
func (f *smiFlags) check() error {
	if f.workers < 0 {
		return usagef("--workers %d: need 0 (all cores) or more", f.workers)
	}
	if f.plot != "" {
		if _, err := figure.Format(f.plot); err != nil {
			return usageError{err}
		}
	}
	if !strings.HasSuffix(strings.ToLower(f.out), ".csv") {
		return usagef("--out %q: the results file must end in .csv", f.out)
	}
	return nil
}

// channel returns the deep attention channel at skip c; with posterior it also checks that
// the channel's posterior can be integrated (M = 2, L <= 3). Every problem is a usage error.
func (f *smiFlags) channel(c float64, posterior bool) (*smi.Deep, error) {
	ch, err := smi.NewDeep(f.L, f.M, c, f.beta)
	if err != nil {
		return nil, usageError{err}
	}
	if posterior {
		if err := ch.CheckInvertible(); err != nil {
			return nil, usageError{err}
		}
	}
	return ch, nil
}

// params returns the shared flags for a manifest.
func (f *smiFlags) params() map[string]any {
	return map[string]any{"L": f.L, "M": f.M, "beta": f.beta, "workers": f.workers}
}

// nWorkers is the number of goroutines --workers asks for.
func (f *smiFlags) nWorkers() int {
	if f.workers > 0 {
		return f.workers
	}
	return runtime.GOMAXPROCS(0)
}

// parseAlphas parses a grid of sample complexities, all > 0.
func parseAlphas(spec string) ([]float64, error) {
	alphas, err := grid.Parse(spec)
	if err != nil {
		return nil, usagef("--alpha: %v", err)
	}
	for _, a := range alphas {
		if !(a > 0) {
			return nil, usagef("--alpha %s: every alpha must be > 0, got %g", spec, a)
		}
	}
	return alphas, nil
}

// Column names: Q11, Q22, ... for the overlaps (the paper's Q_ll), cos1, cos2, ... for cosines.
func layerCols(prefix string, L int, diag bool) []string {
	out := make([]string, L)
	for l := range out {
		if diag {
			out[l] = fmt.Sprintf("%s%d%d", prefix, l+1, l+1)
		} else {
			out[l] = fmt.Sprintf("%s%d", prefix, l+1)
		}
	}
	return out
}

func nums(xs []float64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = num(x)
	}
	return out
}

func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// jsonFloats turns NaN and infinities (no threshold) into null.
func jsonFloats(xs []float64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out[i] = nil
		} else {
			out[i] = x
		}
	}
	return out
}

// stabilityAlphas returns alpha_l = 1/F_l (+Inf where F_l <= 0).
func stabilityAlphas(F []float64) []float64 {
	out := make([]float64, len(F))
	for l, f := range F {
		out[l] = math.Inf(1)
		if f > 0 {
			out[l] = 1 / f
		}
	}
	return out
}

// smiSEOptions registers the flags of the SMI state evolution's Monte Carlo average.
func smiSEOptions(fs *flag.FlagSet, o *smise.Options, rho *float64) {
	fs.IntVar(&o.Samples, "samples", o.Samples, "Monte Carlo (xi, eta) draws of the channel average per SE iteration")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the SE's draws")
	fs.BoolVar(&o.MonteCarlo, "monte-carlo", false, "plain pseudo-random draws instead of randomised quasi-Monte Carlo (shifted Halton)")
	fs.Float64Var(&o.Epsilon, "epsilon", o.Epsilon, "ridge of the channel variance V = I - Q + epsilon I")
	fs.Float64Var(rho, "damping", 0, "SE damping rho in (0, 1], the weight on the new iterate: Q <- rho Q_new + (1 - rho) Q; 0: the authors' 0.8 (L = 2) or 0.6 (L = 3)")
	fs.IntVar(&o.MaxIter, "max-iter", o.MaxIter, "SE iteration cap")
	fs.Float64Var(&o.Tol, "tol", o.Tol, "stop when every layer's estimated distance to the fixed point, |G(Q) - Q|/(1 - slope), is below tol")
}

// checkSMISEOptions checks the SE flags and translates --damping rho (the weight on the new
// iterate, 0 for the authors') into the engine's theta = 1 - rho (the weight on the old one).
func checkSMISEOptions(o *smise.Options, rho float64, L int) error {
	switch {
	case o.Samples < 1:
		return usagef("--samples %d: need at least 1", o.Samples)
	case !(rho >= 0 && rho <= 1):
		return usagef("--damping %g: need 0 < damping <= 1 (0: the authors' value)", rho)
	case !(o.Epsilon >= 0 && o.Epsilon < 1):
		return usagef("--epsilon %g: need 0 <= epsilon < 1", o.Epsilon)
	case o.MaxIter < 1:
		return usagef("--max-iter %d: need at least 1", o.MaxIter)
	case !(o.Tol > 0) || math.IsInf(o.Tol, 0):
		return usagef("--tol %g: need a positive tolerance", o.Tol)
	}
	o.Damping = smise.AuthorsDamping(L)
	if rho > 0 {
		o.Damping = 1 - rho
	}
	return nil
}

func smiSEParams(p map[string]any, o smise.Options, rho float64) {
	for k, v := range map[string]any{"samples": o.Samples, "seed": o.Seed, "monte_carlo": o.MonteCarlo,
		"epsilon": o.Epsilon, "damping": rho, "damping_note": "0: the authors' 0.8 (L = 2) or 0.6 (L = 3)",
		"init": o.Init, "max_iter": o.MaxIter, "tol": o.Tol} {
		p[k] = v
	}
}

// ---------------------------------------------------------------------------------------------
// aim smi se

const smiSEUsage = `Usage: aim smi se [flags]

Bayes-optimal state evolution of the SMI model with deep tied attention (docs/SMI.md 2.2):
the diagonal overlaps Q_ll per layer against alpha = N/D (each point continued from the
previous one), the plug-in generalisation error e_gen(Q) and the "last layer only" error with
every other layer's overlap set to 0, the stability thresholds alpha_l = 1/F_l at Q = 0 and
the onsets of the overlaps read off the curve (first Q_ll > 0.01, extrapolated to 0).

  aim smi se --L 2 --alpha 0.05:1.6:32
  aim smi se --L 3 --alpha 0.1:3:30 --samples 8000

Unconverged points are written with converged=false and no values, and the command exits 1.

Flags:
`

type smiSEConfig struct {
	smiFlags
	alphaSpec  string
	alphas     []float64
	opts       smise.Options
	genSamples int
	ch         *smi.Deep
}

func parseSMISE(args []string, stderr io.Writer) (*smiSEConfig, error) {
	c := &smiSEConfig{opts: smise.DefaultOptions(2)}
	fs := flag.NewFlagSet("aim smi se", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, "se", true)
	fs.StringVar(&c.alphaSpec, "alpha", "0.05:1.6:32", "sample complexity grid alpha = N/D: a list, a:b:n or a:b:n:log")
	smiSEOptions(fs, &c.opts, &c.dampingRho)
	fs.IntVar(&c.genSamples, "gen-samples", 100000, "Monte Carlo samples of e_gen per point (the same draws at every point); 0 skips it")
	if err := parseSMIFlags(fs, args, smiSEUsage, stderr); err != nil {
		return nil, err
	}
	var err error
	if c.ch, c.alphas, err = c.theory(c.alphaSpec); err != nil {
		return nil, err
	}
	if err := checkSMISEOptions(&c.opts, c.dampingRho, c.L); err != nil {
		return nil, err
	}
	if c.genSamples < 0 || c.genSamples == 1 {
		return nil, usagef("--gen-samples %d: need 0 (skip) or at least 2", c.genSamples)
	}
	c.opts.Workers = c.workers
	return c, nil
}

// smiSERow is one alpha of `aim smi se`.
type smiSERow struct {
	p                   smise.Point
	gen, genErr         float64
	genLast, genLastErr float64
}

// smiLastLayerOnly returns Q with every layer but the last set to 0: the paper's "one layer"
// curve.
func smiLastLayerOnly(Q []float64) []float64 {
	q := make([]float64, len(Q))
	q[len(q)-1] = Q[len(Q)-1]
	return q
}

// smiSEColumns returns the CSV header of `aim smi se` for L layers.
func smiSEColumns(L int) []string {
	cols := []string{"L", "M", "c", "beta", "alpha"}
	cols = append(cols, layerCols("Q", L, true)...)
	cols = append(cols, layerCols("qhat", L, true)...)
	return append(cols, "gen_error", "gen_error_stderr", "gen_error_last_layer", "gen_error_last_layer_stderr",
		"iterations", "converged", "inexact")
}

func runSMISE(args []string, stdout, stderr io.Writer) error {
	c, err := parseSMISE(args, stderr)
	if err != nil {
		return err
	}
	res, err := openResults(c.out, c.plot)
	if err != nil {
		return err
	}
	start := time.Now()
	total := 1 + len(c.alphas)
	if c.genSamples > 0 {
		total += len(c.alphas)
	}
	bar := newProgress(total, "smi se", stderr, c.quiet)
	F, err := smise.Stability(c.ch, make([]float64, c.L), c.opts)
	if err != nil {
		bar.Finish()
		res.files.Abort()
		return err
	}
	bar.Add(1)
	stability := stabilityAlphas(F)
	points, err := smise.SolveCurve(c.ch, c.alphas, c.opts, func(smise.Point) { bar.Add(1) })
	if err != nil {
		bar.Finish()
		res.files.Abort()
		return err
	}
	rows := make([]smiSERow, len(points))
	for i, p := range points {
		rows[i] = smiSERow{p: p, gen: math.NaN(), genErr: math.NaN(), genLast: math.NaN(), genLastErr: math.NaN()}
	}
	if c.genSamples > 0 {
		if err := smiGenErrors(c, rows, bar); err != nil {
			bar.Finish()
			res.files.Abort()
			return err
		}
	}
	bar.Finish()
	var converged []smise.Point
	var failed []string
	for _, r := range rows {
		if r.p.Converged {
			converged = append(converged, r.p)
		} else {
			failed = append(failed, fmt.Sprintf("alpha %g: not converged after %d iterations", r.p.Alpha, r.p.Iterations))
		}
	}
	onset := nanSlice(c.L)
	if len(converged) > 0 {
		onset = smise.Onsets(converged, 0.01)
	}
	csvRows := smiSECSVRows(c, rows)
	if err := writeRows(res.csv.File(), smiSEColumns(c.L), csvRows); err != nil {
		res.files.Abort()
		return err
	}
	t, err := tableOf(c.out, smiSEColumns(c.L), csvRows)
	if err != nil {
		res.files.Abort()
		return err
	}
	t.th = &figThresholds{stability: stability, fallback: onset}
	fig, err := buildFigure([]*csvTable{t}, plotOptions{})
	if err != nil {
		res.files.Abort()
		return err
	}
	params := c.params()
	smiSEParams(params, c.opts, c.dampingRho)
	for k, v := range map[string]any{"c": c.c, "alpha": c.alphaSpec, "alphas": c.alphas, "gen_samples": c.genSamples} {
		params[k] = v
	}
	th := map[string]any{"stability": jsonFloats(stability), "fisher": jsonFloats(F), "onset": jsonFloats(onset), "onset_level": 0.01}
	if c.L == 2 && c.M == 2 && c.c == 1 && c.beta == 1 {
		th["published"] = map[string]any{"alpha_layer1": 0.793646302451566, "alpha_layer2": 0.14358446549404996,
			"note": "SPOC-group/SequenceIndexModels data/alpha_critical.csv; not reproduced by the stability formula (docs/SMI.md 2.3)"}
	}
	man := baseManifest("smi se", fmt.Sprintf("cpu (theory: SMI state evolution, %d goroutines)", c.nWorkers()), params, start)
	man["thresholds"] = th
	man["points"] = len(rows)
	man["unconverged"] = len(failed)
	return res.complete(stdout, fig, man, len(rows), start, failed, "points did not converge")
}

// smiGenErrors fills e_gen and the last-layer-only e_gen of every converged row, the rows in
// parallel. Every point uses the same draws (seed --seed), so the curves are smooth in alpha.
func smiGenErrors(c *smiSEConfig, rows []smiSERow, bar progress) error {
	// One copy of the channel per goroutine, so that no goroutine shares channel state.
	return par.For(c.nWorkers(), len(rows), func() (*smi.Deep, error) {
		ch := *c.ch
		return &ch, nil
	}, func(ch *smi.Deep, i int) error {
		defer bar.Add(1)
		r := &rows[i]
		if !r.p.Converged {
			return nil
		}
		var err error
		r.gen, r.genErr, err = smise.GenError(ch, r.p.Q, c.genSamples, c.opts.Seed)
		if err == nil {
			r.genLast, r.genLastErr, err = smise.GenError(ch, smiLastLayerOnly(r.p.Q), c.genSamples, c.opts.Seed)
		}
		return err
	})
}

func smiSECSVRows(c *smiSEConfig, rows []smiSERow) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		q, qh := nanSlice(c.L), nanSlice(c.L)
		if r.p.Converged {
			q, qh = r.p.Q, r.p.QHat
		}
		row := []string{strconv.Itoa(c.L), strconv.Itoa(c.M), num(c.c), num(c.beta), num(r.p.Alpha)}
		row = append(row, nums(q)...)
		row = append(row, nums(qh)...)
		row = append(row, num(r.gen), num(r.genErr), num(r.genLast), num(r.genLastErr),
			strconv.Itoa(r.p.Iterations), strconv.FormatBool(r.p.Converged), strconv.Itoa(r.p.Inexact))
		out[i] = row
	}
	return out
}

// legendRoom returns the top of a y axis whose data reach top, so that a legend of n entries
// in the upper right corner (figure's placement) stays clear of the data.
func legendRoom(top float64, n int) float64 {
	frac := math.Min(0.6, (11*float64(n)+8)/240) // 9-point entries on a ~240-point-high data area
	return math.Max(1.05*top, top/(1-frac))
}

// ---------------------------------------------------------------------------------------------
// aim smi thresholds

const smiThresholdsUsage = `Usage: aim smi thresholds [flags]

Weak-recovery thresholds of the SMI state evolution against the skip strength c
(docs/SMI.md 2.3): for each c, the stability threshold alpha_l = 1/F_l of every layer at
Q = 0, and for each layer l < L the conditional (grand-staircase) threshold where Q_ll = 0
turns unstable with the later layers at their fixed point, searched in [1.2 alpha_L, --hi]
(just above alpha_L the SE restricted to the later layers converges too slowly). A conditional
threshold that is not bracketed is written empty (NaN) with a note on stderr.

  aim smi thresholds --c 0.0001,0.01,0.1,0.5,1,2,4
  aim smi thresholds --c 0.1:4:16:log --samples 8000

Flags:
`

type smiThresholdsConfig struct {
	smiFlags
	cSpec string
	cs    []float64
	opts  smise.Options
	hi    float64
	chs   []*smi.Deep
}

func parseSMIThresholds(args []string, stderr io.Writer) (*smiThresholdsConfig, error) {
	c := &smiThresholdsConfig{opts: smise.DefaultOptions(2)}
	fs := flag.NewFlagSet("aim smi thresholds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, "thresholds", false)
	fs.StringVar(&c.cSpec, "c", "1", "skip strengths c >= 0: a list, a:b:n or a:b:n:log")
	smiSEOptions(fs, &c.opts, &c.dampingRho)
	fs.Float64Var(&c.hi, "hi", 3, "upper end of the alpha search for the conditional thresholds")
	if err := parseSMIFlags(fs, args, smiThresholdsUsage, stderr); err != nil {
		return nil, err
	}
	cs, err := grid.Parse(c.cSpec)
	if err != nil {
		return nil, usagef("--c: %v", err)
	}
	c.cs = cs
	for _, v := range cs {
		ch, err := c.channel(v, true)
		if err != nil {
			return nil, err
		}
		c.chs = append(c.chs, ch)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := checkSMISEOptions(&c.opts, c.dampingRho, c.L); err != nil {
		return nil, err
	}
	if !(c.hi > 0) || math.IsInf(c.hi, 0) {
		return nil, usagef("--hi %g: need a positive, finite alpha", c.hi)
	}
	c.opts.Workers = c.workers
	return c, nil
}

// smiThresholdRow is the thresholds of one c.
type smiThresholdRow struct {
	c                      float64
	fisher, stability, cnd []float64
}

func smiThresholdColumns(L int) []string {
	cols := []string{"L", "M", "beta", "c"}
	cols = append(cols, layerCols("alpha_stability_", L, false)...)
	return append(cols, layerCols("alpha_conditional_", L-1, false)...)
}

func runSMIThresholds(args []string, stdout, stderr io.Writer) error {
	c, err := parseSMIThresholds(args, stderr)
	if err != nil {
		return err
	}
	res, err := openResults(c.out, c.plot)
	if err != nil {
		return err
	}
	start := time.Now()
	L := c.L
	bar := newProgress(len(c.cs)*L, "smi thresholds", stderr, c.quiet)
	var notes []string
	rows := make([]smiThresholdRow, len(c.cs))
	for i, ch := range c.chs {
		F, err := smise.Stability(ch, make([]float64, L), c.opts)
		if err != nil {
			bar.Finish()
			res.files.Abort()
			return fmt.Errorf("c = %g: %w", c.cs[i], err)
		}
		bar.Add(1)
		row := smiThresholdRow{c: c.cs[i], fisher: F, stability: stabilityAlphas(F), cnd: nanSlice(L - 1)}
		lo := 1.2 * row.stability[L-1]
		for l := 0; l < L-1; l++ {
			if !(lo < c.hi) {
				notes = append(notes, fmt.Sprintf("c = %g: conditional threshold of layer %d not searched: 1.2 alpha_%d = %g is not below --hi %g", c.cs[i], l+1, L, lo, c.hi))
				bar.Add(1)
				continue
			}
			a, err := smise.ConditionalThreshold(ch, l, lo, c.hi, 1e-3, c.opts)
			switch {
			case err == nil:
				row.cnd[l] = a
			case errors.Is(err, smise.ErrNotBracketed):
				notes = append(notes, fmt.Sprintf("c = %g: %v: written empty", c.cs[i], err))
			default:
				bar.Finish()
				res.files.Abort()
				return fmt.Errorf("c = %g: %w", c.cs[i], err)
			}
			bar.Add(1)
		}
		rows[i] = row
	}
	bar.Finish()
	for _, n := range notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	csvRows := make([][]string, len(rows))
	for i, r := range rows {
		row := []string{strconv.Itoa(L), strconv.Itoa(c.M), num(c.beta), num(r.c)}
		row = append(row, nums(r.stability)...)
		csvRows[i] = append(row, nums(r.cnd)...)
	}
	if err := writeRows(res.csv.File(), smiThresholdColumns(L), csvRows); err != nil {
		res.files.Abort()
		return err
	}
	t, err := tableOf(c.out, smiThresholdColumns(L), csvRows)
	if err != nil {
		res.files.Abort()
		return err
	}
	fig, err := buildFigure([]*csvTable{t}, plotOptions{})
	if err != nil {
		res.files.Abort()
		return err
	}
	printSMIThresholds(stdout, c, rows)
	params := c.params()
	smiSEParams(params, c.opts, c.dampingRho)
	params["c"] = c.cs
	params["hi"] = c.hi
	params["rel_tol"] = 1e-3
	man := baseManifest("smi thresholds", fmt.Sprintf("cpu (theory: SMI state evolution, %d goroutines)", c.nWorkers()), params, start)
	var list []map[string]any
	for _, r := range rows {
		list = append(list, map[string]any{"c": r.c, "fisher": jsonFloats(r.fisher), "stability": jsonFloats(r.stability), "conditional": jsonFloats(r.cnd)})
	}
	man["thresholds"] = list
	man["notes"] = notes
	return res.complete(stdout, fig, man, len(rows), start, nil, "")
}

func printSMIThresholds(w io.Writer, c *smiThresholdsConfig, rows []smiThresholdRow) {
	fmt.Fprintf(w, "SMI thresholds: L = %d, M = %d, beta = %g (stability alpha_l = 1/F_l at Q = 0; conditional: the grand staircase)\n", c.L, c.M, c.beta)
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
		fmt.Fprint(w, cell(r.c))
		for _, v := range r.stability {
			fmt.Fprint(w, cell(v))
		}
		for _, v := range r.cnd {
			fmt.Fprint(w, cell(v))
		}
		fmt.Fprintln(w)
	}
}

// ---------------------------------------------------------------------------------------------
// aim smi amp

const smiAMPUsage = `Usage: aim smi amp [flags]

GAMP for the SMI model (docs/SMI.md 3, the paper's Algorithm 1) on teachers and data drawn at
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

type smiAMPConfig struct {
	smiFlags
	D, seeds  int
	seed      uint64
	alphaSpec string
	alphas    []float64
	opts      smiamp.Options
	trace     string
	seCSV     string
	seCurve   *smiSECurve
	seTable   *csvTable // the SE lines of --se
	ch        *smi.Deep
}

func parseSMIAMP(args []string, stderr io.Writer) (*smiAMPConfig, error) {
	c := &smiAMPConfig{opts: smiamp.DefaultOptions()}
	fs := flag.NewFlagSet("aim smi amp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, "amp", true)
	fs.IntVar(&c.D, "D", 1000, "token dimension")
	fs.StringVar(&c.alphaSpec, "alpha", "0.2,0.5,0.9,1.2,1.5", "sample complexities alpha = N/D: a list or range")
	fs.IntVar(&c.seeds, "seeds", 4, "teachers and data sets per alpha")
	fs.Uint64Var(&c.seed, "seed", 1, "first seed: run s uses seed + s")
	fs.IntVar(&c.opts.MaxIter, "iters", c.opts.MaxIter, "GAMP iterations (at most)")
	c.dampingRho = 1 - c.opts.Damping
	fs.Float64Var(&c.dampingRho, "damping", c.dampingRho, "damping rho in (0, 1], the weight on the new iterate: What <- rho What_new + (1 - rho) What")
	fs.Float64Var(&c.opts.Epsilon, "epsilon", c.opts.Epsilon, "ridge of the channel variance V = C-hat + epsilon I")
	fs.Float64Var(&c.opts.Tol, "tol", c.opts.Tol, "stop early when ||W-hat new - W-hat||^2/(L D) < tol (0: never)")
	fs.IntVar(&c.opts.TestSamples, "test-samples", c.opts.TestSamples, "fresh samples of the generalisation error at each iteration (0: none)")
	fs.StringVar(&c.trace, "trace", "results/smi-amp-trace.csv", "CSV of every iteration of every run (its plot goes beside it as .png); empty for none")
	fs.StringVar(&c.seCSV, "se", "", "a CSV written by aim smi se (same L, M, c, beta) whose Q_ll to draw as lines on the plot")
	if err := parseSMIFlags(fs, args, smiAMPUsage, stderr); err != nil {
		return nil, err
	}
	var err error
	if c.ch, c.alphas, err = c.theory(c.alphaSpec); err != nil {
		return nil, err
	}
	switch {
	case c.D < 2:
		return nil, usagef("--D %d: need D >= 2", c.D)
	case c.seeds < 1:
		return nil, usagef("--seeds %d: need at least 1", c.seeds)
	case c.opts.MaxIter < 1:
		return nil, usagef("--iters %d: need at least 1", c.opts.MaxIter)
	case !(c.dampingRho > 0 && c.dampingRho <= 1):
		return nil, usagef("--damping %g: need 0 < damping <= 1", c.dampingRho)
	case !(c.opts.Epsilon >= 0) || math.IsInf(c.opts.Epsilon, 0):
		return nil, usagef("--epsilon %g: need 0 <= epsilon < inf", c.opts.Epsilon)
	case !(c.opts.Tol >= 0) || math.IsInf(c.opts.Tol, 0):
		return nil, usagef("--tol %g: need 0 <= tol < inf", c.opts.Tol)
	case c.opts.TestSamples < 0:
		return nil, usagef("--test-samples %d: need 0 (none) or more", c.opts.TestSamples)
	}
	if c.trace != "" && !strings.HasSuffix(strings.ToLower(c.trace), ".csv") {
		return nil, usagef("--trace %q: the trace file must end in .csv", c.trace)
	}
	for _, a := range c.alphas {
		if err := c.params(a, 0).Validate(); err != nil {
			return nil, usagef("%v", err)
		}
	}
	if c.seCSV != "" {
		if c.seCurve, err = readSMISECurve(c.seCSV, &c.smiFlags, c.c); err != nil {
			return nil, usagef("--se: %v", err)
		}
		if c.seTable, err = readTableFile(c.seCSV); err != nil {
			return nil, usagef("--se: %v", err)
		}
		if c.seTable.kind != kindSMISE {
			return nil, usagef("--se %s: an %s CSV, want one written by aim smi se", c.seCSV, c.seTable.kind)
		}
	}
	c.opts.Workers = c.workers
	c.opts.Damping = 1 - c.dampingRho // the engine's theta, the weight on the old iterate
	return c, nil
}

func (c *smiAMPConfig) params(alpha float64, seed uint64) smi.Params {
	return smi.Params{D: c.D, Alpha: alpha, M: c.M, L: c.L, C: c.c, Beta: c.beta, Seed: seed}
}

// smiAMPBytes is the memory of one GAMP run: the data, and beside it the algorithm's buffers.
func smiAMPBytes(p smi.Params, o smiamp.Options) uint64 { return p.Bytes() + smiamp.Bytes(p, o) }

// checkHostMemory refuses, before anything is allocated, a run that needs more memory than the
// host has available (skipped where the available memory cannot be read).
func checkHostMemory(workers int, what string, need uint64) error {
	info := cpu.New(workers).Info()
	if info.TotalBytes > 0 && need > info.FreeBytes {
		return usagef("%s needs %s of memory, and %s is available", what, device.Bytes(need), device.Bytes(info.FreeBytes))
	}
	return nil
}

// smiAMPRun is one (alpha, seed) of `aim smi amp`.
type smiAMPRun struct {
	alpha float64
	seed  uint64
	p     smi.Params
	wn    []float64 // the teacher's norms ||w*_l||^2 / D
	res   smiamp.Result
	err   error
}

// overlaps returns the teacher-normalised overlaps |M_ll| / (||w*_l||^2 / D), the quantity the
// SE's Q_ll predicts (at finite D the teacher's norm is 1 only to O(1/sqrt(D))).
func (r *smiAMPRun) overlaps(m []float64) []float64 {
	out := make([]float64, len(m))
	for l := range m {
		out[l] = m[l] / r.wn[l]
	}
	return out
}

// final returns the last record of a run that did not fail.
func (r *smiAMPRun) final() (smiamp.Iteration, bool) {
	if r.err != nil || len(r.res.Trace) == 0 {
		return smiamp.Iteration{}, false
	}
	return r.res.Trace[len(r.res.Trace)-1], true
}

func smiAMPColumns(L int) []string {
	cols := []string{"L", "M", "c", "beta", "D", "N", "alpha", "seed"}
	cols = append(cols, layerCols("Q", L, true)...)
	cols = append(cols, layerCols("absM", L, true)...)
	cols = append(cols, layerCols("m", L, true)...)
	cols = append(cols, layerCols("cos", L, false)...)
	return append(cols, "e_gen", "iterations", "converged", "seconds")
}

func smiAMPTraceColumns(L int) []string {
	cols := []string{"alpha", "seed", "iteration"}
	cols = append(cols, layerCols("Q", L, true)...)
	cols = append(cols, layerCols("absM", L, true)...)
	cols = append(cols, layerCols("m", L, true)...)
	cols = append(cols, layerCols("cos", L, false)...)
	return append(cols, "e_gen", "step", "quad_inexact", "quad_failed", "quad_seconds", "seconds")
}

func runSMIAMP(args []string, stdout, stderr io.Writer) error {
	c, err := parseSMIAMP(args, stderr)
	if err != nil {
		return err
	}
	var need uint64
	var at float64
	for _, a := range c.alphas {
		if n := smiAMPBytes(c.params(a, 0), c.opts); n > need {
			need, at = n, a
		}
	}
	if err := checkHostMemory(c.workers, fmt.Sprintf("a run at D = %d, alpha = %g", c.D, at), need); err != nil {
		return err
	}
	res, err := openResults(c.out, c.plot)
	if err != nil {
		return err
	}
	tracePlot := ""
	if c.trace != "" && c.plot != "" {
		tracePlot = strings.TrimSuffix(c.trace, c.trace[len(c.trace)-4:]) + ".png"
	}
	traceRes, abort, err := openTrace(res, c.trace, tracePlot)
	if err != nil {
		return err
	}
	start := time.Now()
	note := fmt.Sprintf("cpu (host GAMP, %d goroutines)", c.nWorkers())
	fmt.Fprintln(stderr, note)
	var runs []*smiAMPRun
	for _, a := range c.alphas {
		for s := 0; s < c.seeds; s++ {
			seed := c.seed + uint64(s)
			runs = append(runs, &smiAMPRun{alpha: a, seed: seed, p: c.params(a, seed)})
		}
	}
	bar := newProgress(len(runs)*c.opts.MaxIter, "smi amp", stderr, c.quiet)
	var failed []string
	var traceRows [][]string
	for _, run := range runs {
		data, err := smi.Generate(run.p)
		if err != nil {
			bar.Finish()
			return abort(err)
		}
		run.wn = make([]float64, c.L)
		for l := range run.wn {
			for _, v := range data.W[l*c.D : (l+1)*c.D] {
				run.wn[l] += v * v / float64(c.D)
			}
		}
		o := c.opts
		o.Progress = func(smiamp.Iteration) { bar.Add(1) }
		run.res, run.err = smiamp.Run(data, o)
		bar.Add(c.opts.MaxIter - len(run.res.Trace))
		if run.err != nil {
			failed = append(failed, fmt.Sprintf("alpha %g seed %d: %v", run.alpha, run.seed, run.err))
		}
		for _, it := range run.res.Trace {
			row := []string{num(run.alpha), strconv.FormatUint(run.seed, 10), strconv.Itoa(it.Iter)}
			row = append(row, nums(it.Q)...)
			row = append(row, nums(it.M)...)
			row = append(row, nums(run.overlaps(it.M))...)
			row = append(row, nums(it.Cos)...)
			traceRows = append(traceRows, append(row, num(it.EGen), num(it.Step), strconv.Itoa(it.Inexact), strconv.Itoa(it.Failed),
				strconv.FormatFloat(it.QuadSeconds, 'f', 3, 64), strconv.FormatFloat(it.Seconds, 'f', 3, 64)))
		}
	}
	bar.Finish()
	rows := make([][]string, len(runs))
	for i, r := range runs {
		q, m, mn, cs, eg := nanSlice(c.L), nanSlice(c.L), nanSlice(c.L), nanSlice(c.L), math.NaN()
		if last, ok := r.final(); ok {
			q, m, mn, cs, eg = last.Q, last.M, r.overlaps(last.M), last.Cos, last.EGen
		}
		row := []string{strconv.Itoa(c.L), strconv.Itoa(c.M), num(c.c), num(c.beta), strconv.Itoa(c.D), strconv.Itoa(r.p.N()),
			num(r.alpha), strconv.FormatUint(r.seed, 10)}
		row = append(row, nums(q)...)
		row = append(row, nums(m)...)
		row = append(row, nums(mn)...)
		row = append(row, nums(cs)...)
		rows[i] = append(row, num(eg), strconv.Itoa(r.res.Iterations), strconv.FormatBool(r.err == nil && r.res.Converged),
			strconv.FormatFloat(r.res.Seconds, 'f', 3, 64))
	}
	if err := writeRows(res.csv.File(), smiAMPColumns(c.L), rows); err != nil {
		return abort(err)
	}
	params := c.smiFlags.params()
	for k, v := range map[string]any{"c": c.c, "D": c.D, "alpha": c.alphaSpec, "alphas": c.alphas, "seeds": c.seeds, "seed": c.seed,
		"iters": c.opts.MaxIter, "damping": c.dampingRho, "epsilon": c.opts.Epsilon, "tol": c.opts.Tol, "init": c.opts.Init,
		"init_scale": c.opts.InitScale, "test_samples": c.opts.TestSamples, "se": c.seCSV, "trace": c.trace} {
		params[k] = v
	}
	man := baseManifest("smi amp", note, params, start)
	man["runs"] = len(runs)
	man["failed"] = len(failed)
	if traceRes != nil {
		if err := finishTrace(traceRes, smiAMPTraceColumns(c.L), traceRows, params, baseManifest("smi amp trace", note, params, start)); err != nil {
			return abort(err)
		}
	}
	t, err := tableOf(c.out, smiAMPColumns(c.L), rows)
	if err != nil {
		return abort(err)
	}
	tables := []*csvTable{t}
	if c.seTable != nil {
		tables = append(tables, c.seTable)
	}
	fig, err := buildFigure(tables, plotOptions{})
	if err != nil {
		return abort(err)
	}
	return res.complete(stdout, fig, man, len(runs), start, failed, "runs failed")
}

// smiSECurve is the SE Q_ll read back from an `aim smi se` CSV, sorted by alpha.
type smiSECurve struct {
	alpha []float64
	q     [][]float64 // per layer
}

// readSMISECurve reads the converged points of an `aim smi se` CSV; its L, M, c and beta must
// be those of the command.
func readSMISECurve(path string, f *smiFlags, c float64) (*smiSECurve, error) {
	rows, err := readCSVFile(path)
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	need := append([]string{"L", "M", "c", "beta", "alpha"}, layerCols("Q", f.L, true)...)
	for _, n := range need {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("%s: no column %q (is it an `aim smi se` CSV with L = %d?)", path, n, f.L)
		}
	}
	type pt struct {
		a float64
		q []float64
	}
	var pts []pt
	for i, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			return nil, fmt.Errorf("%s line %d: %d fields for %d columns", path, i+2, len(r), len(rows[0]))
		}
		for name, want := range map[string]float64{"L": float64(f.L), "M": float64(f.M), "c": c, "beta": f.beta} {
			v, err := strconv.ParseFloat(r[col[name]], 64)
			if err != nil || v != want {
				return nil, fmt.Errorf("%s line %d: %s = %s, the command has %s = %g", path, i+2, name, r[col[name]], name, want)
			}
		}
		if r[col["Q11"]] == "" {
			continue // an unconverged point
		}
		p := pt{q: make([]float64, f.L)}
		if p.a, err = strconv.ParseFloat(r[col["alpha"]], 64); err != nil {
			return nil, fmt.Errorf("%s line %d: alpha: %v", path, i+2, err)
		}
		for l, name := range layerCols("Q", f.L, true) {
			if p.q[l], err = strconv.ParseFloat(r[col[name]], 64); err != nil {
				return nil, fmt.Errorf("%s line %d: %s: %v", path, i+2, name, err)
			}
		}
		pts = append(pts, p)
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].a < pts[j].a })
	cv := &smiSECurve{q: make([][]float64, f.L)}
	for _, p := range pts {
		cv.alpha = append(cv.alpha, p.a)
		for l := range p.q {
			cv.q[l] = append(cv.q[l], p.q[l])
		}
	}
	return cv, nil
}

// ---------------------------------------------------------------------------------------------
// aim smi sgd

const smiSGDUsage = `Usage: aim smi sgd [flags]

Mini-batch SGD of a deep tied attention student with the teacher's architecture
(docs/SMI.md 4, the paper's Fig. 2 bottom): loss sum_batch ||y-hat - y||_F^2 / D, learning
rate --lr, weight decay --wd / D, --steps-per-batch consecutive updates on each mini-batch
of --batch samples, --epochs passes. One run per seed (teacher, data and test set from
seed --seed + s). The CSV holds one row per (seed, record): per layer the overlap
M_ll = w-hat_l . w*_l / D (signed), Q_ll = ||w-hat_l||^2/D and the cosine
|M_ll| / sqrt(Q_ll ||w*_l||^2/D), the mini-batch loss and the test error; the plot draws the
cosines against the update.

  aim smi sgd --D 500 --alpha 15 --seeds 8 --student-seed 42

Flags:
`

type smiSGDConfig struct {
	smiFlags
	D, seeds    int
	seed        uint64
	alpha       float64
	studentSeed int64
	opts        sgd.Options
}

func parseSMISGD(args []string, stderr io.Writer) (*smiSGDConfig, error) {
	c := &smiSGDConfig{opts: sgd.DefaultOptions()}
	fs := flag.NewFlagSet("aim smi sgd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, "sgd", true)
	fs.IntVar(&c.D, "D", 500, "token dimension")
	fs.Float64Var(&c.alpha, "alpha", 15, "sample complexity alpha = N/D")
	fs.IntVar(&c.seeds, "seeds", 1, "teachers and data sets")
	fs.Uint64Var(&c.seed, "seed", 1, "first seed: run s uses seed + s")
	fs.Int64Var(&c.studentSeed, "student-seed", -1, "seed of the student's start (and shuffling) for every run; -1: each run's data seed")
	fs.Float64Var(&c.opts.LR, "lr", c.opts.LR, "learning rate")
	fs.Float64Var(&c.opts.WeightDecay, "wd", c.opts.WeightDecay, "weight decay lambda; the decay applied is lambda / D")
	fs.IntVar(&c.opts.Batch, "batch", c.opts.Batch, "mini-batch size")
	fs.IntVar(&c.opts.StepsPerBatch, "steps-per-batch", c.opts.StepsPerBatch, "consecutive updates on each mini-batch")
	fs.IntVar(&c.opts.Epochs, "epochs", c.opts.Epochs, "passes over the training set")
	fs.Float64Var(&c.opts.InitScale, "init-scale", c.opts.InitScale, "the student starts at init-scale N(0, 1) entrywise")
	fs.IntVar(&c.opts.Every, "every", 0, "record every this many updates (0: once per epoch); the start and the last update are always recorded")
	fs.IntVar(&c.opts.TestSamples, "test-samples", c.opts.TestSamples, "fresh samples of the test error (0: none)")
	fs.BoolVar(&c.opts.Shuffle, "shuffle", false, "reshuffle the samples each epoch (default: the notebook's fixed order)")
	if err := parseSMIFlags(fs, args, smiSGDUsage, stderr); err != nil {
		return nil, err
	}
	if _, err := c.channel(c.c, false); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case c.D < 2:
		return nil, usagef("--D %d: need D >= 2", c.D)
	case !(c.alpha > 0) || !finite(c.alpha):
		return nil, usagef("--alpha %g: need alpha > 0", c.alpha)
	case c.seeds < 1:
		return nil, usagef("--seeds %d: need at least 1", c.seeds)
	case c.studentSeed < -1:
		return nil, usagef("--student-seed %d: need -1 (the data seed) or a seed >= 0", c.studentSeed)
	case !(c.opts.LR > 0) || !finite(c.opts.LR):
		return nil, usagef("--lr %g: need a positive learning rate", c.opts.LR)
	case !(c.opts.WeightDecay >= 0) || !finite(c.opts.WeightDecay):
		return nil, usagef("--wd %g: need 0 <= wd < inf", c.opts.WeightDecay)
	case c.opts.Batch < 1:
		return nil, usagef("--batch %d: need at least 1", c.opts.Batch)
	case c.opts.StepsPerBatch < 1:
		return nil, usagef("--steps-per-batch %d: need at least 1", c.opts.StepsPerBatch)
	case c.opts.Epochs < 1:
		return nil, usagef("--epochs %d: need at least 1", c.opts.Epochs)
	case !(c.opts.InitScale > 0) || !finite(c.opts.InitScale):
		return nil, usagef("--init-scale %g: need a positive scale (w-hat = 0 is a stationary point)", c.opts.InitScale)
	case c.opts.Every < 0:
		return nil, usagef("--every %d: need 0 (once per epoch) or more", c.opts.Every)
	case c.opts.TestSamples < 0:
		return nil, usagef("--test-samples %d: need 0 (none) or more", c.opts.TestSamples)
	}
	if err := c.params(0).Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	if c.studentSeed >= 0 {
		s := uint64(c.studentSeed)
		c.opts.StudentSeed = &s
	}
	c.opts.Workers = c.workers
	return c, nil
}

func (c *smiSGDConfig) params(seed uint64) smi.Params {
	return smi.Params{D: c.D, Alpha: c.alpha, M: c.M, L: c.L, C: c.c, Beta: c.beta, Seed: seed}
}

// smiSGDBytes estimates the memory of one SGD run: the data and sgd.Bytes.
func smiSGDBytes(p smi.Params, o sgd.Options) uint64 { return p.Bytes() + sgd.Bytes(p, o) }

func smiSGDColumns(L int) []string {
	cols := []string{"seed", "update", "batch", "epoch"}
	cols = append(cols, layerCols("M", L, true)...)
	cols = append(cols, layerCols("Q", L, true)...)
	cols = append(cols, layerCols("cos", L, false)...)
	return append(cols, "loss", "train_error", "test_error")
}

// smiSGDRun is one seed of `aim smi sgd`.
type smiSGDRun struct {
	seed uint64
	res  sgd.Result
	err  error
}

func runSMISGD(args []string, stdout, stderr io.Writer) error {
	c, err := parseSMISGD(args, stderr)
	if err != nil {
		return err
	}
	if err := checkHostMemory(c.workers, fmt.Sprintf("a run at D = %d, alpha = %g", c.D, c.alpha), smiSGDBytes(c.params(0), c.opts)); err != nil {
		return err
	}
	res, err := openResults(c.out, c.plot)
	if err != nil {
		return err
	}
	start := time.Now()
	note := fmt.Sprintf("cpu (host SGD, %d goroutines)", c.nWorkers())
	fmt.Fprintln(stderr, note)
	N := c.params(0).N()
	B := min(c.opts.Batch, N)
	perRun := c.opts.Epochs * ((N + B - 1) / B) * c.opts.StepsPerBatch
	bar := newProgress(c.seeds*perRun, "smi sgd", stderr, c.quiet)
	runs := make([]*smiSGDRun, c.seeds)
	var rows [][]string
	var failed []string
	for s := range runs {
		run := &smiSGDRun{seed: c.seed + uint64(s)}
		runs[s] = run
		data, err := smi.Generate(c.params(run.seed))
		if err != nil {
			bar.Finish()
			res.files.Abort()
			return err
		}
		o := c.opts
		done := 0
		o.Progress = func(int) { done++; bar.Add(1) }
		run.res, run.err = sgd.Run(data, o)
		bar.Add(perRun - done)
		if run.err != nil {
			if !errors.Is(run.err, gd.ErrDiverged) {
				bar.Finish()
				res.files.Abort()
				return run.err
			}
			failed = append(failed, fmt.Sprintf("seed %d: %v", run.seed, run.err))
		}
		for _, pt := range run.res.Trace {
			row := []string{strconv.FormatUint(run.seed, 10), strconv.Itoa(pt.Update), strconv.Itoa(pt.Batch), strconv.Itoa(pt.Epoch)}
			row = append(row, nums(pt.M)...)
			row = append(row, nums(pt.Q)...)
			row = append(row, nums(pt.Cos)...)
			rows = append(rows, append(row, num(pt.Loss), num(pt.TrainError), num(pt.TestError)))
		}
	}
	bar.Finish()
	if err := writeRows(res.csv.File(), smiSGDColumns(c.L), rows); err != nil {
		res.files.Abort()
		return err
	}
	params := c.smiFlags.params()
	for k, v := range map[string]any{"c": c.c, "D": c.D, "N": N, "alpha": c.alpha, "seeds": c.seeds, "seed": c.seed,
		"student_seed": c.studentSeed, "lr": c.opts.LR, "wd": c.opts.WeightDecay, "weight_decay_applied": c.opts.WeightDecay / float64(c.D),
		"batch": c.opts.Batch, "steps_per_batch": c.opts.StepsPerBatch, "epochs": c.opts.Epochs, "init_scale": c.opts.InitScale,
		"every": c.opts.Every, "test_samples": c.opts.TestSamples, "shuffle": c.opts.Shuffle} {
		params[k] = v
	}
	man := baseManifest("smi sgd", note, params, start)
	man["runs"] = len(runs)
	man["diverged"] = len(failed)
	updates := make([]int, len(runs))
	seconds := make([]float64, len(runs))
	for i, r := range runs {
		updates[i], seconds[i] = r.res.Updates, r.res.Seconds
	}
	man["updates"] = updates
	man["seconds"] = seconds
	t, err := tableOf(c.out, smiSGDColumns(c.L), rows)
	if err != nil {
		res.files.Abort()
		return err
	}
	t.params = params
	fig, err := buildFigure([]*csvTable{t}, plotOptions{})
	if err != nil {
		res.files.Abort()
		return err
	}
	if err := res.finish(fig, man); err != nil {
		return err
	}
	fmt.Fprintln(stdout, res.summary(len(rows), time.Since(start)))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs diverged (their records up to the divergence are written):\n  %s",
			len(failed), len(runs), strings.Join(failed, "\n  "))
	}
	return nil
}
