package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/sweep"
)

const sweepUsage = `Usage:
  aim sweep run [--shard i/n] [--quiet] spec.toml   run (or resume) a sweep, or one shard of it
  aim sweep check spec.toml                         validate a sweep file, count its runs and those done
  aim sweep merge spec.toml                         join the shards of a sweep into one table

A sweep file names the job, its output folder, the seeds, and a grid over the job's own flags:

  job = "amp"                # se, amp, gd, smi-se, smi-amp or smi-sgd: the aim command of each run
  out = "results/sweep-amp"  # the output folder
  seeds = 4                  # simulations: runs per grid point, with seeds seed, seed + 1, ...
  seed = 1
  device = "cpu"             # amp and gd: auto, cpu, cuda, cuda:0,1, cuda:all, cpu:K
  parallel = 1               # runs in flight at once
  workers = 0                # CPU goroutines per run (0: all cores)
  threads = 0                # amp and gd: threads of the CPU's BLAS library (0: all cores)
  trace = false              # amp and gd: also keep every run's trace (--trace), in <out>/trace.csv

  [grid]                     # any flag of the job: a value, a list, or a range "a:b:n" / "a:b:n:log"
  channel = "softmax"
  rho = [0.2, 0.5, 1]
  alpha = "0.05:0.15:3"
  D = 100

Every run is the job's command on one grid point and one seed, so its row is the row that
command writes. Finished runs are appended to <out>/journal.csv and synced one by one; run the
same command again after a crash and only the missing runs are computed. Add seeds or grid
values to the file and run it into the same folder: the sweep grows, computing only the new
runs (a file that drops a recorded run, or changes the job, trace or grid keys, is refused).
When every run is
done, <out>/results.csv (the command's columns, in grid order) and <out>/results.json (the
manifest) are written; with trace = true, <out>/trace.csv too (every run's trace, in run order,
kept in <out>/trace/ as each run finishes). With --shard i/n a run goes to shard i when its
index is i mod n, into <out>/shard-i-of-n/; 'aim sweep merge' checks and joins the shards into
<out>/results.csv.
`

// sweepJob is a job that a sweep can run: its configuration comes from the command's own
// flags, and a run is the job's function on that configuration.
type sweepJob struct {
	command    []string // the aim subcommand: {"amp"}, {"smi", "amp"}
	simulation bool     // takes --seeds (set to 1 per run) and a data seed
	device     bool     // takes --device
	fixed      []string // flags every run gets beside --out, --plot, --quiet and --seed
	owned      []string // flags the sweep sets or that only concern plots: refused in [grid]
	// parse fills and validates the job's configuration from flags, as its command does.
	parse func(args []string) (any, error)
	// memory refuses a configuration that will not fit on dev; nil: no check.
	memory func(cfg any, dev *job.Device) error
	// traced: with trace = true its runs get --trace and return their trace rows.
	traced bool
	// run runs a configuration and returns its tables and the error of the rows that failed
	// (written without values).
	run func(cfg any) (t jobTables, failed, err error)
}

// jobTables are the tables a job's run wrote: its results and its trace (nil when the run
// keeps none), each a header and rows.
type jobTables struct {
	columns, traceColumns []string
	rows, trace           [][]string
}

var sweepOwned = []string{"out", "plot", "size", "progress", "quiet", "seed", "workers", "threads"}

// parsed drops the progress mode of a parse function.
func parsed[C any](c C, _ progressMode, err error) (any, error) { return c, err }

