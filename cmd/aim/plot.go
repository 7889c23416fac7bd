package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/output"
)

const plotUsage = `Usage: aim plot [flags] file.csv [file.csv ...]

Draws a figure from CSVs written by the run commands, with the same code the run commands
draw their own plots with: aim se CSVs as lines (one per rho; the thresholds of the JSON
manifest beside the CSV as vertical lines), aim amp and aim gd runs as the mean over seeds
per alpha with its standard error, aim smi se, amp, sgd and thresholds CSVs as their
commands draw them, and the --trace CSVs of aim amp, aim gd and aim smi amp. Several files
overlay on one figure: SE lines beside AMP points, AMP points beside GD, an aim smi
thresholds CSV's thresholds on an aim smi se figure. The kind of each CSV is read from its
header.

  aim plot results/demo/se_softmax.csv results/demo/amp_softmax.csv --out amp.svg
  aim plot --x alpha-bar --axes logx --out se.png se_T2.csv se_T3.csv

Flags:
`

func runPlot(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("aim plot", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var o plotOptions
	var out string
	flags.StringVar(&out, "out", "", "the figure, .png or .svg (default: <first CSV>-plot.png beside the first CSV)")
	flags.StringVar(&o.x, "x", "auto", "x axis for aim se/amp/gd CSVs: alpha (N/D^2), alpha-bar (alpha (T^2 + T - 2)) or alpha-rho (alpha/rho = N/(D R)); auto: the run command's")
	flags.StringVar(&o.axes, "axes", "auto", "axes: auto (the run command's), lin, logx, logy or loglog")
	flags.StringVar(&o.title, "title", "", "the title (default: the run command's)")
	flags.Usage = func() {
		fmt.Fprint(stderr, plotUsage)
		flags.PrintDefaults()
	}
	files, err := parseWithFiles(flags, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		flags.Usage()
		return usagef("no CSV given")
	}
	switch o.x {
	case "auto", "alpha", "alpha-bar", "alpha-rho":
	default:
		return usagef("--x %q: want alpha, alpha-bar, alpha-rho or auto", o.x)
	}
	switch o.axes {
	case "auto", "lin", "logx", "logy", "loglog":
	default:
		return usagef("--axes %q: want auto, lin, logx, logy or loglog", o.axes)
	}
	if out == "" {
		out = strings.TrimSuffix(files[0], filepath.Ext(files[0])) + "-plot.png"
	}
	format, err := figure.Format(out)
	if err != nil {
		return usageError{err}
	}
	var tables []*csvTable
	for _, path := range files {
		t, err := readTableFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return usagef("%s: no such file", path)
		}
		if err != nil {
			return usageError{err}
		}
		tables = append(tables, t)
	}
	for _, path := range files {
		if filepath.Clean(path) == filepath.Clean(out) {
			return usagef("--out %s would overwrite an input", out)
		}
	}
	f, err := buildFigure(tables, o)
	if err != nil {
		return err
	}
	p, err := output.Create(out)
	if err != nil {
		return usageError{err}
	}
	if err := f.Render(p.File(), format); err != nil {
		p.Abort()
		return err
	}
	if err := p.Commit(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "wrote", out)
	return nil
}
