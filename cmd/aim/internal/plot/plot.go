// Package plot draws the figures of every command from tables (package table). A run command
// builds its figure from the table of the rows it writes to its CSV; `aim plot` builds the
// same figure from the same CSV read back, so the two are drawn by the same code from the same
// numbers.
package plot

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// Options are the choices `aim plot` offers over a figure; the zero value ("auto"
// everywhere) is the run command's own figure.
type Options struct {
	X     string // "", "auto", "alpha", "alpha-bar" or "alpha-rho"
	Axes  string // "", "auto", "lin", "logx", "logy" or "loglog"
	Title string // the title; "" for the automatic one unless TitleSet
	// TitleSet makes Title the figure's title even when it is empty (no title).
	TitleSet bool
	Size     figure.Size // the figure's size; zero: the default
}

func (o Options) xMode(auto string) string {
	if o.X == "" || o.X == "auto" {
		return auto
	}
	return o.X
}

// applyAxes sets the log axes: the layout's own choice under "auto".
func (o Options) applyAxes(f *figure.Figure, logx, logy bool) {
	switch o.Axes {
	case "lin":
		logx, logy = false, false
	case "logx":
		logx, logy = true, false
	case "logy":
		logx, logy = false, true
	case "loglog":
		logx, logy = true, true
	}
	f.LogX, f.LogY = logx, logy
}

