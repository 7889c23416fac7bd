package smijob

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/grid"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/smi"
	smise "github.com/aimtheory/aim/engine/smi/se"
)

// SMIThresholdsConfig is the configuration of `aim smi thresholds`: per skip strength c, the
// stability threshold of every layer and the conditional threshold of each earlier layer.
type SMIThresholdsConfig struct {
	SMI
	CGrid string  // the skip strengths c >= 0: a list or range (SMI.C is not used)
	Hi    float64 // upper end of the alpha search for the conditional thresholds
	SMISEOptions

	cs  []float64
	chs []*smi.Deep
}

// thresholdsRelTol is the relative tolerance of the conditional thresholds' root search.
const thresholdsRelTol = 1e-3

// NewSMIThresholdsConfig returns the configuration of `aim smi thresholds` with no flag set.
func NewSMIThresholdsConfig() *SMIThresholdsConfig {
	return &SMIThresholdsConfig{SMI: defaultSMI("thresholds"), CGrid: "1", Hi: 3, SMISEOptions: defaultSMISEOptions()}
}

// Validate checks the configuration and parses the c grid; every problem is bad input.
func (c *SMIThresholdsConfig) Validate() error {
	cs, err := grid.Parse(c.CGrid)
	if err != nil {
		return job.Inputf("--c: %v", err)
	}
	c.cs, c.chs = cs, nil
	for _, v := range cs {
		ch, err := c.channel(v, true)
		if err != nil {
			return err
		}
		c.chs = append(c.chs, ch)
	}
	if err := c.SMI.check(); err != nil {
		return err
	}
	if err := c.SMISEOptions.check(c.L); err != nil {
		return err
	}
	if !(c.Hi > 0) || math.IsInf(c.Hi, 0) {
		return job.Inputf("--hi %g: need a positive, finite alpha", c.Hi)
	}
	return nil
}

// SMIThresholdsRow is the thresholds of one c: a row of the `aim smi thresholds` CSV.
type SMIThresholdsRow struct {
	L, M        int
	Beta, C     float64
	Fisher      []float64 // F_l at Q = 0 (the manifest's)
	Stability   []float64 // alpha_l = 1/F_l, per layer
	Conditional []float64 // per earlier layer: with the later layers at their fixed point; NaN: not found
}

// SMIThresholdsSchema is the one definition of an `aim smi thresholds` row.
var SMIThresholdsSchema = &table.Schema[SMIThresholdsRow]{Kind: table.SMIThresholds, Columns: []table.Column[SMIThresholdsRow]{
	table.Int("L", func(r *SMIThresholdsRow) int { return r.L }),
	table.Int("M", func(r *SMIThresholdsRow) int { return r.M }),
	table.Float("beta", func(r *SMIThresholdsRow) float64 { return r.Beta }),
	table.Float("c", func(r *SMIThresholdsRow) float64 { return r.C }),
	table.Layers("alpha_stability_", false, 0, func(r *SMIThresholdsRow) []float64 { return r.Stability }),
	table.Layers("alpha_conditional_", false, 1, func(r *SMIThresholdsRow) []float64 { return r.Conditional }),
}}

// SMIThresholdsResult is what RunSMIThresholds computed.
type SMIThresholdsResult struct {
	Rows  []SMIThresholdsRow // in the order of the c grid
	Notes []string           // conditional thresholds not searched or not bracketed (written empty)
	// Failed are the conditional thresholds whose restricted SE did not converge (written
	// empty): the command exits with status 1 after writing every row.
	Failed []string
}