// sweepJobs are the jobs of sweep files, by name.
var sweepJobs = map[string]*sweepJob{
	"se": {command: []string{"se"}, fixed: []string{"--workers=1"}, owned: []string{"threshold", "rescaled", "axes"},
		parse: func(a []string) (any, error) { return parsed(parseSE(a, io.Discard)) },
		run: func(cfg any) (jobTables, error, error) {
			res, err := aimjob.RunSE(cfg.(*aimjob.SEConfig), job.Env{})
			if err != nil {
				return jobTables{}, nil, err
			}
			return jobTables{columns: aimjob.SESchema.Header(0), rows: aimjob.SESchema.Rows(res.Rows)}, res.Err(), nil
		}},
	"amp": {command: []string{"amp"}, simulation: true, device: true, owned: []string{"seeds", "device", "trace", "axes", "se"}, traced: true,
		parse:  func(a []string) (any, error) { return parsed(parseAMP(a, io.Discard)) },
		memory: func(cfg any, dev *job.Device) error { return cfg.(*aimjob.AMPConfig).CheckMemory(dev) },
		run: func(cfg any) (jobTables, error, error) {
			c := cfg.(*aimjob.AMPConfig)
			res, err := aimjob.RunAMP(c, job.Env{})
			if err != nil {
				return jobTables{}, nil, err
			}
			t := jobTables{columns: aimjob.AMPSchema.Header(0), rows: aimjob.AMPSchema.Rows(res.Rows)}
			if c.Trace != "" {
				t.traceColumns, t.trace = aimjob.AMPTraceSchema.Header(0), aimjob.AMPTraceSchema.Rows(res.Trace)
			}
			return t, res.Err(), nil
		}},
	"gd": {command: []string{"gd"}, simulation: true, device: true, owned: []string{"seeds", "device", "trace", "spectrum", "amp", "axes"}, traced: true,
		parse:  func(a []string) (any, error) { return parsed(parseGD(a, io.Discard)) },
		memory: func(cfg any, dev *job.Device) error { return cfg.(*aimjob.GDConfig).CheckMemory(dev) },
		run: func(cfg any) (jobTables, error, error) {
			c := cfg.(*aimjob.GDConfig)
			res, err := aimjob.RunGD(c, job.Env{})
			if err != nil {
				return jobTables{}, nil, err
			}
			t := jobTables{columns: aimjob.GDSchema.Header(0), rows: aimjob.GDSchema.Rows(res.Rows)}
			if c.Trace != "" {
				t.traceColumns, t.trace = aimjob.GDTraceSchema.Header(0), aimjob.GDTraceSchema.Rows(res.Trace)
			}
			return t, res.Err(), nil
		}},
	"smi-se": {command: []string{"smi", "se"},
		parse: func(a []string) (any, error) { return parsed(parseSMISE(a, io.Discard)) },
		run: func(cfg any) (jobTables, error, error) {
			c := cfg.(*smijob.SMISEConfig)
			res, err := smijob.RunSMISE(c, job.Env{})
			if err != nil {
				return jobTables{}, nil, smiError("se", err)
			}
			return jobTables{columns: smijob.SMISESchema.Header(c.L), rows: smijob.SMISESchema.Rows(res.Rows)}, smiError("se", res.Err()), nil
		}},
	"smi-amp": {command: []string{"smi", "amp"}, simulation: true, fixed: []string{"--trace="}, owned: []string{"seeds", "trace", "se"},
		parse:  func(a []string) (any, error) { return parsed(parseSMIAMP(a, io.Discard)) },
		memory: func(cfg any, _ *job.Device) error { return cfg.(*smijob.SMIAMPConfig).CheckMemory() },
		run: func(cfg any) (jobTables, error, error) {
			c := cfg.(*smijob.SMIAMPConfig)
			res, err := smijob.RunSMIAMP(c, job.Env{})
			if err != nil {
				return jobTables{}, nil, smiError("amp", err)
			}
			return jobTables{columns: smijob.SMIAMPSchema.Header(c.L), rows: smijob.SMIAMPSchema.Rows(res.Rows)}, smiError("amp", res.Err()), nil
		}},
	// A run of smi-sgd is one seed; its row is the run's last record (the command writes
	// every record).
	"smi-sgd": {command: []string{"smi", "sgd"}, simulation: true, owned: []string{"seeds"},
		parse:  func(a []string) (any, error) { return parsed(parseSMISGD(a, io.Discard)) },
		memory: func(cfg any, _ *job.Device) error { return cfg.(*smijob.SMISGDConfig).CheckMemory() },
		run: func(cfg any) (jobTables, error, error) {
			c := cfg.(*smijob.SMISGDConfig)
			res, err := smijob.RunSMISGD(c, job.Env{})
			if err != nil {
				return jobTables{}, nil, smiError("sgd", err)
			}
			var rows [][]string
			for _, i := range res.Last {
				if i >= 0 {
					rows = append(rows, smijob.SMISGDSchema.Row(&res.Rows[i]))
				}
			}
			return jobTables{columns: smijob.SMISGDSchema.Header(c.L), rows: rows}, smiError("sgd", res.Err()), nil
		}},
}

