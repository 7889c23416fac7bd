package smijob

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/grid"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/smi"
	smise "github.com/aimtheory/aim/engine/smi/se"
)

// SMISEConfig is the configuration of `aim smi se`: the SMI state evolution against alpha,
// each point continued from the previous one, with the generalisation errors and thresholds.
type SMISEConfig struct {
	SMI
	Alpha      string // the alpha grid
	GenSamples int    // Monte Carlo samples of e_gen and e_BO per point (the same draws at every point); 0 skips them
	GenInner   int    // inner draws of Z given omega per sample of e_BO
	SMISEOptions
	// Replicates independent randomisations of the SE's draws, whose spread gives the standard
	// error of Q (smise.Options.Replicates).
	Replicates int
	// MCError > 0 grows the draws per iteration from Samples until the standard error of every
	// Q_ll is below it, up to MaxSamples (smise.Options.MCError); 0 keeps Samples fixed.
	MCError    float64
	MaxSamples int
	// Newton makes the solves at more draws of MCError take Newton steps from the last fixed
	// point (smise.Options.Newton).
	Newton bool
	// Start is the SE start (--start): uninformed (the default: the SMI SE is a Monte Carlo and
	// both doubles its cost), informed or both (smise.Start).
	Start string
	// At, when set (--at Q11,...,QLL), replaces the solve at each alpha by the map linearised
	// at that point (smise.Linearise): the row's Q is the fixed point one Newton step away,
	// Qerr its error, and the manifest's "at" has G(Q0) - Q0 against its standard error.
	At string

	at     []float64
	start  smise.Start
	alphas []float64
	ch     *smi.Deep
}

// NewSMISEConfig returns the configuration of `aim smi se` with no flag set.
func NewSMISEConfig() *SMISEConfig {
	e, g := smise.DefaultOptions(2), smise.DefaultGenErrorOptions()
	return &SMISEConfig{SMI: defaultSMI("se"), Alpha: "0.05:1.6:32", GenSamples: g.Samples, GenInner: g.Inner, SMISEOptions: defaultSMISEOptions(),
		Replicates: e.Replicates, MCError: e.MCError, MaxSamples: e.MaxSamples, Start: smise.Uninformed.String()}
}

// Validate checks the configuration and parses its grid; every problem is bad input.
func (c *SMISEConfig) Validate() error {
	var err error
	if c.ch, c.alphas, err = c.theory(c.Alpha); err != nil {
		return err
	}
	if err := c.SMISEOptions.check(c.L); err != nil {
		return err
	}
	switch {
	case c.GenSamples < 0 || c.GenSamples == 1:
		return job.Inputf("--gen-samples %d: need 0 (skip) or at least 2", c.GenSamples)
	case c.GenInner < 2:
		return job.Inputf("--gen-inner %d: need at least 2 (the unbiased covariance of e_BO)", c.GenInner)
	case c.Replicates < 1 || c.Replicates > smise.MaxReplicates:
		return job.Inputf("--replicates %d: need 1 to %d", c.Replicates, smise.MaxReplicates)
	case !(c.MCError >= 0) || math.IsInf(c.MCError, 0):
		return job.Inputf("--mc-error %g: need a standard error > 0, or 0 for a fixed --samples", c.MCError)
	case c.MCError > 0 && c.Replicates < 2:
		return job.Inputf("--mc-error %g needs --replicates >= 2 (the error is their spread), got %d", c.MCError, c.Replicates)
	case c.MCError > 0 && c.MaxSamples < c.Samples:
		return job.Inputf("--max-samples %d is below --samples %d (the first count of --mc-error)", c.MaxSamples, c.Samples)
	case c.Newton && c.MCError == 0:
		return job.Inputf("--newton refines the solves at more draws of --mc-error: set --mc-error")
	}
	if c.start, err = smise.ParseStart(c.Start); err != nil {
		return job.Inputf("--start: %v", err)
	}
	if c.At != "" {
		if c.at, err = grid.Parse(c.At); err != nil {
			return job.Inputf("--at %q: %v", c.At, err)
		}
		switch {
		case len(c.at) != c.L:
			return job.Inputf("--at %q: %d overlaps, need L = %d", c.At, len(c.at), c.L)
		case c.MCError > 0:
			return job.Inputf("--at evaluates the map at --samples draws: it does not take --mc-error")
		case c.Replicates < 2:
			return job.Inputf("--at needs --replicates >= 2 (the errors are their spread), got %d", c.Replicates)
		}
		for l, q := range c.at {
			if !(q >= 0 && q < 1) {
				return job.Inputf("--at: Q_%d%d = %g, need 0 <= Q < 1", l+1, l+1, q)
			}
		}
	}
	return nil
}

