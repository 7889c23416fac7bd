package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/sweep"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/auto"
	"github.com/aimtheory/aim/device/cuda"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/internal/par"
)

const sweepUsage = `Usage:
  aim sweep run [--shard i/n] [--quiet] spec.toml   run (or resume) a sweep, or one shard of it
  aim sweep check spec.toml                         validate a sweep file and count its runs
  aim sweep merge spec.toml                         join the shards of a sweep into one table

A sweep file names the job, its output folder, the seeds, and a grid over the job's own flags:

  job = "amp"                # se, amp, gd, smi-se, smi-amp or smi-sgd: the aim command of each run
  out = "results/sweep-amp"  # the output folder
  seeds = 4                  # simulations: runs per grid point, with seeds seed, seed + 1, ...
  seed = 1
  device = "cpu"             # amp and gd: auto, cpu or cuda
  parallel = 1               # runs in flight at once
  workers = 0                # CPU goroutines per run (0: all cores)
  threads = 0                # amp and gd: threads of the CPU's BLAS library (0: all cores)

  [grid]                     # any flag of the job: a value, a list, or a range "a:b:n" / "a:b:n:log"
  channel = "softmax"
  rho = [0.2, 0.5, 1]
  alpha = "0.05:0.15:3"
  D = 100

Every run is the job's command on one grid point and one seed, so its row is the row that
command writes. Finished runs are appended to <out>/journal.csv and synced one by one; run the
same command again after a crash and only the missing runs are computed. When every run is
done, <out>/results.csv (the command's columns, in grid order) and <out>/results.json (the
manifest) are written. With --shard i/n a run goes to shard i when its index is i mod n, into
<out>/shard-i-of-n/; 'aim sweep merge' checks and joins the shards into <out>/results.csv.
`

// sweepJob is a command that a sweep can run.
type sweepJob struct {
	command    []string // the aim subcommand: {"amp"}, {"smi", "amp"}
	simulation bool     // takes --seeds (set to 1 per run) and a data seed
	device     bool     // takes --device
	fixed      []string // flags every run gets beside --out, --plot, --quiet and --seed
	owned      []string // flags the sweep sets or that only concern plots: refused in [grid]
	parse      func(args []string) (any, error)
	memory     func(cfg any, dev device.Device, workers int) error // refuses a run that will not fit; nil: none
	run        func(args []string, stdout, stderr io.Writer) error
}

var sweepOwned = []string{"out", "plot", "quiet", "seed", "workers", "threads"}

