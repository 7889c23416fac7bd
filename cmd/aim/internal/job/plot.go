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

// FigureSize is the size of a job's figure (--size): figure.Size, named here for Figure.
type FigureSize = figure.Size

// Figure is the figure options every command that draws a figure takes: --size and --title.
type Figure struct {
	Size  FigureSize // the figure's size (--size); zero: the default
	Title string     // the figure's title (--title); "" for the automatic one unless TitleSet
	// TitleSet makes Title the figure's title even when it is empty (--title "": no title).
	TitleSet bool
}

// Options returns o with the figure's size and title.
func (f Figure) Options(o plot.Options) plot.Options {
	o.Size, o.Title, o.TitleSet = f.Size, f.Title, f.TitleSet
	return o
}

// PlotConfig is the configuration of `aim plot`: a figure from saved CSVs.
type PlotConfig struct {
	Files []string // the CSVs, at least one
	Out   string   // the figure, .png, .svg or .pdf; "": <first CSV>-plot.png beside the first CSV
	X     string   // the x axis of aim se/amp/gd CSVs: auto, alpha, alpha-bar or alpha-rho
	Axes  string   // auto, lin, logx, logy or loglog
	Figure
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
	return CheckPlot(c.Out)
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
	f, err := DrawFigure(tables, c.Figure.Options(plot.Options{X: c.X, Axes: c.Axes}))
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