// options returns the engine's options of the state evolution.
func (c *SMISEConfig) options() smise.Options {
	o := c.engine(c.L, c.Workers)
	o.Replicates, o.MCError, o.MaxSamples, o.Start = c.Replicates, c.MCError, c.MaxSamples, c.start
	o.Newton = c.Newton
	return o
}

// SMISERow is one alpha of the SMI state evolution: a row of the `aim smi se` CSV.
type SMISERow struct {
	L, M           int
	C, Beta, Alpha float64
	Q, QHat        []float64 // per layer; NaN where the point did not converge
	// QErr is the Monte Carlo standard error of each Q_ll (smise.Point.QErr): 0 for a frozen
	// layer, NaN with one replicate or where the point did not converge.
	QErr                []float64
	GenError, GenStderr float64 // the plug-in e_gen(Q) = E||g(Z) - g(omega)||^2 and its standard error; NaN when skipped
	GenBO, BOStderr     float64 // the Bayes-optimal e_BO(Q) = E tr Cov(g(Z) | omega) and its standard error
	GenLast, LastStderr float64 // the plug-in e_gen with every layer but the last at Q = 0
	Samples             int     // draws per SE iteration at the last solve
	Iterations          int
	Converged           bool
	Inexact             int // channel integrals that stopped at their budget, last iteration
	// Start is where the reported fixed point was reached from: uninformed or informed, or
	// both where --start both reached one fixed point from both ends, or where one of the two
	// did not converge (the row is then unconverged; smise.Point.Start).
	Start string
	// Coexist is true where --start both reached two distinct fixed points; the row is the one
	// of larger FreeEntropy (the other is in the manifest's "coexisting").
	Coexist bool
	// FreeEntropy is Phi = psi_in(q-hat) - tr(Q q-hat)/2 + alpha psi_out(Q) at the fixed point
	// (smise.FreeEntropy, up to alpha times a Q-independent constant), FreeStderr its Monte Carlo
	// standard error alpha stderr(psi_out); NaN where the point did not converge, the error NaN
	// with one replicate.
	FreeEntropy, FreeStderr float64
}

// SMISESchema is the one definition of an `aim smi se` row.
var SMISESchema = &table.Schema[SMISERow]{Kind: table.SMISE, Columns: []table.Column[SMISERow]{
	table.Int("L", func(r *SMISERow) int { return r.L }),
	table.Int("M", func(r *SMISERow) int { return r.M }),
	table.Float("c", func(r *SMISERow) float64 { return r.C }),
	table.Float("beta", func(r *SMISERow) float64 { return r.Beta }),
	table.Float("alpha", func(r *SMISERow) float64 { return r.Alpha }),
	table.Layers("Q", true, 0, func(r *SMISERow) []float64 { return r.Q }),
	table.Layers("Qerr", true, 0, func(r *SMISERow) []float64 { return r.QErr }),
	table.Layers("qhat", true, 0, func(r *SMISERow) []float64 { return r.QHat }),
	table.Float("gen_error", func(r *SMISERow) float64 { return r.GenError }),
	table.Float("gen_error_stderr", func(r *SMISERow) float64 { return r.GenStderr }),
	table.Float("gen_error_bo", func(r *SMISERow) float64 { return r.GenBO }),
	table.Float("gen_error_bo_stderr", func(r *SMISERow) float64 { return r.BOStderr }),
	table.Float("gen_error_last_layer", func(r *SMISERow) float64 { return r.GenLast }),
	table.Float("gen_error_last_layer_stderr", func(r *SMISERow) float64 { return r.LastStderr }),
	table.Int("samples", func(r *SMISERow) int { return r.Samples }),
	table.Int("iterations", func(r *SMISERow) int { return r.Iterations }),
	table.Bool("converged", func(r *SMISERow) bool { return r.Converged }),
	table.Int("inexact", func(r *SMISERow) int { return r.Inexact }),
	table.Added(table.Word("start", func(r *SMISERow) string { return r.Start })),
	table.Added(table.Bool("coexist", func(r *SMISERow) bool { return r.Coexist })),
	table.Added(table.Float("free_entropy", func(r *SMISERow) float64 { return r.FreeEntropy })),
	table.Added(table.Float("free_entropy_stderr", func(r *SMISERow) float64 { return r.FreeStderr })),
}}

