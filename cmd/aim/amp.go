package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/auto"
	"github.com/aimtheory/aim/engine/amp"
	"github.com/aimtheory/aim/engine/model"
	"github.com/aimtheory/aim/engine/se"
)

const ampUsage = `Usage: aim amp [flags]

GAMP-RIE (docs/AIM.md section 3) on teachers and data drawn at dimension D, beside the state
evolution of the same parameters: one run per (rho, alpha, seed), written as CSV, a JSON
manifest, and a plot of the mean final error with its standard error over the SE line.

  aim amp --channel softmax --T 2 --rho 0.5 --D 200 --alpha 0.05,0.1,0.15 --seeds 8
  aim amp --channel hardmax --rho 0.5 --D 100 --alpha 0.2,1 --seeds 4 --max-iter 500

Seeds: run s of a point uses seed --seed + s for its teacher, data and start, so the same
seed gives the same numbers on any device, and every alpha shares its teachers.

Flags:
`

// ampConfig is the parsed and validated command line of `aim amp`.
type ampConfig struct {
	simFlags
	opts amp.Options
}

func parseAMP(args []string, stderr io.Writer) (*ampConfig, error) {
	c := &ampConfig{opts: amp.DefaultOptions()}
	fs := flag.NewFlagSet("aim amp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.registerSim(fs, "amp", 200, 8)
	fs.StringVar(&c.alphaSpec, "alpha", "0.05,0.1,0.15", "sample complexity alpha = N/D^2: a list or range")
	fs.StringVar(&c.trace, "trace", "", "also write every iteration of every run to this CSV")
	fs.IntVar(&c.opts.MaxIter, "max-iter", 0, "iteration cap (default 100 for softmax, 500 for hardmax, as in the paper)")
	fs.Float64Var(&c.opts.Damping, "damping", c.opts.Damping, "damping in [0, 1)")
	fs.Float64Var(&c.opts.Tol, "tol", c.opts.Tol, "stop when ||S-hat_new - S-hat||^2/D < tol")
	fs.BoolVar(&c.opts.PaperInit, "paper-init", false, "start as the authors' code: a random prior draw with omega = V = c-hat = 10 (default: the prior mean, as state evolution starts)")
	fs.Usage = func() {
		fmt.Fprint(stderr, ampUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := c.validate(fs, []string{"0.5"}, "0.05,0.1,0.15"); err != nil {
		return nil, err
	}
	if c.opts.MaxIter == 0 {
		c.opts.MaxIter = 100
		if c.channelName == "hardmax" {
			c.opts.MaxIter = 500
		}
	}
	switch {
	case c.opts.MaxIter < 1:
		return nil, usagef("--max-iter %d: need at least 1", c.opts.MaxIter)
	case !(c.opts.Damping >= 0 && c.opts.Damping < 1):
		return nil, usagef("--damping %g: need 0 <= damping < 1", c.opts.Damping)
	case !(c.opts.Tol > 0):
		return nil, usagef("--tol %g: need a positive tolerance", c.opts.Tol)
	}
	if err := c.validateSim(); err != nil {
		return nil, err
	}
	return c, nil
}

// ampRun is one row of the CSV.
type ampRun struct {
	rho, alpha float64
	seed       uint64
	p          model.Params
	res        amp.Result
	seMMSE     float64
	err        error
}

func runAMP(args []string, stdout, stderr io.Writer) error {
	c, err := parseAMP(args, stderr)
	if err != nil {
		return err
	}
	dev, note, err := auto.Open(c.device, c.workers)
	if err != nil {
		return usageError{err}
	}
	defer auto.Close(dev)
	fmt.Fprintln(stderr, note)
	// Memory: refuse before allocating anything.
	runParams := func(r, a float64) model.Params { return c.params(r, a, 0) }
	if err := checkMemory(dev, c.rhos, c.alphas, runParams, amp.Bytes); err != nil {
		return err
	}
	ch, err := c.theoryChannel()
	if err != nil {
		return usageError{err}
	}
	res, err := openResults(c.out, c.plot)
	if err != nil {
		return err
	}
	var tracePending *results
	if c.trace != "" {
		if tracePending, err = openResults(c.trace, ""); err != nil {
			res.files.Abort()
			return err
		}
	}
	abort := func(err error) error {
		res.files.Abort()
		if tracePending != nil {
			tracePending.files.Abort()
		}
		return err
	}
	start := time.Now()
	var runs []*ampRun
	for _, r := range c.rhos {
		for _, a := range c.alphas {
			sePoint, err := se.Solve(ch, r, a, se.DefaultOptions())
			seMMSE := sePoint.MMSE
			if err != nil {
				seMMSE = math.NaN()
			}
			for s := 0; s < c.seeds; s++ {
				seed := c.seed + uint64(s)
				runs = append(runs, &ampRun{rho: r, alpha: a, seed: seed, p: c.params(r, a, seed), seMMSE: seMMSE})
			}
		}
	}
	bar := newProgress(len(runs)*c.opts.MaxIter, "amp "+c.csvChannelName(), stderr, c.quiet)
	var traceRows [][]string
	var failed []string
	for _, run := range runs {
		opts := c.opts
		opts.Progress = func(amp.Iteration) { bar.Add(1) }
		run.res, run.err = ampOnce(dev, run.p, opts)
		bar.Add(c.opts.MaxIter - run.res.Iterations)
		if run.err != nil {
			if !errors.Is(run.err, amp.ErrDiverged) {
				bar.Finish()
				return abort(run.err)
			}
			failed = append(failed, fmt.Sprintf("rho %g alpha %g seed %d: %v", run.rho, run.alpha, run.seed, run.err))
		}
		for _, it := range run.res.Trace {
			traceRows = append(traceRows, []string{num(run.rho), num(run.alpha), strconv.FormatUint(run.seed, 10),
				strconv.Itoa(it.Iter), num(it.Error), num(it.Step), num(it.Delta), num(it.Seconds)})
		}
	}
	bar.Finish()
	if err := writeAMPCSV(res.csv.File(), c, runs, dev.Info().Name); err != nil {
		return abort(err)
	}
	params := c.modelFlags.params()
	for k, v := range map[string]any{"D": c.D, "seeds": c.seeds, "seed": c.seed, "max_iter": c.opts.MaxIter,
		"damping": c.opts.Damping, "tol": c.opts.Tol, "paper_init": c.opts.PaperInit} {
		params[k] = v
	}
	man := baseManifest("amp", note, params, start)
	man["runs"] = len(runs)
	man["diverged"] = len(failed)
	if tracePending != nil {
		if err := writeRows(tracePending.csv.File(), []string{"rho", "alpha", "seed", "iter", "error", "step", "delta", "seconds"}, traceRows); err != nil {
			return abort(err)
		}
		if err := tracePending.finish(nil, baseManifest("amp trace", note, params, start)); err != nil {
			return abort(err)
		}
	}
	fig, err := ampFigure(c, runs)
	if err != nil {
		return abort(err)
	}
	return res.complete(stdout, fig, man, len(runs), start, failed, "runs diverged")
}

// ampOnce draws the data of one run, runs GAMP-RIE and frees everything.
func ampOnce(dev device.Device, p model.Params, o amp.Options) (amp.Result, error) {
	data, err := model.Generate(dev, p)
	if err != nil {
		return amp.Result{}, err
	}
	defer data.Free(dev)
	return amp.Run(dev, data, o)
}

var ampColumns = []string{"channel", "T", "rho", "beta", "D", "N", "R", "alpha", "alpha_bar", "seed",
	"error", "se_mmse", "iterations", "converged", "seconds", "device"}

func writeAMPCSV(w io.Writer, c *ampConfig, runs []*ampRun, devName string) error {
	K := float64(c.T*c.T + c.T - 2)
	rows := make([][]string, len(runs))
	for i, r := range runs {
		errVal := r.res.Error
		if r.err != nil {
			errVal = math.NaN()
		}
		rows[i] = []string{c.csvChannelName(), strconv.Itoa(c.T), num(r.rho), c.csvBeta(), strconv.Itoa(c.D),
			strconv.Itoa(r.p.N()), strconv.Itoa(r.p.R()), num(r.alpha), num(r.alpha * K), strconv.FormatUint(r.seed, 10),
			num(errVal), num(r.seMMSE), strconv.Itoa(r.res.Iterations), strconv.FormatBool(r.err == nil && r.res.Converged),
			strconv.FormatFloat(r.res.Seconds, 'f', 3, 64), devName}
	}
	return writeRows(w, ampColumns, rows)
}

// writeRows writes a CSV with a header.
func writeRows(w io.Writer, header []string, rows [][]string) error {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write(header)
	cw.WriteAll(rows)
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// ampFigure draws, per rho, the SE line over [0, 1.1 max alpha] and the mean final error of the
// runs that did not diverge, with its standard error, per alpha.
func ampFigure(c *ampConfig, runs []*ampRun) (*figure.Figure, error) {
	f := &figure.Figure{
		Title:  fmt.Sprintf("GAMP-RIE at D = %d beside state evolution: %s, T = %d", c.D, c.csvChannelName(), c.T),
		XLabel: "Sample complexity alpha = N/D^2", YLabel: "Estimation error ||S_hat - S||^2 / D",
	}
	f.LogX, f.LogY = c.logAxes()
	if !f.LogY {
		f.YMin, f.YMax = 0, 1.05
	}
	theory, err := c.theoryChannel()
	if err != nil {
		return nil, err
	}
	amax, amin := 0.0, math.Inf(1)
	for _, a := range c.alphas {
		amax, amin = math.Max(amax, a), math.Min(amin, a)
	}
	for gi, r := range c.rhos {
		line := figure.Series{Label: fmt.Sprintf("SE rho = %g", r), Group: gi}
		for k := 0; k <= 96; k++ {
			a := 1.1 * amax * float64(k) / 96
			if f.LogX {
				a = amin / 2 * math.Pow(2.2*amax/amin, float64(k)/96)
			}
			if a <= 0 {
				continue
			}
			p, err := se.Solve(theory, r, a, se.DefaultOptions())
			if err != nil {
				continue
			}
			line.X, line.Y = append(line.X, a), append(line.Y, p.MMSE)
		}
		pts := figure.Series{Label: fmt.Sprintf("AMP D = %d rho = %g", c.D, r), Group: gi, Points: true}
		for _, a := range c.alphas {
			var s, s2, n float64
			for _, run := range runs {
				if run.rho == r && run.alpha == a && run.err == nil {
					s += run.res.Error
					s2 += run.res.Error * run.res.Error
					n++
				}
			}
			if n == 0 {
				continue
			}
			mean := s / n
			stderr := 0.0
			if n > 1 {
				stderr = math.Sqrt(math.Max(0, s2/n-mean*mean) * n / (n - 1) / n)
			}
			pts.X, pts.Y, pts.YErr = append(pts.X, a), append(pts.Y, mean), append(pts.YErr, stderr)
		}
		f.Series = append(f.Series, line, pts)
	}
	return f, nil
}