// RunSMIThresholds computes the thresholds of every c of a validated configuration.
func RunSMIThresholds(c *SMIThresholdsConfig, env job.Env) (*SMIThresholdsResult, error) {
	if err := env.Begin(); err != nil {
		return nil, err
	}
	L := c.L
	opts := c.engine(L, c.Workers)
	dev, err := c.open(c.Workers)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	opts.Device = engineDevice(dev)
	bar := env.Meter(len(c.cs)*L, "smi thresholds")
	defer bar.Finish()
	res := &SMIThresholdsResult{Rows: make([]SMIThresholdsRow, len(c.cs))}
	for i, ch := range c.chs {
		F, err := smise.Stability(ch, make([]float64, L), opts)
		if err != nil {
			return nil, fmt.Errorf("c = %g: %w", c.cs[i], err)
		}
		bar.Add(1)
		row := SMIThresholdsRow{L: L, M: c.M, Beta: c.Beta, C: c.cs[i], Fisher: F, Stability: stabilityAlphas(F), Conditional: table.NaNs(L - 1)}
		lo := 1.2 * row.Stability[L-1]
		for l := 0; l < L-1; l++ {
			if !(lo < c.Hi) {
				res.Notes = append(res.Notes, fmt.Sprintf("c = %g: conditional threshold of layer %d not searched: 1.2 alpha_%d = %g is not below --hi %g", c.cs[i], l+1, L, lo, c.Hi))
				bar.Add(1)
				continue
			}
			a, err := smise.ConditionalThreshold(ch, l, lo, c.Hi, thresholdsRelTol, opts)
			switch {
			case err == nil:
				row.Conditional[l] = a
			case errors.Is(err, smise.ErrNotBracketed):
				res.Notes = append(res.Notes, fmt.Sprintf("c = %g: %v: written empty", c.cs[i], err))
			case errors.Is(err, smise.ErrNotConverged):
				res.Failed = append(res.Failed, fmt.Sprintf("c = %g: %v", c.cs[i], err))
			default:
				return nil, fmt.Errorf("c = %g: %w", c.cs[i], err)
			}
			bar.Add(1)
		}
		res.Rows[i] = row
	}
	return res, nil
}

// ExecuteSMIThresholds runs `aim smi thresholds` as the command does: RunSMIThresholds with
// the outputs opened first, then the CSV, the figure and the manifest written. It
// returns the result (for the table the command prints and its notes) and the line to print.
func ExecuteSMIThresholds(c *SMIThresholdsConfig, env job.Env) (*SMIThresholdsResult, string, error) {
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, "", "") },
		func(e job.Env) (*SMIThresholdsResult, error) { return RunSMIThresholds(c, e) })
	if err != nil {
		return nil, "", err
	}
	if err := SMIThresholdsSchema.Write(out.CSV(), c.L, res.Rows); err != nil {
		return nil, "", out.Abort(err)
	}
	t, err := SMIThresholdsSchema.Table(c.Out, c.L, res.Rows)
	if err != nil {
		return nil, "", out.Abort(err)
	}
	fig, err := job.DrawFigure([]*table.Table{t}, c.Figure.Options(plot.Options{}))
	if err != nil {
		return nil, "", out.Abort(err)
	}
	params := c.params()
	c.addParams(params)
	params["c"] = c.cs
	params["hi"] = c.Hi
	params["rel_tol"] = thresholdsRelTol
	man := env.Manifest("smi thresholds", fmt.Sprintf("cpu (theory: SMI state evolution, %d goroutines)%s", c.workers(), c.where()), params, start)
	var list []map[string]any
	for _, r := range res.Rows {
		list = append(list, map[string]any{"c": r.C, "fisher": jsonFloats(r.Fisher), "stability": jsonFloats(r.Stability), "conditional": jsonFloats(r.Conditional)})
	}
	man["thresholds"] = list
	man["notes"] = res.Notes
	man["failed"] = res.Failed
	var failed error
	if len(res.Failed) > 0 {
		failed = fmt.Errorf("%d conditional thresholds did not converge (written empty; raise --max-iter):\n  %s",
			len(res.Failed), strings.Join(res.Failed, "\n  "))
	}
	summary, err := out.Complete(fig, man, len(res.Rows), start, failed)
	return res, summary, err
}
