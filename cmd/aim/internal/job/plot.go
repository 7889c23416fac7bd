package job

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/output"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// FigureSize is the size of a job's figure (--size): figure.Size, named here so that each
// job's configuration holds it beside its Plot path.
type FigureSize = figure.Size

// PlotConfig is the configuration of `aim plot`: a figure from saved CSVs.
type PlotConfig struct {
	Files []string // the CSVs, at least one
	Out   string   // the figure, .png, .svg or .pdf; "": <first CSV>-plot.png beside the first CSV
	plot.Options
}

// Validate checks the configuration and sets the default output; every problem is bad input.
func (c *PlotConfig) Validate() error {
	if len(c.Files) == 0 {
		return Inputf("no CSV given")
	}
	switch c.X {
	case "auto", "alpha", "alpha-bar", "alpha-rho":
	default:
		return Inputf("--x %q: want alpha, alpha-bar, alpha-rho or auto", c.X)
	}
	switch c.Axes {
	case "auto", "lin", "logx", "logy", "loglog":
	default:
		return Inputf("--axes %q: want auto, lin, logx, logy or loglog", c.Axes)
	}
	if c.Out == "" {
		c.Out = strings.TrimSuffix(c.Files[0], filepath.Ext(c.Files[0])) + "-plot.png"
	}
	return checkPlot(c.Out)
}

// ExecutePlot reads the CSVs (with the manifests beside them), lays them out on one figure as
// their commands would, and writes it; it returns the line to print.
func ExecutePlot(c *PlotConfig) (string, error) {
	format, err := figure.Format(c.Out)
	if err != nil {
		return "", InputError{err}
	}
	var tables []*table.Table
	for _, path := range c.Files {
		t, err := ReadTable(path)
		if errors.Is(err, fs.ErrNotExist) {
			return "", Inputf("%s: no such file", path)
		}
		if err != nil {
			return "", InputError{err}
		}
		tables = append(tables, t)
	}
	for _, path := range c.Files {
		if filepath.Clean(path) == filepath.Clean(c.Out) {
			return "", Inputf("--out %s would overwrite an input", c.Out)
		}
	}
	f, err := drawFigure(tables, c.Options)
	if err != nil {
		return "", err
	}
	p, err := output.Create(c.Out)
	if err != nil {
		return "", InputError{err}
	}
	if err := f.Render(p.File(), format); err != nil {
		p.Abort()
		return "", err
	}
	if err := p.Commit(); err != nil {
		return "", err
	}
	return "wrote " + c.Out, nil
}
