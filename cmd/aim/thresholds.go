package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
)

const thresholdsUsage = `Usage: aim thresholds [flags]

The rho -> 0 weak-recovery threshold alpha-bar_c = 1/(2 FisherSum(0, 1)) in N/(D R)
(docs/theory/aim.md 2.3) against the sequence length T, with its error, beside the softmax channel's
1/K for scale. Hardmax: T = 2 in closed form, T = 3 to 6 by Gaussian polytope integrals over
the output patterns (about 30 s for T = 2 to 6 on two cores). Writes a CSV, its manifest and a
figure.

  aim thresholds --channel hardmax --T 2:6:5 --out results/thresholds.csv --plot results/thresholds.png

Flags:
`

// thresholdsFlags registers the flags of `aim thresholds` into c.
func thresholdsFlags(fs *flag.FlagSet, c *aimjob.ThresholdsConfig, pm *progressMode) {
	fs.StringVar(&c.Channel, "channel", c.Channel, "output channel: hardmax or softmax")
	gridVar(fs, &c.TGrid, "T", "tokens per sequence, integers: a list (2,3,4) or a range lo:hi:n (2:6:5 is 2 to 6)")
	fs.Float64Var(&c.Beta, "beta", c.Beta, "softmax inverse temperature")
	outputFlags(fs, &c.Out, &c.Plot, &c.Figure, pm)
}

// newThresholdsFlags returns the flag set of `aim thresholds` (docs/cli/thresholds.md is made
// from it) and the configuration and --quiet that parsing it fills.
func newThresholdsFlags(stderr io.Writer) (*flag.FlagSet, *aimjob.ThresholdsConfig, *progressMode) {
	c, pm := aimjob.NewThresholdsConfig(), new(progressMode)
	fs := newFlags("aim thresholds", thresholdsUsage, stderr)
	thresholdsFlags(fs, c, pm)
	return fs, c, pm
}

func parseThresholds(args []string, stderr io.Writer) (*aimjob.ThresholdsConfig, progressMode, error) {
	fs, c, pm := newThresholdsFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	return c, *pm, c.Validate()
}

func runThresholds(args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseThresholds(args, stderr)
	if err != nil {
		return err
	}
	rows, summary, err := aimjob.ExecuteThresholds(c, env(stderr, pm))
	for _, r := range rows {
		if r.Err > 0 {
			fmt.Fprintf(stdout, "%s T = %d: alpha-bar_c = %.6g +- %.2g   (softmax 1/K = %.4g)\n", r.Channel, r.T, r.AlphaBarC, r.Err, r.Softmax)
		} else {
			fmt.Fprintf(stdout, "%s T = %d: alpha-bar_c = %.10g   (softmax 1/K = %.4g)\n", r.Channel, r.T, r.AlphaBarC, r.Softmax)
		}
	}
	return report(stdout)(summary, err)
}
