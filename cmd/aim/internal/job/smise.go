package job

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/smi"
	smise "github.com/aimtheory/aim/engine/smi/se"
	"github.com/aimtheory/aim/internal/par"
)

// SMISEConfig is the configuration of `aim smi se`: the SMI state evolution against alpha,
// each point continued from the previous one, with the generalisation errors and thresholds.
type SMISEConfig struct {
	SMI
	Alpha      string // the alpha grid
	GenSamples int    // Monte Carlo samples of e_gen per point (the same draws at every point); 0 skips it
	SMISEOptions

	alphas []float64
	ch     *smi.Deep
}

// NewSMISEConfig returns the configuration of `aim smi se` with no flag set.
func NewSMISEConfig() *SMISEConfig {
	return &SMISEConfig{SMI: defaultSMI("se"), Alpha: "0.05:1.6:32", GenSamples: 100000, SMISEOptions: defaultSMISEOptions()}
}

// Validate checks the configuration and parses its grid; every problem is bad input.
func (c *SMISEConfig) Validate() error {
	var err error
	if c.ch, c.alphas, err = c.theory(c.Alpha); err != nil {
		return err
	}
	if err := c.SMISEOptions.check(); err != nil {
		return err
	}
	if c.GenSamples < 0 || c.GenSamples == 1 {
		return Inputf("--gen-samples %d: need 0 (skip) or at least 2", c.GenSamples)
	}
	return nil
}

// SMISERow is one alpha of the SMI state evolution: a row of the `aim smi se` CSV.
type SMISERow struct {
	L, M                int
	C, Beta, Alpha      float64
	Q, QHat             []float64 // per layer; NaN where the point did not converge
	GenError, GenStderr float64   // e_gen(Q) and its standard error; NaN when skipped
	GenLast, LastStderr float64   // e_gen with every layer but the last at Q = 0
	Iterations          int
	Converged           bool
	Inexact             int // channel integrals that stopped at their budget, last iteration
}

// SMISESchema is the one definition of an `aim smi se` row.
var SMISESchema = &table.Schema[SMISERow]{Kind: table.SMISE, Columns: []table.Column[SMISERow]{
	table.Int("L", func(r *SMISERow) int { return r.L }),
	table.Int("M", func(r *SMISERow) int { return r.M }),
	table.Float("c", func(r *SMISERow) float64 { return r.C }),
	table.Float("beta", func(r *SMISERow) float64 { return r.Beta }),
	table.Float("alpha", func(r *SMISERow) float64 { return r.Alpha }),
	table.Layers("Q", true, 0, func(r *SMISERow) []float64 { return r.Q }),
	table.Layers("qhat", true, 0, func(r *SMISERow) []float64 { return r.QHat }),
	table.Float("gen_error", func(r *SMISERow) float64 { return r.GenError }),
	table.Float("gen_error_stderr", func(r *SMISERow) float64 { return r.GenStderr }),
	table.Float("gen_error_last_layer", func(r *SMISERow) float64 { return r.GenLast }),
	table.Float("gen_error_last_layer_stderr", func(r *SMISERow) float64 { return r.LastStderr }),
	table.Int("iterations", func(r *SMISERow) int { return r.Iterations }),
	table.Bool("converged", func(r *SMISERow) bool { return r.Converged }),
	table.Int("inexact", func(r *SMISERow) int { return r.Inexact }),
}}

// SMISEResult is what RunSMISE computed.
type SMISEResult struct {
	Rows      []SMISERow // in the order of the alpha grid
	Fisher    []float64  // F_l at Q = 0
	Stability []float64  // alpha_l = 1/F_l
	Onset     []float64  // where each Q_ll turns on along the curve (NaN: nowhere)
	Failed    []string   // the points that did not converge
}

// Err is the error of the result when points did not converge (their rows written without
// values).
func (r *SMISEResult) Err() error { return Failures(r.Failed, len(r.Rows), "points did not converge") }

