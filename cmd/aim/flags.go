package main

// flags.go: the flag definitions the commands share. The sweep runner fills its runs'
// configurations through the same definitions, so a sweep key is a flag of its job.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

var errHelp = errors.New("help requested")

// usagef returns bad input: the command exits with status 2 and writes nothing.
func usagef(format string, args ...any) error { return job.Inputf(format, args...) }

// listFlag collects a flag that may be repeated and may hold comma lists or ranges.
type listFlag []string

// String returns the values given, space-separated.
func (l *listFlag) String() string { return strings.Join(*l, " ") }

// Set adds a value.
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// newFlags returns the flag set of a command whose -h prints usage and the flags' defaults.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, turning -h into errHelp and every other problem into bad input.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return job.InputError{Err: err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// parseWithFiles parses flags that may come before, between and after file arguments, and
// returns the files. -h gives errHelp; every other problem is bad input.
func parseWithFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, job.InputError{Err: err}
		}
		if fs.NArg() == 0 {
			return files, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// given reports whether the flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// sizeFlag registers --size, the figure's size, on every command that draws one; a bad value
// is bad input (status 2, nothing written).
func sizeFlag(fs *flag.FlagSet, z *job.FigureSize) {
	fs.Var(z, "size", figure.SizeUsage+" (default 6x4.2in)")
}

// modelFlags registers the flags every AIM command (se, amp, gd) shares, into m.
func modelFlags(fs *flag.FlagSet, m *job.Model, quiet *bool) {
	fs.StringVar(&m.Channel, "channel", m.Channel, "output channel: softmax or hardmax")
	fs.BoolVar(&m.PaperCompat, "paper-compat", m.PaperCompat, "hardmax: use the published channel formula (bivariate density in place of the CDF derivative) that the paper's curves come from")
	fs.IntVar(&m.T, "T", m.T, "tokens per sequence (hardmax: 2 to 6)")
	fs.Float64Var(&m.Beta, "beta", m.Beta, "softmax inverse temperature")
	fs.Var((*listFlag)(&m.Rho), "rho", "rank ratio rho = R/D: a value, list or range; repeatable (default 0.5)")
	fs.StringVar(&m.Out, "out", m.Out, "CSV output (the manifest goes beside it as .json)")
	fs.StringVar(&m.Plot, "plot", m.Plot, "plot output, .png, .svg or .pdf; empty for none")
	fs.StringVar(&m.Axes, "axes", m.Axes, "plot axes: auto, lin, logx, logy or loglog (auto: lin for softmax, loglog for hardmax)")
	sizeFlag(fs, &m.Size)
	fs.BoolVar(quiet, "quiet", false, "no progress bar")
}

// noiseFlag registers --noise, the softmax channel's label noise (aim se, aim amp), into m.
func noiseFlag(fs *flag.FlagSet, m *job.Model) {
	fs.Float64Var(&m.Noise, "noise", m.Noise, "softmax label noise Delta >= 0: y = softmax(beta h) + sqrt(Delta) xi per output entry (2 <= T <= 6; CPU only for amp)")
}

// simFlags registers the flags the simulations (amp, gd) share beside modelFlags, into s.
func simFlags(fs *flag.FlagSet, s *job.Sim, quiet *bool) {
	modelFlags(fs, &s.Model, quiet)
	fs.IntVar(&s.D, "D", s.D, "token dimension")
	fs.IntVar(&s.Seeds, "seeds", s.Seeds, "teachers and data sets per (rho, alpha)")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "first seed: run s uses seed + s")
	fs.StringVar(&s.Device, "device", s.Device, "auto, cpu, cuda, cuda:I, or a device group: cuda:0,1,... or cuda:all (samples sharded over the GPUs), cpu:K (K CPU devices: a check that groups change nothing)")
	fs.IntVar(&s.Workers, "workers", s.Workers, "CPU goroutines (0: all cores)")
	fs.IntVar(&s.Threads, "threads", s.Threads, "threads of the CPU backend's BLAS library, OpenBLAS or MKL (0: all cores)")
	fs.StringVar(&s.Mode, "tokens", s.Mode, "tokens X stored on the device, or streamed: regenerated chunk by chunk from the seed at every use, never stored (same values); auto stores when the largest run fits")
	fs.IntVar(&s.Chunk, "chunk", s.Chunk, "samples per chunk of streamed tokens (0: the largest that fits, at most 4096)")
	fs.StringVar(&s.MaxMemory, "max-memory", s.MaxMemory, "cap on a run's device memory, e.g. 4GiB or 512MiB (default: the device's free memory)")
	fs.IntVar(&s.Points, "points", s.Points, "hardmax and noisy softmax, T > 2: lattice points per shift (x 8 shifts) of each sample's g_out")
}

