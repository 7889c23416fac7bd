package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/device/auto"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/aim/se"
)

const gdUsage = `Usage: aim gd [flags]

Gradient-descent students of the softmax attention-indexed model (docs/AIM.md section 4):
W in R^{R x D}, S = W^T W / sqrt(R D), full-batch loss sum (y-hat - y)^2 / D, Adam or plain GD.
One training per (rho, alpha, seed); with --restarts K the estimate is the average of the final
S of K students on the same data ("averaged GD"). The plot puts GD single, GD averaged, AMP
(from --amp) and the SE line against alpha-bar = alpha (T^2 + T - 2), as in the paper's figure.

  aim gd --T 2 --rho 0.5 --D 100 --alpha 0.01,0.05,0.1,0.25 --seeds 4 --restarts 32
  aim gd --D 100 --alpha 0.1 --seeds 1 --trace results/gd_trace.csv

Hardmax students are not offered: the hardmax output has no useful gradient.

Flags:
`

type gdConfig struct {
	simFlags
	ampCSV   string
	seCSV    string
	optim    string
	opts     gd.Options
	traceInt int
	ampTable *csvTable // the AMP points of --amp
	seTable  *csvTable // the SE lines of --se
}

func parseGD(args []string, stderr io.Writer) (*gdConfig, error) {
	c := &gdConfig{opts: gd.DefaultOptions()}
	fs := flag.NewFlagSet("aim gd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.registerSim(fs, "gd", 100, 4)
	fs.StringVar(&c.alphaSpec, "alpha", "0.0025,0.0125,0.025,0.075,0.25", "sample complexity alpha = N/D^2: a list or range")
	fs.IntVar(&c.opts.Restarts, "restarts", 1, "students averaged per data set (1: GD single; the paper's averaged GD uses 32)")
	fs.IntVar(&c.opts.Steps, "steps", c.opts.Steps, "full-batch steps per student")
	fs.Float64Var(&c.opts.LR, "lr", c.opts.LR, "learning rate")
	fs.StringVar(&c.optim, "optimizer", "adam", "adam or gd")
	fs.IntVar(&c.opts.R, "R", 0, "student width (0: the teacher's R = floor(rho D))")
	fs.StringVar(&c.trace, "trace", "", "write the training curve (loss and error against step) of the first student of each run to this CSV, and its plot beside it")
	fs.IntVar(&c.traceInt, "trace-every", 10, "steps between traced points")
	fs.StringVar(&c.ampCSV, "amp", "", "an `aim amp` CSV whose points to draw on the plot")
	fs.StringVar(&c.seCSV, "se", "", "an `aim se` CSV (same T and beta, a curve at every --rho) whose lines to draw on the plot, instead of solving the SE on a dense grid")
	fs.Usage = func() {
		fmt.Fprint(stderr, gdUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if c.channelName == "hardmax" {
		return nil, usagef("hardmax students are not offered: the hardmax output has no useful gradient (use --channel softmax)")
	}
	if err := c.validate(fs, []string{"0.5"}, ""); err != nil {
		return nil, err
	}
	switch c.optim {
	case "adam":
		c.opts.Adam = true
	case "gd":
		c.opts.Adam = false
	default:
		return nil, usagef("--optimizer %q: want adam or gd", c.optim)
	}
	switch {
	case c.opts.Restarts < 1:
		return nil, usagef("--restarts %d: need at least 1", c.opts.Restarts)
	case c.opts.Steps < 1:
		return nil, usagef("--steps %d: need at least 1", c.opts.Steps)
	case !(c.opts.LR > 0) || math.IsInf(c.opts.LR, 0):
		return nil, usagef("--lr %g: need a positive learning rate", c.opts.LR)
	case c.opts.R < 0:
		return nil, usagef("--R %d: need 0 (the teacher's width) or more", c.opts.R)
	case c.traceInt < 1:
		return nil, usagef("--trace-every %d: need at least 1", c.traceInt)
	}
	if c.trace != "" {
		c.opts.TraceEvery = c.traceInt
	}
	if err := c.validateSim(); err != nil {
		return nil, err
	}
	if c.ampCSV != "" {
		t, err := readTableFile(c.ampCSV)
		if err != nil {
			return nil, usagef("--amp: %v", err)
		}
		if t.kind != kindAMP {
			return nil, usagef("--amp %s: an %s CSV, want one written by aim amp", c.ampCSV, t.kind)
		}
		c.ampTable = t
	}
	if c.seCSV != "" {
		var err error
		if c.seTable, err = readSETable(c.seCSV, &c.modelFlags); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type gdRun struct {
	rho, alpha float64
	seed       uint64
	p          aim.Params
	res        gd.Result
	seMMSE     float64
	err        error
}

func runGD(args []string, stdout, stderr io.Writer) error {
	c, err := parseGD(args, stderr)
	if err != nil {
		return err
	}
	dev, note, err := c.openDevice(c.device)
	if err != nil {
		return usageError{err}
	}
	if dev.Capabilities().Trainer == nil {
		auto.Close(dev)
		if c.device != "auto" {
			return usagef("device %s does not implement the training operations yet (use --device cpu)", dev.Info().Name)
		}
		if dev, note, err = c.openDevice("cpu"); err != nil {
			return usageError{err}
		}
		note = "auto: using the CPU (" + note + "): the GPU backend does not implement the training operations yet"
	}
	defer auto.Close(dev)
	fmt.Fprintln(stderr, note)
	runParams := func(r, a float64) aim.Params { return c.params(r, a, 0) }
	if err := checkMemory(dev, c.rhos, c.alphas, runParams, func(p aim.Params) uint64 { return gd.Bytes(p, c.opts) }); err != nil {
		return err
	}
	theory, err := c.theoryChannel()
	if err != nil {
		return usageError{err}
	}
	res, err := openResults(c.out, c.plot)
	if err != nil {
		return err
	}
	traceRes, abort, err := openTrace(res, c.trace, strings.TrimSuffix(c.trace, ".csv")+".png")
	if err != nil {
		return err
	}
	start := time.Now()
	var runs []*gdRun
	for _, r := range c.rhos {
		for _, a := range c.alphas {
			seMMSE := math.NaN()
			if p, err := se.Solve(theory, r, a, se.DefaultOptions()); err == nil {
				seMMSE = p.MMSE
			}
			for s := 0; s < c.seeds; s++ {
				seed := c.seed + uint64(s)
				runs = append(runs, &gdRun{rho: r, alpha: a, seed: seed, p: c.params(r, a, seed), seMMSE: seMMSE})
			}
		}
	}
	steps := c.opts.Steps * c.opts.Restarts
	bar := newProgress(len(runs)*steps, "gd", stderr, c.quiet)
	var failed []string
	var traceRows [][]string
	for _, run := range runs {
		o := c.opts
		done := 0
		o.Progress = func() { done++; bar.Add(1) }
		data, err := aim.Generate(dev, run.p)
		if err != nil {
			bar.Finish()
			return abort(err)
		}
		run.res, run.err = gd.Run(dev, data, o)
		data.Free(dev)
		bar.Add(steps - done)
		if run.err != nil {
			if !errors.Is(run.err, gd.ErrDiverged) {
				bar.Finish()
				return abort(run.err)
			}
			failed = append(failed, fmt.Sprintf("rho %g alpha %g seed %d: %v", run.rho, run.alpha, run.seed, run.err))
		}
		for _, pt := range run.res.Trace {
			traceRows = append(traceRows, []string{num(run.rho), num(run.alpha), strconv.FormatUint(run.seed, 10),
				strconv.Itoa(pt.Step), num(pt.Loss), num(pt.Error)})
		}
	}
	bar.Finish()
	K := float64(c.T*c.T + c.T - 2)
	optim := "adam"
	if !c.opts.Adam {
		optim = "gd"
	}
	rows := make([][]string, len(runs))
	for i, r := range runs {
		errAvg, errSingle, loss := math.NaN(), math.NaN(), math.NaN()
		if r.err == nil {
			errAvg, errSingle, loss = r.res.Error, mean(r.res.SingleErrors), mean(r.res.FinalLoss)
		}
		width := c.opts.R
		if width == 0 {
			width = r.p.R()
		}
		rows[i] = []string{c.csvChannelName(), strconv.Itoa(c.T), num(r.rho), c.csvBeta(), strconv.Itoa(c.D),
			strconv.Itoa(r.p.N()), strconv.Itoa(r.p.R()), strconv.Itoa(width), num(r.alpha), num(r.alpha * K),
			strconv.FormatUint(r.seed, 10), strconv.Itoa(c.opts.Restarts), strconv.Itoa(c.opts.Steps), num(c.opts.LR), optim,
			num(errAvg), num(errSingle), num(loss), num(r.seMMSE), strconv.FormatBool(r.err == nil),
			strconv.FormatFloat(r.res.Seconds, 'f', 3, 64), dev.Info().Name}
	}
	if err := writeRows(res.csv.File(), gdColumns, rows); err != nil {
		return abort(err)
	}
	fig, err := gdRunFigure(c, rows)
	if err != nil {
		return abort(err)
	}
	params := c.modelFlags.params()
	for k, v := range map[string]any{"D": c.D, "seeds": c.seeds, "seed": c.seed, "restarts": c.opts.Restarts,
		"steps": c.opts.Steps, "lr": c.opts.LR, "optimizer": optim, "R_student": c.opts.R, "amp": c.ampCSV} {
		params[k] = v
	}
	man := baseManifest("gd", note, params, start)
	man["runs"] = len(runs)
	man["diverged"] = len(failed)
	if traceRes != nil {
		if err := finishTrace(traceRes, gdTraceColumns, traceRows, params, baseManifest("gd trace", note, params, start)); err != nil {
			return abort(err)
		}
	}
	return res.complete(stdout, fig, man, len(runs), start, failed, "runs diverged")
}

var gdColumns = []string{"channel", "T", "rho", "beta", "D", "N", "R", "R_student", "alpha", "alpha_bar", "seed",
	"restarts", "steps", "lr", "optimizer", "error", "error_single", "final_loss", "se_mmse", "finished", "seconds", "device"}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// meanStderr returns the mean and the standard error of xs.
func meanStderr(xs []float64) (float64, float64) {
	m := mean(xs)
	if len(xs) < 2 {
		return m, 0
	}
	var s2 float64
	for _, x := range xs {
		s2 += (x - m) * (x - m)
	}
	return m, math.Sqrt(s2 / float64(len(xs)-1) / float64(len(xs)))
}

// gdRunFigure draws the figure of `aim gd` from the rows of its CSV, as `aim plot` draws it
// from the file beside the CSVs of --se and --amp: per rho, the SE line (from --se, or solved
// on a dense grid), GD single, GD averaged and the AMP points of --amp against alpha-bar =
// alpha (T^2 + T - 2).
func gdRunFigure(c *gdConfig, rows [][]string) (*figure.Figure, error) {
	t, err := tableOf(c.out, gdColumns, rows)
	if err != nil {
		return nil, err
	}
	lines := c.seTable
	if lines == nil {
		amax := 0.0
		for _, a := range c.alphas {
			amax = math.Max(amax, a)
		}
		if lines, err = denseSETable(&c.modelFlags, 0, 1.1*amax, 1, 96, false); err != nil {
			return nil, err
		}
	}
	tables := []*csvTable{t, lines}
	if c.ampTable != nil {
		tables = append(tables, c.ampTable)
	}
	return buildFigure(tables, plotOptions{axes: c.axes})
}
