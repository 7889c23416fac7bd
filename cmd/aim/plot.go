package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

const plotUsage = `Usage: aim plot [flags] file.csv [file.csv ...]

Draws a figure from CSVs written by the run commands, with the same code the run commands
draw their own plots with: aim se CSVs as lines (one per rho; the thresholds of the JSON
manifest beside the CSV as vertical lines), aim amp and aim gd runs as the mean over seeds
per alpha with its standard error, aim erm CSVs as lines (the thresholds of their manifest
beside the nuclear lambda = 0 line), aim smi se, amp, sgd and thresholds CSVs as their
commands draw them, and the --trace CSVs of aim amp, aim gd and aim smi amp. Several files
overlay on one figure: SE lines beside AMP points, AMP points beside GD, ERM lines beside GD
points or beside the points of aim amp --weight-decay, an aim smi thresholds CSV's thresholds
on an aim smi se figure. The kind of each CSV is read from its header.

Runs of aim amp, aim gd and aim smi amp that differ in anything but rho, alpha and the seed
(D, the precision, the channel, T, beta, the noise, the teacher, GD's schedule; the SMI's M, c
and beta) are drawn apart, each named in the legend by what differs and set beside the theory
line of its own model (aim gd runs beside aim erm lines too); the seeds of one setting run
into several files are averaged together.

  aim plot results/demo/se_softmax.csv results/demo/amp_softmax.csv --out amp.svg
  aim plot --x alpha-bar --axes logx --out se.png se_T2.csv se_T3.csv
  aim plot --out finite_size.png se.csv amp_D100.csv amp_D200.csv amp_D400.csv

Flags:
`

// newPlotFlags returns the flag set of `aim plot` (docs/cli/plot.md is made from it) and the
// configuration that parsing it fills (but the files).
func newPlotFlags(stderr io.Writer) (*flag.FlagSet, *job.PlotConfig) {
	fs := newFlags("aim plot", plotUsage, stderr)
	var c job.PlotConfig
	fs.StringVar(&c.Out, "out", "", "the figure, .png, .svg or .pdf (default: <first CSV>-plot.png beside the first CSV)")
	fs.StringVar(&c.X, "x", "auto", "x axis for aim se/amp/gd CSVs: alpha (N/D^2), alpha-bar (alpha (T^2 + T - 2)) or alpha-rho (alpha/rho = N/(D R)); auto: the run command's")
	fs.StringVar(&c.Axes, "axes", "auto", "axes: auto (the run command's), lin, logx, logy or loglog")
	figureFlags(fs, &c.Figure)
	return fs, &c
}

func runPlot(args []string, stdout, stderr io.Writer) error {
	fs, c := newPlotFlags(stderr)
	var err error
	if c.Files, err = parseWithFiles(fs, args); err != nil {
		return err
	}
	if len(c.Files) == 0 {
		printHelp(fs)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	summary, err := job.ExecutePlot(c)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, summary)
	return nil
}