func sweepJobNames() string {
	names := make([]string, 0, len(sweepJobs))
	for n := range sweepJobs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func runSweep(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, sweepUsage)
		return usagef("missing subcommand (want run, check or merge)")
	}
	switch args[0] {
	case "run":
		return runSweepRun(args[1:], stdout, stderr)
	case "check":
		return runSweepCheck(args[1:], stdout, stderr)
	case "merge":
		return runSweepMerge(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, sweepUsage)
		return errHelp
	}
	fmt.Fprint(stderr, sweepUsage)
	return usagef("unknown subcommand %q (want run, check or merge)", args[0])
}

// sweepFlags parses the flags of a sweep subcommand and returns the sweep file's path.
func sweepFlags(fs *flag.FlagSet, args []string) (string, error) {
	files, err := parseWithFiles(fs, args)
	if err != nil {
		return "", err
	}
	if len(files) != 1 {
		return "", usagef("want one sweep file, got %d", len(files))
	}
	return files[0], nil
}

// newSweepFlags returns the flag set of `aim sweep check` or `aim sweep merge`, which take no
// flags but -h (docs/cli/sweep-check.md and sweep-merge.md are made from it).
func newSweepFlags(sub string, stderr io.Writer) *flag.FlagSet {
	return newFlags("aim sweep "+sub, sweepUsage, stderr)
}

// newSweepRunFlags returns the flag set of `aim sweep run` (docs/cli/sweep-run.md is made from
// it), its --shard and its --progress.
func newSweepRunFlags(stderr io.Writer) (fs *flag.FlagSet, shard *string, pm *progressMode) {
	fs = newFlags("aim sweep run", sweepUsage, stderr)
	shard = fs.String("shard", "", "run only shard i of n (i/n, 0 <= i < n): the runs whose index is i mod n")
	pm = new(progressMode)
	progressFlags(fs, pm, "auto: a line per finished run")
	return fs, shard, pm
}

func runSweepCheck(args []string, stdout, stderr io.Writer) error {
	path, err := sweepFlags(newSweepFlags("check", stderr), args)
	if err != nil {
		return err
	}
	plan, err := loadSweep(path, true)
	if err != nil {
		return err
	}
	s := plan.Spec
	fmt.Fprintf(stdout, "%s: job %s, %d grid points x %d seeds = %d runs, into %s (spec %s)\n",
		path, s.Job, s.Points(), s.Seeds, s.Runs(), s.Out, s.Hash())
	done, todo, grownFrom, err := plan.State(sweep.Shard{})
	switch {
	case err != nil:
		return err
	case grownFrom != "":
		fmt.Fprintf(stdout, "%s holds the sweep of spec %s, which this file grows: its %d runs are kept, %d to compute\n", s.Out, grownFrom, done, todo)
	default:
		fmt.Fprintf(stdout, "%s holds %d of the runs, %d to compute\n", s.Out, done, todo)
	}
	return nil
}

func runSweepRun(args []string, stdout, stderr io.Writer) error {
	fs, shardSpec, pm := newSweepRunFlags(stderr)
	path, err := sweepFlags(fs, args)
	if err != nil {
		return err
	}
	var sh sweep.Shard
	if *shardSpec != "" {
		if sh, err = sweep.ParseShard(*shardSpec); err != nil {
			return job.InputError{Err: err}
		}
	}
	plan, err := loadSweep(path, true)
	if err != nil {
		return err
	}
	return plan.Execute(sh, append([]string{"sweep", "run"}, args...), *pm, stdout, stderr)
}

func runSweepMerge(args []string, stdout, stderr io.Writer) error {
	path, err := sweepFlags(newSweepFlags("merge", stderr), args)
	if err != nil {
		return err
	}
	plan, err := loadSweep(path, false)
	if err != nil {
		return err
	}
	return plan.Merge(append([]string{"sweep", "merge"}, args...), stdout, stderr)
}