// sweepJobs are the jobs of sweep files, by name.
var sweepJobs = map[string]*sweepJob{
	"se": {command: []string{"se"}, fixed: []string{"--workers=1"}, owned: []string{"threshold", "rescaled", "axes"},
		parse: func(a []string) (any, error) { return parseSE(a, io.Discard) }, run: runSE},
	"amp": {command: []string{"amp"}, simulation: true, device: true, owned: []string{"seeds", "device", "trace", "axes", "se"},
		parse: func(a []string) (any, error) { return parseAMP(a, io.Discard) },
		memory: func(cfg any, dev device.Device, _ int) error {
			c := cfg.(*ampConfig)
			return checkMemory(dev, c.rhos, c.alphas, func(r, a float64) aim.Params { return c.params(r, a, 0) }, amp.Bytes)
		}, run: runAMP},
	"gd": {command: []string{"gd"}, simulation: true, device: true, owned: []string{"seeds", "device", "trace", "trace-every", "amp", "axes"},
		parse: func(a []string) (any, error) { return parseGD(a, io.Discard) },
		memory: func(cfg any, dev device.Device, _ int) error {
			c := cfg.(*gdConfig)
			return checkMemory(dev, c.rhos, c.alphas, func(r, a float64) aim.Params { return c.params(r, a, 0) },
				func(p aim.Params) uint64 { return gd.Bytes(p, c.opts) })
		}, run: runGD},
	"smi-se": {command: []string{"smi", "se"}, parse: func(a []string) (any, error) { return parseSMISE(a, io.Discard) },
		run: func(a []string, o, e io.Writer) error { return runSMI(append([]string{"se"}, a...), o, e) }},
	"smi-amp": {command: []string{"smi", "amp"}, simulation: true, fixed: []string{"--trace="}, owned: []string{"seeds", "trace", "se"},
		parse: func(a []string) (any, error) { return parseSMIAMP(a, io.Discard) },
		memory: func(cfg any, _ device.Device, workers int) error {
			c := cfg.(*smiAMPConfig)
			for _, a := range c.alphas {
				if err := checkHostMemory(workers, fmt.Sprintf("a run at D = %d, alpha = %g", c.D, a), smiAMPBytes(c.params(a, 0), c.opts)); err != nil {
					return err
				}
			}
			return nil
		},
		run: func(a []string, o, e io.Writer) error { return runSMI(append([]string{"amp"}, a...), o, e) }},
	"smi-sgd": {command: []string{"smi", "sgd"}, simulation: true, owned: []string{"seeds"},
		parse: func(a []string) (any, error) { return parseSMISGD(a, io.Discard) },
		memory: func(cfg any, _ device.Device, workers int) error {
			c := cfg.(*smiSGDConfig)
			return checkHostMemory(workers, fmt.Sprintf("a run at D = %d, alpha = %g", c.D, c.alpha), smiSGDBytes(c.params(0), c.opts))
		},
		run: func(a []string, o, e io.Writer) error { return runSMI(append([]string{"sgd"}, a...), o, e) }},
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

// parseWithFiles parses flags that may come before, between and after file arguments, and
// returns the files. -h gives errHelp; every other problem is a usage error.
func parseWithFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			return files, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// sweepPlan is a validated sweep file.
type sweepPlan struct {
	path   string
	src    []byte
	spec   *sweep.Spec
	job    *sweepJob
	device string // what the device is, for the manifest
}

// sweepFlags parses the flags of a sweep subcommand and returns the sweep file's path.
func sweepFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (string, error) {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, sweepUsage)
		fs.PrintDefaults()
	}
	files, err := parseWithFiles(fs, args)
	if err != nil {
		return "", err
	}
	if len(files) != 1 {
		return "", usagef("want one sweep file, got %d", len(files))
	}
	return files[0], nil
}