// SMISEResult is what RunSMISE computed.
type SMISEResult struct {
	Rows      []SMISERow // in the order of the alpha grid
	Fisher    []float64  // F_l at Q = 0
	Stability []float64  // alpha_l = 1/F_l
	Onset     []float64  // where each Q_ll turns on along the curve (NaN: nowhere)
	Failed    []string   // the points that did not converge
	// Missed are the points whose standard error of Q stayed above --mc-error at
	// --max-samples draws (written with the error they reached).
	Missed []string
	// NoiseLimited are the alphas whose last solve stopped by the Monte Carlo noise rule
	// (sampled integrals; smise.Point.NoiseLimited): within about half of Qerr of the fixed
	// point, not within --tol.
	NoiseLimited []float64
	// Undetermined are the points with a layer at Q_ll = 0 whose stability the draws cannot
	// settle (smise.Point.Undetermined; its Qerr is +Inf).
	Undetermined []string
	// Coexisting are the points where --start both found two fixed points: both branches.
	Coexisting []SMICoexisting
	// At are the linearisations of --at, per alpha (none without it).
	At []smise.Linearisation
	// Missing lists the alphas not solved when the job was interrupted (RunSMISE returns
	// ErrInterrupted with the rows of the others, without e_gen).
	Missing []job.Missing
}

// SMICoexisting is an alpha with two stable fixed points of the SMI SE (--start both).
type SMICoexisting struct {
	Alpha                      float64
	QUninformed, QInformed     []float64
	PhiUninformed, PhiInformed float64
	PhiStderr                  float64 // the Monte Carlo error of the reported Phi
	Optimal                    string  // the start of the larger free entropy
}

// Err is the error of the result when points did not converge (their rows written without
// values).
func (r *SMISEResult) Err() error {
	return job.Failures(r.Failed, len(r.Rows), "points did not converge")
}