// smiFlags registers the flags every `aim smi` subcommand shares, into f; withC is false where
// --c is a grid (thresholds).
func smiFlags(fs *flag.FlagSet, f *job.SMI, withC bool, quiet *bool) {
	fs.IntVar(&f.L, "L", f.L, "attention layers, each of rank 1 (se, thresholds and amp: L <= 4, with L = 4 sampled; sgd: any L)")
	fs.IntVar(&f.M, "M", f.M, "tokens per sequence")
	if withC {
		fs.Float64Var(&f.C, "c", f.C, "skip (residual) strength c >= 0")
	}
	fs.Float64Var(&f.Beta, "beta", f.Beta, "softmax inverse temperature")
	fs.StringVar(&f.Out, "out", f.Out, "CSV output (the manifest goes beside it as .json)")
	fs.StringVar(&f.Plot, "plot", f.Plot, "plot output, .png, .svg or .pdf; empty for none")
	sizeFlag(fs, &f.Size)
	fs.BoolVar(quiet, "quiet", false, "no progress bar")
	fs.IntVar(&f.Workers, "workers", f.Workers, "goroutines (0: all cores); the results do not depend on it")
}

// smiSEFlags registers the flags of the SMI state evolution's Monte Carlo average, into o.
func smiSEFlags(fs *flag.FlagSet, o *job.SMISEOptions) {
	fs.IntVar(&o.Samples, "samples", o.Samples, "Monte Carlo (xi, eta) draws of the channel average per SE iteration")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the SE's draws")
	fs.BoolVar(&o.MonteCarlo, "monte-carlo", o.MonteCarlo, "plain pseudo-random draws instead of randomised quasi-Monte Carlo (shifted Halton)")
	fs.Float64Var(&o.Epsilon, "epsilon", o.Epsilon, "ridge of the channel variance V = I - Q + epsilon I")
	fs.Float64Var(&o.Damping, "damping", o.Damping, "SE damping rho in (0, 1], the weight on the new iterate: Q <- rho Q_new + (1 - rho) Q; 0: the authors' 0.8 (L = 2) or 0.6 (L = 3)")
	fs.IntVar(&o.MaxIter, "max-iter", o.MaxIter, "SE iteration cap")
	fs.Float64Var(&o.Tol, "tol", o.Tol, "stop when every layer's estimated distance to the fixed point, |G(Q) - Q|/(1 - slope), is below tol (sampled integrals, L >= 3: or, where the iterates jitter, when |G(Q) - Q| is at most half the standard error of G; manifest noise_limited)")
	quadMaxEvalFlag(fs, &o.QuadMaxEval)
	integralFlags(fs, &o.SMIIntegrals, job.SMISEDefaultDraws)
}

// integralFlags registers --draws and --cubature, the choice of the L = 3 channel integrals,
// into o; def states the command's default number of draws.
func integralFlags(fs *flag.FlagSet, o *job.SMIIntegrals, def string) {
	fs.IntVar(&o.Draws, "draws", o.Draws, fmt.Sprintf("L >= 3: importance-sampling draws per channel integral, in two independent halves (0: the default, %s)", def))
	fs.BoolVar(&o.Cubature, "cubature", o.Cubature, "L = 3: the budget-capped adaptive cubature instead of importance sampling (README; L = 4 has none)")
	fs.StringVar(&o.Device, "device", o.Device, "L >= 3: where the sampled channel integrals run: cpu (in process), cuda, cuda:I or auto (the same estimates to rounding)")
}

// quadMaxEvalFlag registers --quad-max-eval, the SMI channel integral's budget, into n.
func quadMaxEvalFlag(fs *flag.FlagSet, n *int) {
	fs.IntVar(n, "quad-max-eval", *n, "evaluation budget of each sample's channel integral (0: the default, 20 000; L = 3 errors per budget: README)")
}

// env is what a job reports to: notes on stderr, a progress bar there on a terminal (unless
// quiet), and the program's version and command line for its manifest.
func env(stderr io.Writer, quiet bool) job.Env {
	return job.Env{Log: stderr, Version: programVersion(), Args: os.Args[1:],
		Progress: func(total int, what string) job.Progress { return newProgress(total, what, stderr, quiet) }}
}

// envContext is env with the context that stops the job when cancelled.
func envContext(ctx context.Context, stderr io.Writer, quiet bool) job.Env {
	e := env(stderr, quiet)
	e.Context = ctx
	return e
}

// report returns what prints a job's summary line (when it wrote its files) and returns its
// error: report(stdout)(job.Execute...(c, env)).
func report(stdout io.Writer) func(summary string, err error) error {
	return func(summary string, err error) error {
		if summary != "" {
			fmt.Fprintln(stdout, summary)
		}
		return err
	}
}