// Build draws tables on one figure. The layout follows the kinds: GD points (with the SE
// lines and AMP points beside them), else AMP points (with the SE lines, and the ERM lines
// beside GAMP for ERM), else SE lines with their thresholds; ERM lines (with GD points); the
// SMI kinds likewise; a trace, an ERM spectrum or a thresholds-against-c CSV alone. An
// impossible combination is an error (bad input).
func Build(tables []*table.Table, o Options) (*figure.Figure, error) {
	if len(tables) == 0 {
		return nil, fmt.Errorf("no CSV to plot")
	}
	by := map[table.Kind][]*table.Table{}
	aim, smi := 0, 0
	for _, t := range tables {
		by[t.Kind] = append(by[t.Kind], t)
		switch t.Kind {
		case table.SE, table.AMP, table.GD:
			aim++
		case table.SMISE, table.SMIAMP:
			smi++
		}
	}
	alone := func(t *table.Table) error {
		if len(tables) > 1 {
			return fmt.Errorf("%s is an %s CSV, which is plotted alone (got %d files)", t.Path, t.Kind, len(tables))
		}
		if o.X != "" && o.X != "auto" {
			return fmt.Errorf("--x %s: the x axis of an %s CSV is fixed", o.X, t.Kind)
		}
		return nil
	}
	var f *figure.Figure
	switch {
	case len(by[table.Bench]) > 0:
		for _, t := range tables {
			if err := alone(t); err != nil {
				return nil, err
			}
		}
		f = benchFigure(tables[0], o)
	case len(by[table.AIMThresholds]) > 0:
		for _, t := range tables {
			if err := alone(t); err != nil {
				return nil, err
			}
		}
		f = aimThresholdsFigure(tables[0], o)
	case len(by[table.AMPTrace])+len(by[table.GDTrace])+len(by[table.SMIAMPTrace])+len(by[table.SMISGD]) > 0:
		for _, t := range tables {
			if err := alone(t); err != nil {
				return nil, err
			}
		}
		t := tables[0]
		switch t.Kind {
		case table.AMPTrace:
			f = ampTraceFigure(t, o)
		case table.GDTrace:
			f = gdTraceFigure(t, o)
		case table.SMIAMPTrace:
			f = smiAMPTraceFigure(t, o)
		default:
			f = smiSGDFigure(t, o)
		}
	case len(by[table.ERMSpectrum]) > 0:
		t := by[table.ERMSpectrum][0]
		if err := alone(t); err != nil {
			return nil, err
		}
		f = ERMSpectrumFigure(t, nil, o)
	case len(by[table.ERM]) > 0 && len(by[table.AMP]) == 0:
		for _, t := range tables {
			if t.Kind != table.ERM && t.Kind != table.GD {
				return nil, fmt.Errorf("%s is an %s CSV: an aim erm CSV is plotted alone or with aim gd CSVs", t.Path, t.Kind)
			}
		}
		if o.X != "" && o.X != "auto" && o.X != "alpha" {
			return nil, fmt.Errorf("--x %s: an aim erm CSV is drawn against alpha = N/D^2", o.X)
		}
		f = ermFigure(by[table.ERM], by[table.GD], o)
	case aim > 0 && (smi > 0 || len(by[table.SMIThresholds]) > 0):
		return nil, fmt.Errorf("aim se/amp/gd CSVs and aim smi CSVs cannot share a figure (different models)")
	case aim > 0:
		if o.X != "" && o.X != "auto" && o.X != "alpha" && o.X != "alpha-bar" && o.X != "alpha-rho" {
			return nil, fmt.Errorf("--x %q: want alpha, alpha-bar or alpha-rho", o.X)
		}
		for _, t := range tables {
			if t.Kind == table.ERM && len(by[table.GD]) > 0 {
				return nil, fmt.Errorf("%s is an aim erm CSV: it is plotted with aim gd CSVs or with aim amp CSVs, not with both", t.Path)
			}
		}
		switch {
		case len(by[table.GD]) > 0:
			f = gdFigure(by[table.GD], by[table.SE], by[table.AMP], o)
		case len(by[table.AMP]) > 0:
			f = ampFigure(by[table.AMP], by[table.SE], by[table.ERM], o)
		default:
			f = seFigure(by[table.SE], o)
		}
	default: // SMI
		if o.X != "" && o.X != "auto" && o.X != "alpha" {
			return nil, fmt.Errorf("--x %s: aim smi CSVs are drawn against alpha = N/D (or c, for thresholds)", o.X)
		}
		ths := by[table.SMIThresholds]
		switch {
		case len(ths) > 1:
			return nil, fmt.Errorf("one aim smi thresholds CSV at a time (got %d)", len(ths))
		case len(ths) == 1 && len(by[table.SMIAMP]) > 0:
			return nil, fmt.Errorf("%s: an aim smi thresholds CSV draws alone or with an aim smi se CSV", ths[0].Path)
		case len(ths) == 1 && len(by[table.SMISE]) == 0:
			if o.X == "alpha" {
				return nil, fmt.Errorf("--x alpha: an aim smi thresholds CSV is drawn against c")
			}
			f = smiThresholdsFigure(ths[0], o)
		case len(by[table.SMIAMP]) > 0:
			var err error
			if f, err = smiAMPFigure(by[table.SMIAMP], by[table.SMISE], o); err != nil {
				return nil, err
			}
		default:
			var th *table.Table
			if len(ths) == 1 {
				th = ths[0]
			}
			var err error
			if f, err = smiSEFigure(by[table.SMISE], th, o); err != nil {
				return nil, err
			}
		}
	}
	if o.Title != "" || o.TitleSet {
		f.Title = o.Title
	}
	f.Size = o.Size
	return f, nil
}

// meanStderr returns the mean and the standard error sd/sqrt(n) of xs (gonum's stat; 0 for a
// single value).
func meanStderr(xs []float64) (float64, float64) {
	if len(xs) < 2 {
		return stat.Mean(xs, nil), 0
	}
	m, sd := stat.MeanStdDev(xs, nil)
	return m, stat.StdErr(sd, float64(len(xs)))
}

// legendRoom returns the top of a y axis whose data reach top, so that a legend of n entries
// in the upper right corner (figure's placement) stays clear of the data.
func legendRoom(top float64, n int) float64 {
	frac := math.Min(0.6, (11*float64(n)+8)/240) // 9-point entries on a ~240-point-high data area
	return math.Max(1.05*top, top/(1-frac))
}