// RunSMISE solves the curve of a validated configuration.
func RunSMISE(c *SMISEConfig, env job.Env) (*SMISEResult, error) {
	if err := env.Begin(); err != nil {
		return nil, err
	}
	opts := c.options()
	dev, err := c.open(c.Workers)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	opts.Device = engineDevice(dev)
	total := 1 + len(c.alphas)
	if c.GenSamples > 0 {
		total += len(c.alphas)
	}
	bar := env.Meter(total, "smi se")
	defer bar.Finish()
	F, err := smise.Stability(c.ch, make([]float64, c.L), opts)
	if err != nil {
		return nil, err
	}
	bar.Add(1)
	res := &SMISEResult{Fisher: F, Stability: stabilityAlphas(F)}
	var points []smise.Point
	if c.at != nil {
		points, res.At, err = c.linearise(opts, bar)
		for _, x := range res.At {
			env.Notef("alpha %g: G(Q0) - Q0 = %s (%s standard errors); one Newton step: Q = %s +- %s (%s of its errors from Q0)",
				x.Alpha, formatErrs(diff(x.G, x.Q0)), formatErrs(ratios(diff(x.G, x.Q0), x.GErr)),
				formatErrs(x.Q), formatErrs(x.QErr), formatErrs(ratios(diff(x.Q, x.Q0), x.QErr)))
		}
	} else {
		points, res.Missing, err = c.solveCurve(env, opts, bar)
	}
	if err != nil {
		return nil, err
	}
	res.Rows = make([]SMISERow, len(points))
	for i, p := range points {
		q, qh, qe := table.NaNs(c.L), table.NaNs(c.L), table.NaNs(c.L)
		if p.Converged {
			q, qh, qe = p.Q, p.QHat, p.QErr
		}
		res.Rows[i] = SMISERow{L: c.L, M: c.M, C: c.C, Beta: c.Beta, Alpha: p.Alpha, Q: q, QHat: qh, QErr: qe,
			GenError: math.NaN(), GenStderr: math.NaN(), GenBO: math.NaN(), BOStderr: math.NaN(), GenLast: math.NaN(), LastStderr: math.NaN(),
			Samples: p.Samples, Iterations: p.Iterations, Converged: p.Converged, Inexact: p.Inexact,
			Start: p.Start.String(), Coexist: p.Coexist, FreeEntropy: p.FreeEntropy, FreeStderr: p.FreeEntropyErr}
		if c.at != nil {
			res.Rows[i].Start = "at"
		}
		if p.Coexist && p.Other != nil {
			u, i := p, *p.Other
			if p.Start == smise.Informed {
				u, i = i, u
			}
			res.Coexisting = append(res.Coexisting, SMICoexisting{Alpha: p.Alpha, QUninformed: u.Q, QInformed: i.Q,
				PhiUninformed: u.FreeEntropy, PhiInformed: i.FreeEntropy, PhiStderr: p.FreeEntropyErr, Optimal: p.Start.String()})
		}
		if p.NoiseLimited {
			res.NoiseLimited = append(res.NoiseLimited, p.Alpha)
		}
		for _, u := range p.Undetermined {
			m := fmt.Sprintf("alpha %g: Q_%d%d = 0, but the map's slope at the floor is %.3g +- %.2g, not below 1 by %d standard errors: "+
				"the draws cannot tell whether 0 is stable (Qerr = +Inf); more --samples, or --mc-error, settle it",
				p.Alpha, u.Layer+1, u.Layer+1, u.Slope, u.SlopeErr, smise.StabilityMargin)
			res.Undetermined = append(res.Undetermined, m)
			env.Notef("warning: %s", m)
		}
		if p.ErrorMissed {
			m := fmt.Sprintf("alpha %g: the standard error of Q (%s) is above --mc-error %g at --max-samples %d draws",
				p.Alpha, formatErrs(p.QErr), c.MCError, p.Samples)
			res.Missed = append(res.Missed, m)
			env.Notef("warning: %s", m)
		}
	}
	if c.GenSamples > 0 && len(res.Missing) == 0 {
		if err := c.genErrors(points, res.Rows, bar, env); err != nil {
			return nil, err
		}
	}
	var converged []smise.Point
	for _, p := range points {
		if p.Converged {
			converged = append(converged, p)
		} else {
			res.Failed = append(res.Failed, fmt.Sprintf("alpha %g: not converged after %d iterations", p.Alpha, p.Iterations))
		}
	}
	res.Onset = table.NaNs(c.L)
	if len(converged) > 0 {
		res.Onset = smise.Onsets(converged, 0.01)
	}
	if len(res.Missing) > 0 {
		return res, job.Interrupted(len(res.Rows), len(c.alphas), "points")
	}
	return res, nil
}

// solveCurve runs smise.SolveCurve over c.alphas and returns its points in the grid's order.
// When env's context is cancelled first it returns at once with the points finished so far
// (SolveCurve solves the alphas in increasing order, each from the one before) and the alphas
// it did not finish; the curve goes on in its goroutine, its results dropped, until the
// process exits.
func (c *SMISEConfig) solveCurve(env job.Env, opts smise.Options, bar job.Progress) ([]smise.Point, []job.Missing, error) {
	var (
		mu       sync.Mutex
		finished []smise.Point
		stopped  bool // set once solveCurve returns after a cancellation: later points are dropped
	)
	type result struct {
		points []smise.Point
		err    error
	}
	done := make(chan result, 1)
	go func() {
		points, err := smise.SolveCurve(c.ch, c.alphas, opts, func(p smise.Point) {
			mu.Lock()
			defer mu.Unlock()
			if !stopped {
				finished = append(finished, p)
				bar.Add(1)
			}
		})
		done <- result{points, err}
	}()
	select {
	case r := <-done:
		return r.points, nil, r.err
	case <-env.Ctx().Done():
	}
	mu.Lock()
	defer mu.Unlock()
	stopped = true
	at := map[float64]int{} // an alpha's place in the grid
	for i, a := range c.alphas {
		if _, ok := at[a]; !ok {
			at[a] = i
		}
	}
	points := append([]smise.Point{}, finished...)
	slices.SortFunc(points, func(a, b smise.Point) int { return cmp.Compare(at[a.Alpha], at[b.Alpha]) })
	got := map[float64]bool{}
	for _, p := range finished {
		got[p.Alpha] = true
	}
	var missing []job.Missing
	for _, a := range c.alphas {
		if !got[a] {
			missing = append(missing, job.Missing{"alpha": a})
		}
	}
	return points, missing, nil
}

