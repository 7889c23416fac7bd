package aimjob

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/grid"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/se"
)

// ThresholdsConfig is the configuration of `aim thresholds`: the rho -> 0 weak-recovery
// threshold alpha-bar_c = 1/(2 FisherSum(0, 1)) (docs/theory/aim.md 2.3) of a channel against T.
type ThresholdsConfig struct {
	Channel    string  // hardmax or softmax
	Beta       float64 // softmax inverse temperature
	TGrid      string  // the T: a list or range (grid syntax: 2:6:5 is 2, 3, 4, 5, 6) of integers
	Out, Plot  string  // the CSV and the figure ("" for none)
	job.Figure         // the figure's size and title (--size, --title)

	ts []int
}

// NewThresholdsConfig returns the configuration of `aim thresholds` with no flag set.
func NewThresholdsConfig() *ThresholdsConfig {
	return &ThresholdsConfig{Channel: "hardmax", Beta: 1, TGrid: "2:6:5", Out: "results/thresholds.csv", Plot: "results/thresholds.png"}
}

// Validate checks the configuration and parses the T grid; every problem is bad input.
func (c *ThresholdsConfig) Validate() error {
	vs, err := grid.Parse(c.TGrid)
	if err != nil {
		return job.Inputf("--T: %v", err)
	}
	c.ts = nil
	for _, v := range vs {
		T := int(v)
		switch {
		case float64(T) != v || T < 2:
			return job.Inputf("--T %s: every T must be an integer >= 2, got %g", c.TGrid, v)
		case c.Channel == "hardmax" && T > channel.HardmaxTMax:
			return job.Inputf("--T %s: hardmax: T = %d, the largest supported is %d", c.TGrid, T, channel.HardmaxTMax)
		}
		c.ts = append(c.ts, T)
	}
	switch c.Channel {
	case "hardmax", "softmax":
	default:
		return job.Inputf("unknown channel %q (want softmax or hardmax)", c.Channel)
	}
	if !(c.Beta > 0) || math.IsInf(c.Beta, 0) {
		return job.Inputf("--beta %g: need 0 < beta < inf", c.Beta)
	}
	if err := job.CheckPlot(c.Plot); err != nil {
		return err
	}
	return job.CheckCSV(c.Out)
}

// ThresholdsRow is the threshold at one T: a row of the `aim thresholds` CSV.
type ThresholdsRow struct {
	Channel   string
	T         int
	AlphaBarC float64 // 1/(2 FisherSum(0, 1)), in N/(D R)
	Err       float64 // its error (a polytope integral: hardmax T > 2); 0 when exact
	Softmax   float64 // the softmax channel's 1/K, K = T^2 + T - 2, for scale
}

// ThresholdsSchema is the one definition of an `aim thresholds` row.
var ThresholdsSchema = &table.Schema[ThresholdsRow]{Kind: table.AIMThresholds, Columns: []table.Column[ThresholdsRow]{
	table.Word("channel", func(r *ThresholdsRow) string { return r.Channel }),
	table.Int("T", func(r *ThresholdsRow) int { return r.T }),
	table.Float("alpha_bar_c", func(r *ThresholdsRow) float64 { return r.AlphaBarC }),
	table.Float("alpha_bar_c_err", func(r *ThresholdsRow) float64 { return r.Err }),
	table.Float("alpha_bar_c_softmax", func(r *ThresholdsRow) float64 { return r.Softmax }),
}}

// hardmaxAlphaBarC returns alpha-bar_c of hardmax at T and its error: at T = 2 in closed form
// (aim.Hardmax), at T > 2 by the sum over the output patterns (aim.HardmaxT.FisherSumZero)
// with 16 384 lattice points per shift (4096 at T = 6, where there are 130 classes).
func hardmaxAlphaBarC(T int) (v, e float64, err error) {
	if T == 2 {
		h, err := aim.NewHardmax(2, false)
		if err != nil {
			return math.NaN(), math.NaN(), err
		}
		v, err := se.AlphaBarC(h)
		return v, 0, err
	}
	h, err := aim.NewHardmaxT(T)
	if err != nil {
		return math.NaN(), math.NaN(), job.InputError{Err: err}
	}
	h.Tol, h.Points = 0, 16384
	if T == channel.HardmaxTMax {
		h.Points = 4096
	}
	f, err := h.FisherSumZero(1)
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	return 1 / (2 * f.V), f.Err / (2 * f.V * f.V), nil
}

// RunThresholds computes the threshold at every T of a validated configuration.
func RunThresholds(c *ThresholdsConfig, env job.Env) ([]ThresholdsRow, error) {
	if err := env.Begin(); err != nil {
		return nil, err
	}
	bar := env.Meter(len(c.ts), "thresholds "+c.Channel)
	defer bar.Finish()
	var rows []ThresholdsRow
	for _, T := range c.ts {
		sm, err := aim.NewSoftmax(T, c.Beta)
		if err != nil {
			return nil, job.InputError{Err: err}
		}
		row := ThresholdsRow{Channel: c.Channel, T: T}
		if row.Softmax, err = se.AlphaBarC(sm); err != nil {
			return nil, err
		}
		if c.Channel == "softmax" {
			row.AlphaBarC = row.Softmax
		} else if row.AlphaBarC, row.Err, err = hardmaxAlphaBarC(T); err != nil {
			return nil, fmt.Errorf("T = %d: %w", T, err)
		}
		rows = append(rows, row)
		bar.Add(1)
	}
	return rows, nil
}

// ExecuteThresholds runs `aim thresholds` as the command does: RunThresholds with the outputs
// opened first, then the CSV, the figure and the manifest written.
func ExecuteThresholds(c *ThresholdsConfig, env job.Env) ([]ThresholdsRow, string, error) {
	rows, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, "", "") },
		func(e job.Env) ([]ThresholdsRow, error) { return RunThresholds(c, e) })
	if err != nil {
		return nil, "", err
	}
	if err := ThresholdsSchema.Write(out.CSV(), 0, rows); err != nil {
		return nil, "", out.Abort(err)
	}
	t, err := ThresholdsSchema.Table(c.Out, 0, rows)
	if err != nil {
		return nil, "", out.Abort(err)
	}
	fig, err := job.DrawFigure([]*table.Table{t}, c.Figure.Options(plot.Options{}))
	if err != nil {
		return nil, "", out.Abort(err)
	}
	params := map[string]any{"channel": c.Channel, "T": c.ts}
	if c.Channel == "softmax" {
		params["beta"] = c.Beta
	}
	man := env.Manifest("thresholds", "cpu (theory: the channel's FisherSum at q = 0)", params, start)
	summary, err := out.Complete(fig, man, len(rows), start, nil)
	return rows, summary, err
}
