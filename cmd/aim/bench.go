package main

import (
	"flag"
	"io"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/job/benchjob"
)

const benchUsage = `Usage: aim bench [flags]

Benchmarks the engine: one GAMP-RIE iteration (amp) and one Adam step of the GD student (gd)
of the softmax model (with --channel linear, of the quadratic network) at growing D, with
stored tokens at every --D and streamed tokens (regenerated from the seed's Philox stream,
chunk by chunk) at every --streamed-D, on every device of --device. Each row is warm (one iteration first, not counted) and repeated: the
median and the minimum seconds of --repeat iterations, the GFLOP/s of the counted work
(amp: 4 N T D^2 + 4 N T^2 D + (16/3) D^3; gd: 4 N T D^2 + 4 N T^2 D + 6 R D^2), its fraction
of the device's square Dgemm rate measured in the same run, the seconds of the data's
generation, and the seconds of each kind of device operation within the median iteration
(Gemm, QuadFormSum, TokenDots, TokenMix, channel, EighSym, SpectralCompose, GaussianFill,
other) with the host's share. Writes a CSV, a JSON manifest and a log-log plot of seconds
against D with a D^4 reference line.

  aim bench --device cpu --D 100,200,400
  aim bench --device cuda:0 --D 1000,2000 --streamed-D 1000,2000,4000 --plot results/bench.svg
  aim bench --device cpu,cuda:0 --D 500
  aim bench --device all                    # the CPU and every GPU, each at its default sizes

Defaults by device: CPU --D 100,200,400 with a 2048 Dgemm; GPU --D 500,1000,2000 with an 8192
Dgemm; --streamed-D defaults to the largest --D ("none" for no streamed rows).

Flags:
`

// benchFlags registers the flags of `aim bench` into c.
func benchFlags(fs *flag.FlagSet, c *benchjob.BenchConfig, pm *progressMode) {
	gridVar(fs, &c.Device, "device", usage("device", "each device or group benchmarked in turn, e.g. cpu,cuda:0,cuda:0,1; all: the CPU, each GPU, and all GPUs as one group"))
	gridVar(fs, &c.D, "D", "dimensions with stored tokens, a comma list, or none (default: the device's, see above)")
	gridVar(fs, &c.StreamedD, "streamed-D", "dimensions with streamed tokens, a comma list, or none (default: the largest --D)")
	fs.StringVar(&c.Algorithms, "algorithms", c.Algorithms, "amp (a GAMP-RIE iteration), gd (an Adam step), or both")
	fs.Float64Var(&c.Alpha, "alpha", c.Alpha, "sample complexity alpha = N/D^2")
	fs.Float64Var(&c.Rho, "rho", c.Rho, "rank ratio rho = R/D")
	fs.StringVar(&c.Channel, "channel", c.Channel, "output channel: softmax, or linear (y = h at T = 1: the extensive-width quadratic network, width ratio kappa = rho)")
	fs.IntVar(&c.T, "T", c.T, "tokens per sequence (linear: 1, its default)")
	fs.Float64Var(&c.Beta, "beta", c.Beta, "softmax inverse temperature")
	gridVar(fs, &c.Precision, "precision", usage("precision", "here a comma list, one row per precision; a row's fraction_of_gemm divides its rate by the square product's at its own precision, measured just before it; a device that lacks a precision gets no rows for it"))
	fs.IntVar(&c.Repeat, "repeat", c.Repeat, "timed iterations after the warm-up (at least 3); their median is reported")
	fs.IntVar(&c.GemmSize, "gemm-size", c.GemmSize, "n of the n x n x n Dgemm whose rate the fractions divide by (0: 2048 on the CPU, 8192 on a GPU)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, usage("seed", "it seeds the teacher and the data"))
	fs.IntVar(&c.Workers, "workers", c.Workers, usage("workers", ""))
	fs.IntVar(&c.Threads, "threads", c.Threads, usage("threads", ""))
	fs.BoolVar(&c.HostTimer, "host-timer", c.HostTimer, "time a GPU's operations with the host clock instead of its events")
	fs.IntVar(&c.Chunk, "chunk", c.Chunk, "samples per chunk of streamed tokens (0: the largest that fits, at most 4096)")
	fs.StringVar(&c.MaxMemory, "max-memory", c.MaxMemory, "cap on a row's device memory, e.g. 4GiB (default: the device's free memory)")
	outputFlags(fs, &c.Out, &c.Plot, &c.Figure, pm)
}

// newBenchFlags returns the flag set of `aim bench` (docs/cli/bench.md is made from it) and
// the configuration and --quiet that parsing it fills.
func newBenchFlags(stderr io.Writer) (*flag.FlagSet, *benchjob.BenchConfig, *progressMode) {
	c, pm := benchjob.NewBenchConfig(), new(progressMode)
	fs := newFlags("aim bench", benchUsage, stderr)
	benchFlags(fs, c, pm)
	return fs, c, pm
}

// parseBench fills the configuration of `aim bench` from its flags and validates it.
func parseBench(args []string, stderr io.Writer) (*benchjob.BenchConfig, progressMode, error) {
	fs, c, pm := newBenchFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	if f := strings.Fields(c.Device); len(f) > 1 {
		list := strings.Join(f, ",")
		warnf(fs, "a space-separated --device list is deprecated: write --device %s (the same devices)", list)
		c.Device = list
	}
	c.TGiven = given(fs, "T")
	return c, *pm, c.Validate()
}

func runBench(args []string, stdout, stderr io.Writer) error {
	c, pm, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	return report(stdout)(benchjob.ExecuteBench(c, env(stderr, pm)))
}