// linearise runs smise.Linearise at --at for every alpha and returns, per alpha, a point whose
// Q and QErr are the linearisation's fixed point and its error (converged where I - J is
// invertible; q-hat and the free entropy NaN) and the linearisation itself.
func (c *SMISEConfig) linearise(o smise.Options, bar job.Progress) ([]smise.Point, []smise.Linearisation, error) {
	points := make([]smise.Point, len(c.alphas))
	lins := make([]smise.Linearisation, len(c.alphas))
	for i, a := range c.alphas {
		lin, err := smise.Linearise(c.ch, a, c.at, o)
		if err != nil {
			return nil, nil, err
		}
		lins[i] = lin
		ok := !slices.ContainsFunc(lin.Q, math.IsNaN)
		points[i] = smise.Point{Alpha: a, Q: lin.Q, QHat: table.NaNs(c.L), QErr: lin.QErr, Samples: lin.Samples,
			Iterations: lin.Evaluations, Converged: ok, FreeEntropy: math.NaN(), FreeEntropyErr: math.NaN()}
		bar.Add(1)
	}
	return points, lins, nil
}

// genErrors fills the plug-in e_gen, the Bayes-optimal e_BO and the last-layer-only e_gen of
// every converged row, one point after the other, each error on all the goroutines. Every point
// uses the same draws (the SE's seed), so the curves are smooth in alpha. A row whose Q leaves
// [0, 1] (an --at Newton step) keeps NaN there, with a warning on env's log.
func (c *SMISEConfig) genErrors(points []smise.Point, rows []SMISERow, bar job.Progress, env job.Env) error {
	o := smise.GenErrorOptions{Samples: c.GenSamples, Inner: c.GenInner, Seed: c.Seed, Workers: c.Workers}
	for i, p := range points {
		r := &rows[i]
		if p.Converged && !inUnit(p.Q) {
			// Only --at's Newton step can leave [0, 1]: its linear model reaches past the
			// overlaps' range, where no channel (and no e_gen) exists. The row keeps the step.
			env.Notef("warning: alpha %g: the Newton step's Q = %s leaves [0, 1], so its e_gen is not computed; the map there is G(Q0) above", p.Alpha, formatErrs(p.Q))
		} else if p.Converged {
			var err error
			if r.GenError, r.GenStderr, err = smise.GenError(c.ch, p.Q, o); err != nil {
				return err
			}
			if r.GenBO, r.BOStderr, err = smise.GenErrorBO(c.ch, p.Q, o); err != nil {
				return err
			}
			if r.GenLast, r.LastStderr, err = smise.GenError(c.ch, lastLayerOnly(p.Q), o); err != nil {
				return err
			}
		}
		bar.Add(1)
	}
	return nil
}

// inUnit reports whether every overlap of q is in [0, 1].
func inUnit(q []float64) bool {
	for _, v := range q {
		if !(v >= 0 && v <= 1) {
			return false
		}
	}
	return true
}

// diff returns a - b entrywise.
func diff(a, b []float64) []float64 {
	d := make([]float64, len(a))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return d
}

// formatErrs writes standard errors as a short list.
func formatErrs(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.3g", x)
	}
	return s
}

