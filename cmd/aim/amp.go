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
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/se"
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
	opts    amp.Options
	seCSV   string
	seTable *csvTable // the SE lines of --se
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
	fs.StringVar(&c.seCSV, "se", "", "an `aim se` CSV (same channel, T and beta, a curve at every --rho) whose lines to draw on the plot, instead of solving the SE on a dense grid")
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
	if c.seCSV != "" {
		var err error
		if c.seTable, err = readSETable(c.seCSV, &c.modelFlags); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readSETable reads the `aim se` CSV of a simulation command's --se: it must have the
// command's channel, T and beta, and a curve at each of its rho.
func readSETable(path string, m *modelFlags) (*csvTable, error) {
	t, err := readTableFile(path)
	if err != nil {
		return nil, usagef("--se: %v", err)
	}
	if t.kind != kindSE {
		return nil, usagef("--se %s: an %s CSV, want one written by aim se", path, t.kind)
	}
	have := map[string]bool{}
	for i := 0; i < t.rows(); i++ {
		if t.s(i, "channel") != m.csvChannelName() || t.s(i, "T") != strconv.Itoa(m.T) || t.s(i, "beta") != m.csvBeta() {
			return nil, usagef("--se %s line %d: channel %s, T = %s, beta = %s; the command has %s, %d, %s",
				path, i+2, t.s(i, "channel"), t.s(i, "T"), t.s(i, "beta"), m.csvChannelName(), m.T, m.csvBeta())
		}
		have[t.s(i, "rho")] = true
	}
	for _, r := range m.rhos {
		if !have[num(r)] {
			return nil, usagef("--se %s: no curve at rho = %g", path, r)
		}
	}
	return t, nil
}

// denseSETable solves the SE on a dense grid for the lines of a simulation's plot, at every
// rho: alpha = a1 k / n for k = from..n (when logx, the geometric grid a0 (a1/a0)^(k/n)).
func denseSETable(m *modelFlags, a0, a1 float64, from, n int, logx bool) (*csvTable, error) {
	ch, err := m.theoryChannel()
	if err != nil {
		return nil, err
	}
	K := float64(m.T*m.T + m.T - 2)
	var rows [][]string
	seen := map[float64]bool{}
	for _, r := range m.rhos {
		if seen[r] {
			continue
		}
		seen[r] = true
		for k := from; k <= n; k++ {
			a := a1 * float64(k) / float64(n)
			if logx {
				a = a0 * math.Pow(a1/a0, float64(k)/float64(n))
			}
			if a <= 0 {
				continue
			}
			p, err := se.Solve(ch, r, a, se.DefaultOptions())
			if err != nil {
				continue
			}
			rows = append(rows, []string{m.csvChannelName(), strconv.Itoa(m.T), num(r), m.csvBeta(), num(a), num(a * K), num(a / r),
				num(p.MMSE), num(p.Q), num(p.QHat), "", "", strconv.Itoa(p.Iterations), strconv.FormatBool(p.Converged)})
		}
	}
	return tableOf("se", seColumns, rows)
}

// ampRun is one row of the CSV.
type ampRun struct {
	rho, alpha float64
	seed       uint64
	p          aim.Params
	res        amp.Result
	seMMSE     float64
	err        error
}

func runAMP(args []string, stdout, stderr io.Writer) error {
	c, err := parseAMP(args, stderr)
	if err != nil {
		return err
	}
	dev, note, err := c.openDevice(c.device)
	if err != nil {
		return usageError{err}
	}
	defer auto.Close(dev)
	fmt.Fprintln(stderr, note)
	// Memory: refuse before allocating anything.
	runParams := func(r, a float64) aim.Params { return c.params(r, a, 0) }
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
	tracePending, abort, err := openTrace(res, c.trace, "")
	if err != nil {
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
	rows := ampCSVRows(c, runs, dev.Info().Name)
	if err := writeRows(res.csv.File(), ampColumns, rows); err != nil {
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
		if err := finishTrace(tracePending, ampTraceColumns, traceRows, params, baseManifest("amp trace", note, params, start)); err != nil {
			return abort(err)
		}
	}
	fig, err := ampRunFigure(c, rows)
	if err != nil {
		return abort(err)
	}
	return res.complete(stdout, fig, man, len(runs), start, failed, "runs diverged")
}

// ampOnce draws the data of one run, runs GAMP-RIE and frees everything.
func ampOnce(dev device.Device, p aim.Params, o amp.Options) (amp.Result, error) {
	data, err := aim.Generate(dev, p)
	if err != nil {
		return amp.Result{}, err
	}
	defer data.Free(dev)
	return amp.Run(dev, data, o)
}

var ampColumns = []string{"channel", "T", "rho", "beta", "D", "N", "R", "alpha", "alpha_bar", "seed",
	"error", "se_mmse", "iterations", "converged", "seconds", "device"}

// ampCSVRows returns the CSV rows of the runs.
func ampCSVRows(c *ampConfig, runs []*ampRun, devName string) [][]string {
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
	return rows
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

// ampRunFigure draws the figure of `aim amp` from the rows of its CSV, as `aim plot` draws
// it from the file beside the SE CSV of --se: per rho, the SE line (from --se, or solved on a
// dense grid over [0, 1.1 max alpha]) and the mean final error of the runs that did not
// diverge, with its standard error, per alpha.
func ampRunFigure(c *ampConfig, rows [][]string) (*figure.Figure, error) {
	t, err := tableOf(c.out, ampColumns, rows)
	if err != nil {
		return nil, err
	}
	lines := c.seTable
	if lines == nil {
		amax, amin := 0.0, math.Inf(1)
		for _, a := range c.alphas {
			amax, amin = math.Max(amax, a), math.Min(amin, a)
		}
		logx, _ := c.logAxes()
		if lines, err = denseSETable(&c.modelFlags, amin/2, 1.1*amax, 0, 96, logx); err != nil {
			return nil, err
		}
	}
	return buildFigure([]*csvTable{lines, t}, plotOptions{axes: c.axes})
}