// loadSweep reads and validates a sweep file: its structure, then every run's flags through
// the job's own parser, then (withDevice) whether each run fits in memory. Every problem is
// reported at once, with the line of the key it concerns, as a usage error.
func loadSweep(path string, withDevice bool) (*sweepPlan, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError{err}
	}
	// The structure first; what can be read of a file with problems is checked further, so
	// that every problem is reported at once.
	spec, err := sweep.ParseSpec(src)
	var errs sweep.Errors
	if err != nil && !errors.As(err, &errs) {
		return nil, sweepFileError(path, err)
	}
	if spec == nil {
		return nil, sweepFileError(path, errs)
	}
	job, ok := sweepJobs[spec.Job]
	if !ok {
		// Unless the job key is missing or not a string, which is reported already.
		if line, set := spec.Lines["job"]; set && !slices.ContainsFunc(errs, func(e sweep.Error) bool { return e.Line == line }) {
			errs = append(errs, sweep.Error{Line: line, Msg: fmt.Sprintf("unknown job %q (want %s)", spec.Job, sweepJobNames())})
		}
		return nil, sweepFileError(path, errs)
	}
	plan := &sweepPlan{path: path, src: src, spec: spec, job: job, device: "cpu (theory)"}
	if !job.simulation && spec.SeedsSet() && spec.Seeds != 1 {
		errs = append(errs, sweep.Error{Line: spec.Lines["seeds"], Msg: fmt.Sprintf("seeds %d: job %s is theory, with one run per point (seed sets its Monte Carlo draws)", spec.Seeds, spec.Job)})
	}
	if _, ok := spec.Lines["device"]; ok && !job.device {
		errs = append(errs, sweep.Error{Line: spec.Lines["device"], Msg: fmt.Sprintf("job %s runs on the CPU only: remove device", spec.Job)})
	}
	if _, ok := spec.Lines["threads"]; ok && !job.device {
		errs = append(errs, sweep.Error{Line: spec.Lines["threads"], Msg: fmt.Sprintf("job %s makes no BLAS calls: remove threads", spec.Job)})
	}
	// Each key on its own: refused, unknown, or of the wrong type.
	bad := map[string]bool{}
	for _, a := range spec.Grid {
		if slices.Contains(sweepOwned, a.Name) || slices.Contains(job.owned, a.Name) {
			errs = append(errs, sweep.Error{Line: a.Line, Msg: fmt.Sprintf("%s cannot be swept: the sweep sets it (or it only concerns plots)", a.Name)})
			bad[a.Name] = true
			continue
		}
		for _, v := range a.Values {
			_, err := job.parse([]string{"--" + a.Name + "=" + v})
			if err == nil {
				continue
			}
			msg := err.Error()
			switch {
			case strings.Contains(msg, "flag provided but not defined"):
				errs = append(errs, sweep.Error{Line: a.Line, Msg: fmt.Sprintf("unknown parameter %q for job %s (see aim %s -h)", a.Name, spec.Job, strings.Join(job.command, " "))})
			case isFlagTypeError(err):
				errs = append(errs, sweep.Error{Line: a.Line, Msg: fmt.Sprintf("%s = %q: wrong type (want %s)", a.Name, v, job.flagKind(a.Name))})
			default:
				continue
			}
			bad[a.Name] = true
			break
		}
	}
	// Grid points are checked on the keys that passed so far.
	good := spec.Grid[:0:0]
	for _, a := range spec.Grid {
		if !bad[a.Name] {
			good = append(good, a)
		}
	}
	spec.Grid = good
	var dev device.Device
	if withDevice && job.memory != nil && len(errs) == 0 {
		devName := "cpu"
		if job.device {
			devName = spec.Device
		}
		var note string
		if dev, note, err = auto.OpenWith(devName, cpu.Options{Workers: spec.Workers, Threads: spec.Threads}); err != nil {
			return nil, sweepFileError(path, sweep.Errors{{Line: spec.Lines["device"], Msg: err.Error()}})
		}
		defer auto.Close(dev)
		plan.device = note
	}
	// Every point through the job's parser (and memory check), each distinct problem once; in
	// a grid of more than maxCheckedPoints points, that many spread evenly over it.
	seen := map[string]bool{}
	points, step := spec.Points(), 1
	if points > maxCheckedPoints {
		step = (points + maxCheckedPoints - 1) / maxCheckedPoints
	}
	for k := 0; k < points && len(errs) < 20; k += step {
		args := plan.pointArgs(k)
		cfg, err := job.parse(args)
		if err == nil && dev != nil {
			err = job.memory(cfg, dev, spec.Workers)
		}
		if err == nil {
			continue
		}
		msg := strings.TrimSpace(err.Error())
		if seen[msg] {
			continue
		}
		seen[msg] = true
		errs = append(errs, sweep.Error{Line: plan.lineOf(msg), Msg: fmt.Sprintf("%s (at %s)", msg, plan.describe(k))})
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
		return nil, sweepFileError(path, errs)
	}
	return plan, nil
}

// maxCheckedPoints bounds the grid points that loadSweep passes through the job's parser.
const maxCheckedPoints = 100_000

// isFlagTypeError reports whether err is the flag package's refusal of a value's type.
func isFlagTypeError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "invalid value") || strings.Contains(msg, "invalid boolean")
}

// flagKind says what a job's flag takes, from the probe values its parser accepts.
func (j *sweepJob) flagKind(name string) string {
	takes := func(v string) bool {
		_, err := j.parse([]string{"--" + name + "=" + v})
		return err == nil || !isFlagTypeError(err)
	}
	switch {
	case takes("x"):
		return "text"
	case takes("1.5"):
		return "a number"
	case takes("true"):
		return "true or false"
	case takes("1"):
		return "a whole number"
	}
	return "another kind of value"
}