// RunSMISE solves the curve of a validated configuration.
func RunSMISE(c *SMISEConfig, env Env) (*SMISEResult, error) {
	if err := env.begin(); err != nil {
		return nil, err
	}
	opts := c.engine(c.L, c.Workers)
	total := 1 + len(c.alphas)
	if c.GenSamples > 0 {
		total += len(c.alphas)
	}
	bar := env.progress(total, "smi se")
	defer bar.Finish()
	F, err := smise.Stability(c.ch, make([]float64, c.L), opts)
	if err != nil {
		return nil, err
	}
	bar.Add(1)
	points, err := smise.SolveCurve(c.ch, c.alphas, opts, func(smise.Point) { bar.Add(1) })
	if err != nil {
		return nil, err
	}
	res := &SMISEResult{Fisher: F, Stability: stabilityAlphas(F), Rows: make([]SMISERow, len(points))}
	for i, p := range points {
		q, qh := table.NaNs(c.L), table.NaNs(c.L)
		if p.Converged {
			q, qh = p.Q, p.QHat
		}
		res.Rows[i] = SMISERow{L: c.L, M: c.M, C: c.C, Beta: c.Beta, Alpha: p.Alpha, Q: q, QHat: qh, GenError: math.NaN(), GenStderr: math.NaN(),
			GenLast: math.NaN(), LastStderr: math.NaN(), Iterations: p.Iterations, Converged: p.Converged, Inexact: p.Inexact}
	}
	if c.GenSamples > 0 {
		if err := c.genErrors(points, res.Rows, bar); err != nil {
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
	return res, nil
}

// genErrors fills e_gen and the last-layer-only e_gen of every converged row, the rows in
// parallel. Every point uses the same draws (the SE's seed), so the curves are smooth in alpha.
func (c *SMISEConfig) genErrors(points []smise.Point, rows []SMISERow, bar Progress) error {
	// One copy of the channel per goroutine, so that no goroutine shares channel state.
	return par.For(c.workers(), len(rows), func() (*smi.Deep, error) {
		ch := *c.ch
		return &ch, nil
	}, func(ch *smi.Deep, i int) error {
		defer bar.Add(1)
		p, r := points[i], &rows[i]
		if !p.Converged {
			return nil
		}
		var err error
		r.GenError, r.GenStderr, err = smise.GenError(ch, p.Q, c.GenSamples, c.Seed)
		if err == nil {
			r.GenLast, r.LastStderr, err = smise.GenError(ch, lastLayerOnly(p.Q), c.GenSamples, c.Seed)
		}
		return err
	})
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
func ExecuteSMISE(c *SMISEConfig, env Env) (string, error) {
	res, out, start, err := execute(env, func() (*outputs, error) { return openOutputs(c.Out, c.Plot, "", "") },
		func(e Env) (*SMISEResult, error) { return RunSMISE(c, e) })
	if err != nil {
		return "", err
	}
	if err := SMISESchema.Write(out.res.csv.File(), c.L, res.Rows); err != nil {
		return "", out.abort(err)
	}
	t, err := SMISESchema.Table(c.Out, c.L, res.Rows)
	if err != nil {
		return "", out.abort(err)
	}
	t.Th = &table.Thresholds{Stability: res.Stability, Fallback: res.Onset}
	fig, err := drawFigure([]*table.Table{t}, plot.Options{Size: c.Size})
	if err != nil {
		return "", out.abort(err)
	}
	params := c.params()
	c.addParams(params)
	for k, v := range map[string]any{"c": c.C, "alpha": c.Alpha, "alphas": c.alphas, "gen_samples": c.GenSamples} {
		params[k] = v
	}
	th := map[string]any{"stability": jsonFloats(res.Stability), "fisher": jsonFloats(res.Fisher), "onset": jsonFloats(res.Onset), "onset_level": 0.01}
	if c.L == 2 && c.M == 2 && c.C == 1 && c.Beta == 1 {
		th["published"] = map[string]any{"alpha_layer1": 0.793646302451566, "alpha_layer2": 0.14358446549404996,
			"note": "SPOC-group/SequenceIndexModels data/alpha_critical.csv; not reproduced by the stability formula (docs/SMI.md 2.3)"}
	}
	man := env.manifest("smi se", fmt.Sprintf("cpu (theory: SMI state evolution, %d goroutines)", c.workers()), params, start)
	man["thresholds"] = th
	man["points"] = len(res.Rows)
	man["unconverged"] = len(res.Failed)
	return out.complete(fig, man, len(res.Rows), start, res.Err())
}
