// Command aim computes and simulates Bayes-optimal learning of attention models: state
// evolution curves, thresholds and finite-size simulations of the attention-indexed model
// (AIM) and of deep tied attention (SMI), sweeps of them, and their figures. Run `aim help`
// for the subcommands.
//
// The command is the command line only: it fills a job's configuration from the flags and
// calls the job (packages cmd/aim/internal/job/aimjob, smijob and benchjob on the shared core
// cmd/aim/internal/job), which reaches the engine and the devices.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

// semver is the release of the command line: its flags, tables and manifests.
const semver = "v0.1.0"

// version is the commit, set at build time with -ldflags "-X main.version=$(git describe
// --always --dirty)"; without it the VCS revision recorded by the Go toolchain is used, and
// "devel" without that.
var version = ""

// versionLine is what aim version prints: the release, the commit and the Go toolchain.
func versionLine() string {
	return fmt.Sprintf("aim %s (commit %s, %s)", semver, programVersion(), runtime.Version())
}

// programVersion returns the commit recorded in the binary.
func programVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", ""
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if rev != "" {
			return rev[:min(12, len(rev))] + dirty
		}
	}
	return "devel"
}

const mainUsage = `aim: Bayes-optimal learning of attention models.

Usage:
  aim se [flags]       state evolution curves and thresholds of the attention-indexed model
  aim thresholds [flags]
                       the rho -> 0 weak-recovery threshold alpha-bar_c against T (hardmax to T = 6)
  aim amp [flags]      GAMP-RIE simulations at dimension D beside the state evolution
  aim gd [flags]       gradient-descent students (single and averaged) beside AMP and the SE
  aim erm [flags]      empirical risk minimisation with weight decay in the quadratic network
                       (state evolution) beside the Bayes-optimal error
  aim smi se|thresholds|amp|sgd [flags]
                       deep tied attention (sequence multi-index model): state evolution,
                       layer thresholds, GAMP and SGD
  aim sweep run|check|merge spec.toml
                       sweeps over any of the above from a file: resumable after a crash,
                       growable by seeds and grid values, shardable across machines
                       (--shard i/n), merged into one table
  aim plot [flags] file.csv ...
                       a figure (PNG, SVG or PDF) from saved CSVs: SE lines, AMP and GD points,
                       thresholds; several files overlay
  aim bench [flags]    benchmarks of the engine: a GAMP-RIE iteration and a GD step at growing D on
                       every device, per-operation times, GFLOP/s against the device's Dgemm
  aim device           the CPU and CUDA devices aim sees, and which one --device auto picks
  aim version          the release, the commit and the Go version (also aim --version)
  aim help [--json]    this text; with --json every command and its flags, as JSON

Run 'aim se -h' for the flags of a subcommand; docs/cli/vocabulary.md lists the flags the
commands share.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands are aim's subcommands, for nearestCommand.
var commands = []string{"se", "thresholds", "amp", "gd", "erm", "smi", "sweep", "plot", "bench", "device", "version", "help"}

// commandName is the command args run, as its messages name it: "se", "smi thresholds".
func commandName(args []string) string {
	if len(args) > 1 {
		for _, c := range cliCommands() {
			if c.name == args[0]+" "+args[1] {
				return c.name
			}
		}
	}
	return args[0]
}

// nearestCommand returns "; did you mean X?" for the command nearest to name, or "".
func nearestCommand(name string) string {
	if strings.HasPrefix(name, "-") {
		return ""
	}
	for _, c := range commands {
		if d := editDistance(name, c); d <= 2 && 2*d <= len(name) {
			return fmt.Sprintf("; did you mean %s?", c)
		}
	}
	return ""
}

// run executes the command line and returns the exit status: 0 on success, 1 when the
// computation failed (for example a state evolution that did not converge), 2 on bad input,
// 130 when SIGINT or SIGTERM stopped it (handleSignals).
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run under a context whose cancellation stops the command as SIGINT does: the
// jobs that write a row per grid point write the rows they finished and a manifest that lists
// the missing points, and the command exits with status 130.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return 2
	}
	ctx, done := handleSignals(ctx, args, stderr)
	defer done()
	var err error
	switch args[0] {
	case "se":
		err = runSE(ctx, args[1:], stdout, stderr)
	case "thresholds":
		err = runThresholds(args[1:], stdout, stderr)
	case "amp":
		err = runAMP(ctx, args[1:], stdout, stderr)
	case "gd":
		err = runGD(ctx, args[1:], stdout, stderr)
	case "erm":
		err = runERM(ctx, args[1:], stdout, stderr)
	case "smi":
		err = runSMI(ctx, args[1:], stdout, stderr)
	case "sweep":
		err = runSweep(args[1:], stdout, stderr)
	case "plot":
		err = runPlot(args[1:], stdout, stderr)
	case "bench":
		err = runBench(args[1:], stdout, stderr)
	case "device":
		err = runDevice(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "aim version: unexpected argument %q\n", args[1])
			return 2
		}
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help", "-h", "--help":
		return runHelp(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "aim: unknown command %q%s\nUsage: aim <command> [flags]\nRun 'aim help' for the commands.\n", args[0], nearestCommand(args[0]))
		return 2
	}
	if err == nil {
		return 0
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "aim %s: %s\n", commandName(args), strings.TrimSpace(err.Error()))
	if errors.Is(err, job.ErrInterrupted) {
		return exitInterrupted
	}
	if job.IsInput(err) {
		return 2
	}
	return 1
}