// sweepFileError turns a list of problems into a usage error that names the file.
func sweepFileError(path string, err error) error {
	var es sweep.Errors
	if !errors.As(err, &es) {
		return usageError{fmt.Errorf("%s: %w", path, err)}
	}
	lines := make([]string, len(es))
	for i, e := range es {
		if e.Line > 0 {
			lines[i] = fmt.Sprintf("%s:%d: %s", path, e.Line, e.Msg)
		} else {
			lines[i] = fmt.Sprintf("%s: %s", path, e.Msg)
		}
	}
	return usagef("%d problem(s) in the sweep file:\n  %s", len(es), strings.Join(lines, "\n  "))
}

// lineOf finds the grid key that an error message names, as a flag (--name or -name) or
// else as "name = ", or falls back to the [grid] line.
func (p *sweepPlan) lineOf(msg string) int {
	for _, pattern := range []string{`(^|[^\w-])--?%s($|[^\w-])`, `(^|[^\w-])%s = `} {
		for _, a := range p.spec.Grid {
			if regexp.MustCompile(fmt.Sprintf(pattern, regexp.QuoteMeta(a.Name))).MatchString(msg) {
				return a.Line
			}
		}
	}
	return p.spec.Lines["[grid]"]
}

// describe names grid point k for messages: "rho = 0.5, alpha = 0.1".
func (p *sweepPlan) describe(k int) string {
	vals := p.spec.Point(k)
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = p.spec.Grid[i].Name + " = " + v
	}
	if len(parts) == 0 {
		return "the defaults"
	}
	return strings.Join(parts, ", ")
}

// pointArgs returns the job's flags for grid point k (without the per-run flags).
func (p *sweepPlan) pointArgs(k int) []string {
	vals := p.spec.Point(k)
	args := make([]string, 0, len(vals)+len(p.job.fixed))
	for i, v := range vals {
		args = append(args, "--"+p.spec.Grid[i].Name+"="+v)
	}
	return append(args, p.job.fixed...)
}

// runArgs returns the full flags of run r, writing its CSV to csvPath.
func (p *sweepPlan) runArgs(r sweep.Run, csvPath string) []string {
	args := p.pointArgs(r.Point)
	args = append(args, "--out="+csvPath, "--plot=", "--quiet", "--seed="+strconv.FormatUint(r.Seed, 10))
	if p.job.simulation {
		args = append(args, "--seeds=1")
	}
	if p.job.device {
		args = append(args, "--device="+p.spec.Device, "--threads="+strconv.Itoa(p.spec.Threads))
	}
	if p.job.command[0] != "se" {
		args = append(args, "--workers="+strconv.Itoa(p.spec.Workers))
	}
	return args
}

// rerun is the command line that computes run r again on its own.
func (p *sweepPlan) rerun(r sweep.Run) string {
	args := p.runArgs(r, "run.csv")
	return "aim " + strings.Join(p.job.command, " ") + " " + strings.Join(args, " ")
}

func runSweepCheck(args []string, stdout, stderr io.Writer) error {
	path, err := sweepFlags(flag.NewFlagSet("aim sweep check", flag.ContinueOnError), args, stderr)
	if err != nil {
		return err
	}
	plan, err := loadSweep(path, true)
	if err != nil {
		return err
	}
	s := plan.spec
	fmt.Fprintf(stdout, "%s: job %s, %d grid points x %d seeds = %d runs, into %s (spec %s)\n",
		path, s.Job, s.Points(), s.Seeds, s.Runs(), s.Out, s.Hash())
	return nil
}

// sweepLock holds an exclusive lock on a sweep folder, so that two processes never write one
// journal.
type sweepLock struct{ f *os.File }

func lockFolder(dir string) (*sweepLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is being written by another aim sweep (%v)", dir, err)
	}
	return &sweepLock{f}, nil
}

