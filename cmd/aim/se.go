package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/se"
	"github.com/aimtheory/aim/internal/par"
)

// seConfig is the parsed and validated command line of `aim se`.
type seConfig struct {
	modelFlags
	rescaled   bool
	threshold  bool
	genSamples int
	genInner   int
	seed       uint64
	opts       se.Options
	workers    int
}

const seUsage = `Usage: aim se [flags]

State evolution of Bayes-optimal learning in the single-layer attention-indexed model
(docs/AIM.md section 2): one curve per --rho of the estimation error against alpha = N/D^2,
written as CSV (one row per point), a JSON manifest beside it, and a plot.

  aim se --channel softmax --T 2 --rho 0.1,0.2,0.5,1,2 --alpha 0.001:0.25:128
  aim se --channel hardmax --paper-compat --rho 0.5 --alpha 0.01:10:64:log
  aim se --channel hardmax --rescaled --rho 0.1,1 --alpha 0.1:20:64:log
  aim se --threshold --channel softmax --T 3 --rho 0.5

Grids: a list "0.05,0.1", a linear range "a:b:n" or a geometric range "a:b:n:log".

Flags:
`

func parseSE(args []string, stderr io.Writer) (*seConfig, error) {
	c := &seConfig{opts: se.DefaultOptions()}
	fs := flag.NewFlagSet("aim se", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, "se")
	fs.StringVar(&c.alphaSpec, "alpha", "", "sample complexity grid alpha = N/D^2 (alpha-bar_r = N/(D R) with --rescaled); default 0.001:0.25:128 for softmax, 0.01:10:128:log for hardmax, 0.1:20:128:log rescaled")
	fs.BoolVar(&c.rescaled, "rescaled", false, "add the rho -> 0 limit and put every curve against alpha-bar_r = alpha/rho (no default rho)")
	fs.BoolVar(&c.threshold, "threshold", false, "print alpha_PR per rho and alpha-bar_c, write no file")
	fs.IntVar(&c.genSamples, "gen-samples", 20000, "Monte Carlo samples of the generalisation error per point; 0 skips it")
	fs.IntVar(&c.genInner, "gen-inner", 8, "inner samples per Monte Carlo sample of the generalisation error")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the Monte Carlo generalisation error")
	fs.Float64Var(&c.opts.Tol, "tol", c.opts.Tol, "SE convergence tolerance on the estimation error")
	fs.IntVar(&c.opts.MaxIter, "max-iter", c.opts.MaxIter, "SE iteration cap")
	fs.Float64Var(&c.opts.Damping, "damping", c.opts.Damping, "SE damping in [0, 1)")
	fs.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "points solved in parallel")
	fs.Usage = func() {
		fmt.Fprint(stderr, seUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	defaultRho := []string{"0.5"}
	if c.rescaled {
		defaultRho = nil
	}
	defaultAlpha := "0.001:0.25:128"
	switch {
	case c.rescaled:
		defaultAlpha = "0.1:20:128:log"
	case c.channelName == "hardmax":
		defaultAlpha = "0.01:10:128:log"
	}
	if err := c.validate(fs, defaultRho, defaultAlpha); err != nil {
		return nil, err
	}
	switch {
	case c.genSamples < 0 || c.genSamples == 1:
		return nil, usagef("--gen-samples %d: need 0 (skip) or at least 2", c.genSamples)
	case c.genInner < 2:
		return nil, usagef("--gen-inner %d: need at least 2", c.genInner)
	case !(c.opts.Tol > 0):
		return nil, usagef("--tol %g: need a positive tolerance", c.opts.Tol)
	case c.opts.MaxIter < 1:
		return nil, usagef("--max-iter %d: need at least 1", c.opts.MaxIter)
	case !(c.opts.Damping >= 0 && c.opts.Damping < 1):
		return nil, usagef("--damping %g: need 0 <= damping < 1", c.opts.Damping)
	case c.workers < 1:
		return nil, usagef("--workers %d: need at least 1", c.workers)
	}
	return c, nil
}

// sePoint is one row of the CSV.
type sePoint struct {
	rho, alphaR float64 // rho = 0: the rescaled limit
	p           se.Point
	genErr      float64
	genStderr   float64
	err         error
}

func (pt *sePoint) alpha() float64 { return pt.alphaR * pt.rho }

func runSE(args []string, stdout, stderr io.Writer) error {
	c, err := parseSE(args, stderr)
	if err != nil {
		return err
	}
	ch, err := c.theoryChannel()
	if err != nil {
		return usageError{err}
	}
	if c.threshold {
		return printThresholds(c, ch, stdout)
	}
	res, err := openResults(c.out, c.plot)
	if err != nil {
		return err
	}
	start := time.Now()
	points, thresholds, err := solveCurves(c, ch, stderr)
	if err != nil {
		res.files.Abort()
		return err
	}
	var failed []string
	for _, pt := range points {
		if pt.err != nil {
			failed = append(failed, pt.err.Error())
		}
	}
	rows := seCSVRows(c, points)
	if err := writeRows(res.csv.File(), seColumns, rows); err != nil {
		res.files.Abort()
		return err
	}
	fig, err := seRunFigure(c, rows, thresholds)
	if err != nil {
		res.files.Abort()
		return err
	}
	params := c.params()
	for k, v := range map[string]any{"rescaled": c.rescaled, "damping": c.opts.Damping, "tol": c.opts.Tol, "max_iter": c.opts.MaxIter,
		"accelerate": c.opts.Accelerate, "gen_samples": c.genSamples, "gen_inner": c.genInner, "seed": c.seed} {
		params[k] = v
	}
	man := baseManifest("se", "cpu (theory: scalar state evolution)", params, start)
	man["thresholds"] = jsonSafe(thresholds)
	man["points"] = len(points)
	man["unconverged"] = len(failed)
	return res.complete(stdout, fig, man, len(points), start, failed, "points did not converge")
}

// seThresholds are the thresholds drawn on the plot and written to the manifest.
type seThresholds struct {
	AlphaPR         map[string]float64 `json:"alpha_PR"`          // per rho, from the SE solver
	AlphaPRCounting map[string]float64 `json:"alpha_PR_counting"` // per rho, the counting formula (softmax)
	AlphaBarC       float64            `json:"alpha_bar_c"`       // rho -> 0 weak recovery, in N/(D R)
}

func computeThresholds(c *seConfig, ch aim.Channel) (seThresholds, error) {
	th := seThresholds{AlphaPR: map[string]float64{}, AlphaPRCounting: map[string]float64{}}
	var err error
	if th.AlphaBarC, err = se.AlphaBarC(ch); err != nil {
		return th, err
	}
	for _, r := range c.rhos {
		a, err := se.AlphaPR(ch, r, 1e-9, c.opts)
		if err != nil {
			return th, err
		}
		th.AlphaPR[rhoKey(r)] = a
		if sm, ok := ch.(*aim.Softmax); ok {
			th.AlphaPRCounting[rhoKey(r)] = se.AlphaPRCounting(r, sm.Directions())
		}
	}
	return th, nil
}

func printThresholds(c *seConfig, ch aim.Channel, stdout io.Writer) error {
	th, err := computeThresholds(c, ch)
	if err != nil {
		return err
	}
	mode := ""
	if c.paperCompat {
		mode = " (paper-compat)"
	}
	fmt.Fprintf(stdout, "channel %s%s, T = %d\n", ch.Name(), mode, c.T)
	fmt.Fprintf(stdout, "alpha-bar_c = %.10g   (rho -> 0 weak recovery, in alpha/rho = N/(D R))\n", th.AlphaBarC)
	for _, r := range c.rhos {
		a := th.AlphaPR[rhoKey(r)]
		if math.IsInf(a, 1) {
			fmt.Fprintf(stdout, "rho = %-6g alpha_PR = none (the %s channel reaches mmse = 0 only as alpha -> inf)\n", r, ch.Name())
			continue
		}
		cnt := th.AlphaPRCounting[rhoKey(r)]
		fmt.Fprintf(stdout, "rho = %-6g alpha_PR = %.8g   counting formula %.8g   relative difference %.1e\n", r, a, cnt, math.Abs(a-cnt)/cnt)
	}
	return nil
}

// solveCurves solves every (rho, alpha) point in parallel, with a progress bar on a terminal.
func solveCurves(c *seConfig, ch aim.Channel, stderr io.Writer) ([]sePoint, seThresholds, error) {
	var points []sePoint
	curves := c.rhos
	if c.rescaled {
		curves = append([]float64{0}, c.rhos...)
	}
	for _, r := range curves {
		for _, a := range c.alphas {
			if c.rescaled || r == 0 {
				points = append(points, sePoint{rho: r, alphaR: a})
			} else {
				points = append(points, sePoint{rho: r, alphaR: a / r})
			}
		}
	}
	th, err := computeThresholds(c, ch)
	if err != nil {
		return nil, th, err
	}
	bar := newProgress(len(points), "se "+ch.Name(), stderr, c.quiet)
	// Points run in parallel on c.workers goroutines; each point's Monte Carlo takes an equal
	// share of the cores, and its draws depend on the point, not on the grid or the schedule.
	genWorkers := max(1, par.Workers(0)/max(1, min(c.workers, len(points))))
	if err := par.For(c.workers, len(points), par.NoState, func(_ struct{}, i int) error {
		solvePoint(c, ch, &points[i], genWorkers)
		bar.Add(1)
		return nil
	}); err != nil {
		return nil, th, err
	}
	bar.Finish()
	for _, pt := range points {
		if pt.err != nil && !errors.Is(pt.err, se.ErrNotConverged) {
			return nil, th, pt.err
		}
	}
	return points, th, nil
}

func solvePoint(c *seConfig, ch aim.Channel, pt *sePoint, genWorkers int) {
	if pt.rho == 0 {
		pt.p, pt.err = se.SolveRescaled(ch, pt.alphaR, c.opts)
	} else {
		pt.p, pt.err = se.Solve(ch, pt.rho, pt.alpha(), c.opts)
	}
	pt.genErr, pt.genStderr = math.NaN(), math.NaN()
	if pt.err != nil || c.genSamples == 0 {
		return
	}
	o := se.GenErrorOptions{Samples: c.genSamples, Inner: c.genInner, Seed: pointSeed(c.seed, pt.rho, pt.alphaR), Workers: genWorkers}
	pt.genErr, pt.genStderr, pt.err = se.GenError(ch, pt.p.Q, pt.p.MMSE, o)
}

// pointSeed returns the seed of the Monte Carlo generalisation error at one point: the user's
// seed mixed (SplitMix64's finaliser) with the bits of rho and alpha-bar_r = alpha/rho, so that
// a point gets the same draws in any grid, sweep or order.
func pointSeed(seed uint64, rho, alphaR float64) uint64 {
	z := seed
	for _, v := range []float64{rho, alphaR} {
		z += 0x9E3779B97F4A7C15 ^ math.Float64bits(v)
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
	}
	return z
}

// seColumns are the CSV columns of `aim se`.
var seColumns = []string{"channel", "T", "rho", "beta", "alpha", "alpha_bar", "alpha_r", "mmse", "q", "qhat",
	"gen_error", "gen_error_stderr", "iterations", "converged"}

// seCSVRows returns the CSV rows of the points.
func seCSVRows(c *seConfig, points []sePoint) [][]string {
	K := float64(c.T*c.T + c.T - 2)
	name, beta := c.csvChannelName(), c.csvBeta()
	rows := make([][]string, len(points))
	for i, pt := range points {
		alpha, alphaBar := math.NaN(), math.NaN()
		if pt.rho > 0 {
			alpha = pt.alpha()
			alphaBar = alpha * K
		}
		rows[i] = []string{name, strconv.Itoa(c.T), num(pt.rho), beta, num(alpha), num(alphaBar), num(pt.alphaR),
			num(pt.p.MMSE), num(pt.p.Q), num(pt.p.QHat), num(pt.genErr), num(pt.genStderr),
			strconv.Itoa(pt.p.Iterations), strconv.FormatBool(pt.p.Converged)}
	}
	return rows
}

// seRunFigure draws the figure of `aim se` from the rows of its CSV, as `aim plot` draws it
// from the file: one line per rho, with alpha_PR drawn as a vertical line in the same colour
// (alpha-bar_c in rescaled mode).
func seRunFigure(c *seConfig, rows [][]string, th seThresholds) (*figure.Figure, error) {
	t, err := tableOf(c.out, seColumns, rows)
	if err != nil {
		return nil, err
	}
	t.th = seFigThresholds(th)
	return buildFigure([]*csvTable{t}, plotOptions{axes: c.axes})
}

// seFigThresholds keeps the thresholds the manifest records as numbers (no infinities).
func seFigThresholds(th seThresholds) *figThresholds {
	out := &figThresholds{alphaPR: map[string]float64{}, alphaBarC: th.AlphaBarC}
	for k, v := range th.AlphaPR {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			out.alphaPR[k] = v
		}
	}
	return out
}

// jsonSafe replaces infinite thresholds (no perfect recovery) by nil, which JSON can hold.
func jsonSafe(th seThresholds) map[string]any {
	clean := func(m map[string]float64) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				out[k] = nil
			} else {
				out[k] = v
			}
		}
		return out
	}
	return map[string]any{"alpha_PR": clean(th.AlphaPR), "alpha_PR_counting": clean(th.AlphaPRCounting), "alpha_bar_c": th.AlphaBarC}
}