// lastLayerOnly returns Q with every layer but the last set to 0: the paper's "one layer"
// curve.
func lastLayerOnly(Q []float64) []float64 {
	q := make([]float64, len(Q))
	q[len(q)-1] = Q[len(Q)-1]
	return q
}

// ExecuteSMISE runs `aim smi se` as the command does: RunSMISE with the outputs opened first,
// then the CSV, the figure and the manifest written. It returns the line to
// print; unconverged points give an error after everything is written.
func ExecuteSMISE(c *SMISEConfig, env job.Env) (string, error) {
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, "", "") },
		func(e job.Env) (*SMISEResult, error) { return RunSMISE(c, e) })
	stop := err
	if err != nil && !job.Stopped(err, out) {
		return "", err
	}
	if err := SMISESchema.Write(out.CSV(), c.L, res.Rows); err != nil {
		return "", out.Abort(err)
	}
	t, err := SMISESchema.Table(c.Out, c.L, res.Rows)
	if err != nil {
		return "", out.Abort(err)
	}
	t.Th = &table.Thresholds{Stability: res.Stability, Fallback: res.Onset}
	var fig *figure.Figure
	if stop == nil || len(res.Rows) > 0 {
		if fig, err = job.DrawFigure([]*table.Table{t}, c.Figure.Options(plot.Options{})); err != nil {
			return "", out.Abort(err)
		}
	}
	params := c.params()
	c.addParams(params)
	for k, v := range map[string]any{"c": c.C, "alpha": c.Alpha, "alphas": c.alphas, "gen_samples": c.GenSamples, "gen_inner": c.GenInner,
		"replicates": c.Replicates, "mc_error": c.MCError, "max_samples": c.MaxSamples, "newton": c.Newton, "start": c.Start, "at": c.At} {
		params[k] = v
	}
	th := map[string]any{"stability": jsonFloats(res.Stability), "fisher": jsonFloats(res.Fisher), "onset": jsonFloats(res.Onset), "onset_level": 0.01}
	if c.L == 2 && c.M == 2 && c.C == 1 && c.Beta == 1 {
		th["published"] = map[string]any{"alpha_layer1": 0.793646302451566, "alpha_layer2": 0.14358446549404996,
			"note": "SPOC-group/SequenceIndexModels data/alpha_critical.csv; not reproduced by the stability formula (docs/theory/smi.md 2.3)"}
	}
	man := env.Manifest("smi se", fmt.Sprintf("cpu (theory: SMI state evolution, %d goroutines)%s", c.workers(), c.where()), params, start)
	man["thresholds"] = th
	man["points"] = len(res.Rows)
	man["unconverged"] = len(res.Failed)
	man["mc_error_missed"] = append([]string{}, res.Missed...)
	man["noise_limited"] = append([]float64{}, res.NoiseLimited...)
	man["stability_undetermined"] = append([]string{}, res.Undetermined...)
	coex := []map[string]any{}
	for _, x := range res.Coexisting {
		phi := jsonFloats([]float64{x.PhiUninformed, x.PhiInformed, x.PhiStderr})
		coex = append(coex, map[string]any{"alpha": x.Alpha, "Q_uninformed": jsonFloats(x.QUninformed), "Q_informed": jsonFloats(x.QInformed),
			"free_entropy_uninformed": phi[0], "free_entropy_informed": phi[1], "free_entropy_stderr": phi[2], "optimal": x.Optimal})
	}
	man["coexisting"] = coex
	if c.at != nil {
		at := []map[string]any{}
		for _, x := range res.At {
			at = append(at, map[string]any{"alpha": x.Alpha, "Q0": jsonFloats(x.Q0), "G": jsonFloats(x.G), "G_stderr": jsonFloats(x.GErr),
				"residual_sigmas": jsonFloats(ratios(diff(x.G, x.Q0), x.GErr)), "step_sigmas": jsonFloats(ratios(diff(x.Q, x.Q0), x.QErr)),
				"jacobian": jsonFloats(x.J), "evaluations": x.Evaluations})
		}
		man["at"] = at
	}
	if stop != nil {
		job.MarkIncomplete(man, res.Missing)
	}
	return out.Complete(fig, man, len(res.Rows), start, errors.Join(stop, res.Err()))
}