func (l *sweepLock) release() {
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// sweepManifest is results.json of a sweep folder.
type sweepManifest struct {
	Program    string         `json:"program"`
	Command    string         `json:"command"`
	Version    string         `json:"version"`
	Go         string         `json:"go"`
	Host       string         `json:"host"`
	Device     string         `json:"device"`
	CUDA       string         `json:"cuda,omitempty"` // the driver and GPUs seen, for jobs that can use a GPU
	Args       []string       `json:"args"`
	SpecFile   string         `json:"spec_file"`
	Spec       string         `json:"spec"`
	SpecHash   string         `json:"spec_hash"`
	Job        string         `json:"job"`
	Shard      string         `json:"shard"`
	Shards     int            `json:"shards"`
	Runs       int            `json:"runs"`         // in the sweep
	ShardRuns  int            `json:"shard_runs"`   // in this folder's shard
	Done       int            `json:"done"`         // finished runs in this folder
	Failed     []string       `json:"failed"`       // runs that finished without a value (diverged, unconverged)
	Complete   bool           `json:"complete"`     // every run of the shard is done and results.csv written
	Sessions   []sweepSession `json:"sessions"`     // each invocation that worked on the folder
	Wall       float64        `json:"wall_seconds"` // summed over sessions
	Rerun      []string       `json:"rerun,omitempty"`
	RerunNote  string         `json:"rerun_note,omitempty"`
	Outputs    []string       `json:"outputs"`
	Parameters map[string]any `json:"parameters"`
}

type sweepSession struct {
	Started string  `json:"started"`
	Wall    float64 `json:"wall_seconds"`
	Runs    int     `json:"runs"` // runs finished in this session
	Host    string  `json:"host"`
	Version string  `json:"version"`
}

// maxRerunLines bounds the per-run command lines a manifest lists.
const maxRerunLines = 10000

func readSweepManifest(path string) (*sweepManifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m sweepManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

func writeSweepManifest(path string, m *sweepManifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return sweep.WriteFileAtomic(path, append(data, '\n'))
}

// newSweepManifest fills what every manifest of the plan records.
func (p *sweepPlan) newManifest(command string, sh sweep.Shard, args []string) *sweepManifest {
	host, _ := os.Hostname()
	s := p.spec
	m := &sweepManifest{Program: "aim", Command: command, Version: programVersion(), Go: runtime.Version(), Host: host,
		Device: p.device, Args: args, SpecFile: p.path, Spec: string(p.src), SpecHash: s.Hash(), Job: s.Job,
		Shard: sh.String(), Shards: max(1, sh.N), Runs: s.Runs(), Failed: []string{}, Sessions: []sweepSession{}}
	if p.job.device && s.Device != "cpu" {
		m.CUDA = strings.TrimSpace(cuda.Probe().String())
	}
	grid := map[string]any{}
	for _, a := range s.Grid {
		grid[a.Name] = a.Values
	}
	m.Parameters = map[string]any{"job": s.Job, "seed": s.Seed, "seeds": s.Seeds, "device": s.Device,
		"parallel": s.Parallel, "workers": s.Workers, "threads": s.Threads, "grid": grid}
	for k := 0; k < s.Runs(); k++ {
		if sh.Has(k) {
			m.ShardRuns++
			if len(m.Rerun) < maxRerunLines {
				m.Rerun = append(m.Rerun, p.rerun(s.Run(k)))
			}
		}
	}
	if m.ShardRuns > maxRerunLines {
		m.RerunNote = fmt.Sprintf("the first %d of %d runs; run k is the command of its grid point with --seed %d + k mod %d", maxRerunLines, m.ShardRuns, s.Seed, s.Seeds)
	}
	return m
}

func runSweepRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("aim sweep run", flag.ContinueOnError)
	shardSpec := fs.String("shard", "", "run only shard i of n (i/n, 0 <= i < n): the runs whose index is i mod n")
	quiet := fs.Bool("quiet", false, "no line per finished run")
	path, err := sweepFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	var sh sweep.Shard
	if *shardSpec != "" {
		if sh, err = sweep.ParseShard(*shardSpec); err != nil {
			return usageError{err}
		}
	}
	plan, err := loadSweep(path, true)
	if err != nil {
		return err
	}
	s := plan.spec
	dir := sh.Folder(s.Out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("out %s: %v", dir, err)
	}
	lock, err := lockFolder(dir)
	if err != nil {
		return err
	}
	defer lock.release()
	manPath := filepath.Join(dir, "results.json")
	man := plan.newManifest("sweep run", sh, append([]string{"sweep", "run"}, args...))
	if old, err := readSweepManifest(manPath); err == nil {
		if old.SpecHash != man.SpecHash {
			return usagef("%s holds the results of another sweep (spec %s, this file %s): use another out, or remove the folder", dir, old.SpecHash, man.SpecHash)
		}
		man.Sessions, man.Wall = old.Sessions, old.Wall
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	journal, recs, warning, err := sweep.OpenJournal(filepath.Join(dir, "journal.csv"))
	if err != nil {
		return err
	}
	defer journal.Close()
	if warning != "" {
		fmt.Fprintln(stderr, "aim sweep: warning:", warning)
	}
	done := map[int]bool{}
	for _, r := range recs {
		if err := checkRecord(s, sh, r); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, "journal.csv"), err)
		}
		done[r.Run] = true
	}
	var todo []sweep.Run
	for k := 0; k < s.Runs(); k++ {
		if sh.Has(k) && !done[k] {
			todo = append(todo, s.Run(k))
		}
	}
	start := time.Now()
	session := sweepSession{Started: start.UTC().Format(time.RFC3339), Host: man.Host, Version: man.Version}
	man.Sessions = append(man.Sessions, session)
	man.Done = len(done)
	if err := writeSweepManifest(manPath, man); err != nil {
		return err
	}
	// What a killed session left: runs in flight and half-written temporary files.
	inflight := filepath.Join(dir, ".inflight")
	os.RemoveAll(inflight)
	if stale, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*")); len(stale) > 0 {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	if !*quiet {
		fmt.Fprintf(stderr, "aim sweep: %s, shard %s: %d runs, %d done, %d to go, %d at a time\n", path, sh, man.ShardRuns, len(done), len(todo), s.Parallel)
	}
	finished, runErr := plan.execute(todo, journal, inflight, man.ShardRuns-len(todo), man.ShardRuns, *quiet, stderr)
	os.RemoveAll(inflight)
	session.Wall, session.Runs = time.Since(start).Seconds(), finished
	man.Sessions[len(man.Sessions)-1] = session
	man.Wall += session.Wall
	man.Done = len(done) + finished
	if runErr != nil {
		if err := writeSweepManifest(manPath, man); err != nil {
			return err
		}
		return fmt.Errorf("%w (%d of %d runs done; run the same command again to resume)", runErr, man.Done, man.ShardRuns)
	}
	// Every run is done: the table in grid order, then the manifest.
	_, recs, _, err = sweep.OpenJournal(filepath.Join(dir, "journal.csv"))
	if err != nil {
		return err
	}
	return finishSweep(dir, journal.Columns(), recs, man, stdout)
}

// checkRecord verifies that a journal line belongs to this sweep and shard.
func checkRecord(s *sweep.Spec, sh sweep.Shard, r sweep.Record) error {
	if r.Run >= s.Runs() {
		return fmt.Errorf("run %d is not in the sweep (%d runs)", r.Run, s.Runs())
	}
	if want := s.Run(r.Run); want.Point != r.Point || want.Seed != r.Seed {
		return fmt.Errorf("run %d is recorded at point %d seed %d, the sweep file has point %d seed %d", r.Run, r.Point, r.Seed, want.Point, want.Seed)
	}
	if !sh.Has(r.Run) {
		return fmt.Errorf("run %d does not belong to shard %s", r.Run, sh)
	}
	return nil
}

// execute runs todo, parallel at a time, appending each finished run to the journal. It stops
// handing out runs at the first run that fails without a row, waits for those in flight, and
// returns how many finished and that error.
func (p *sweepPlan) execute(todo []sweep.Run, journal *sweep.Journal, inflight string, before, total int, quiet bool, stderr io.Writer) (int, error) {
	var (
		mu       sync.Mutex
		finished int
	)
	// One run per chunk on spec.Parallel goroutines (par.For): after a run fails without a row,
	// no new run starts, and the error of the earliest such run is returned.
	err := par.For(p.spec.Parallel, len(todo), par.NoState, func(_ struct{}, c int) error {
		r := todo[c]
		t0 := time.Now()
		cols, row, runErr := p.runOne(r, inflight)
		if runErr != nil && row == nil {
			return fmt.Errorf("run %d (%s, seed %d): %w", r.Index, p.describe(r.Point), r.Seed, runErr)
		}
		mu.Lock()
		defer mu.Unlock()
		failed := ""
		if runErr != nil {
			failed = firstLine(runErr.Error())
		}
		if err := journal.Append(cols, sweep.Record{Run: r.Index, Point: r.Point, Seed: r.Seed, Failed: failed, Fields: row}); err != nil {
			return err
		}
		finished++
		if !quiet {
			status := ""
			if runErr != nil {
				status = " without a value: " + firstLine(runErr.Error())
			}
			fmt.Fprintf(stderr, "aim sweep: [%d/%d] run %d (%s, seed %d) in %.2f s%s\n",
				before+finished, total, r.Index, p.describe(r.Point), r.Seed, time.Since(t0).Seconds(), status)
		}
		return nil
	})
	return finished, err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// runOne runs one run of the job in a folder of its own and returns the header and the one
// row its CSV holds. A run that wrote its row and still failed (a diverged or unconverged run,
// written without values) returns the row and the error.
func (p *sweepPlan) runOne(r sweep.Run, inflight string) ([]string, []string, error) {
	dir := filepath.Join(inflight, fmt.Sprintf("run-%d", r.Index))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	csvPath := filepath.Join(dir, "run.csv")
	var errBuf bytes.Buffer
	runErr := p.job.run(p.runArgs(r, csvPath), io.Discard, &errBuf)
	rows, err := readCSVFile(csvPath)
	if err != nil {
		if runErr == nil {
			runErr = err
		}
		return nil, nil, runErr
	}
	if len(rows) != 2 {
		return nil, nil, fmt.Errorf("the run wrote %d rows, want 1", len(rows)-1)
	}
	return rows[0], rows[1], runErr
}

// finishSweep writes results.csv (the command's columns, one row per run in run order) and
// the completed manifest of a folder whose runs are all recorded.
func finishSweep(dir string, columns []string, recs []sweep.Record, man *sweepManifest, stdout io.Writer) error {
	sort.Slice(recs, func(i, j int) bool { return recs[i].Run < recs[j].Run })
	rows := make([][]string, len(recs))
	man.Failed = []string{}
	for i, r := range recs {
		rows[i] = r.Fields
		if r.Failed != "" {
			man.Failed = append(man.Failed, fmt.Sprintf("run %d (point %d, seed %d): %s", r.Run, r.Point, r.Seed, r.Failed))
		}
	}
	var buf bytes.Buffer
	if columns == nil { // an empty shard
		columns = []string{}
	}
	if err := writeRows(&buf, columns, rows); err != nil {
		return err
	}
	csvPath := filepath.Join(dir, "results.csv")
	if err := sweep.WriteFileAtomic(csvPath, buf.Bytes()); err != nil {
		return err
	}
	man.Complete = true
	man.Done = len(recs)
	man.Outputs = []string{csvPath, filepath.Join(dir, "results.json"), filepath.Join(dir, "journal.csv")}
	if err := writeSweepManifest(filepath.Join(dir, "results.json"), man); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d rows) and %s\n", csvPath, len(rows), filepath.Join(dir, "results.json"))
	if len(man.Failed) > 0 {
		return fmt.Errorf("%d of %d runs failed and were written without their values (see failed in %s):\n  %s",
			len(man.Failed), len(recs), filepath.Join(dir, "results.json"), strings.Join(man.Failed[:min(10, len(man.Failed))], "\n  "))
	}
	return nil
}

func runSweepMerge(args []string, stdout, stderr io.Writer) error {
	path, err := sweepFlags(flag.NewFlagSet("aim sweep merge", flag.ContinueOnError), args, stderr)
	if err != nil {
		return err
	}
	plan, err := loadSweep(path, false)
	if err != nil {
		return err
	}
	s := plan.spec
	dirs, _ := filepath.Glob(filepath.Join(s.Out, "shard-*-of-*"))
	if len(dirs) == 0 {
		return usagef("no shard folders (shard-i-of-n) in %s", s.Out)
	}
	n := -1
	shards := map[int]string{}
	for _, d := range dirs {
		var i, m int
		if _, err := fmt.Sscanf(filepath.Base(d), "shard-%d-of-%d", &i, &m); err != nil {
			continue
		}
		if n >= 0 && m != n {
			return usagef("%s mixes shard counts: %s and a shard of %d", s.Out, filepath.Base(d), n)
		}
		n = m
		shards[i] = d
	}
	var problems []string
	var columns []string
	var all []sweep.Record
	for i := 0; i < n; i++ {
		d, ok := shards[i]
		if !ok {
			problems = append(problems, fmt.Sprintf("shard %d/%d: no folder %s", i, n, sweep.Shard{I: i, N: n}.Folder(s.Out)))
			continue
		}
		m, err := readSweepManifest(filepath.Join(d, "results.json"))
		if err != nil {
			problems = append(problems, fmt.Sprintf("shard %d/%d: %v", i, n, err))
			continue
		}
		if m.SpecHash != s.Hash() {
			return usagef("%s was written by another sweep (spec %s, this file %s): refusing to mix them", d, m.SpecHash, s.Hash())
		}
		data, err := os.ReadFile(filepath.Join(d, "journal.csv"))
		if err != nil {
			problems = append(problems, fmt.Sprintf("shard %d/%d: %v", i, n, err))
			continue
		}
		cols, recs, dropped, err := sweep.ReadJournal(data)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(d, "journal.csv"), err)
		}
		if dropped != "" {
			fmt.Fprintf(stderr, "aim sweep merge: warning: %s: ignoring the corrupt last %s\n", filepath.Join(d, "journal.csv"), dropped)
		}
		if cols != nil {
			if columns != nil && !slices.Equal(cols, columns) {
				return fmt.Errorf("%s: its columns differ from the other shards'", d)
			}
			columns = cols
		}
		for _, r := range recs {
			if err := checkRecord(s, sweep.Shard{I: i, N: n}, r); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(d, "journal.csv"), err)
			}
		}
		all = append(all, recs...)
	}
	have := map[int]int{}
	for _, r := range all {
		have[r.Run]++
	}
	var missing []string
	for k := 0; k < s.Runs(); k++ {
		switch have[k] {
		case 0:
			if len(missing) < 10 {
				missing = append(missing, fmt.Sprintf("run %d (%s, seed %d)", k, plan.describe(s.Run(k).Point), s.Run(k).Seed))
			}
		case 1:
		default:
			problems = append(problems, fmt.Sprintf("run %d is recorded %d times", k, have[k]))
		}
	}
	if n := s.Runs() - len(have); n > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d runs are missing, e.g. %s: run their shards again", n, s.Runs(), strings.Join(missing, "; ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("cannot merge %s:\n  %s", s.Out, strings.Join(problems, "\n  "))
	}
	man := plan.newManifest("sweep merge", sweep.Shard{}, append([]string{"sweep", "merge"}, args...))
	man.Shards = n
	man.Rerun, man.RerunNote = nil, "see each shard's results.json"
	for i := 0; i < n; i++ {
		if m, err := readSweepManifest(filepath.Join(shards[i], "results.json")); err == nil {
			man.Sessions = append(man.Sessions, m.Sessions...)
			man.Wall += m.Wall
			if i == 0 {
				man.Device = m.Device
			}
		}
	}
	return finishSweep(s.Out, columns, all, man, stdout)
}
