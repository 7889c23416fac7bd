package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/grid"
	"github.com/aimtheory/aim/cmd/aim/internal/output"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/auto"
	"github.com/aimtheory/aim/engine/aim"
)

var errHelp = errors.New("help requested")

// listFlag collects a flag that may be repeated and may hold comma lists or ranges.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// modelFlags are the flags every AIM command shares: the channel, T, beta, the rho and alpha
// grids, and the outputs.
type modelFlags struct {
	channelName string
	paperCompat bool
	T           int
	beta        float64
	rhoSpecs    listFlag
	rhos        []float64
	alphaSpec   string
	alphas      []float64
	out, plot   string
	axes        string
	quiet       bool
}

func (m *modelFlags) register(fs *flag.FlagSet, command string) {
	fs.StringVar(&m.channelName, "channel", "softmax", "output channel: softmax or hardmax")
	fs.BoolVar(&m.paperCompat, "paper-compat", false, "hardmax: use the published channel formula (bivariate density in place of the CDF derivative) that the paper's curves come from")
	fs.IntVar(&m.T, "T", 2, "tokens per sequence (hardmax: 2 only)")
	fs.Float64Var(&m.beta, "beta", 1, "softmax inverse temperature")
	fs.Var(&m.rhoSpecs, "rho", "rank ratio rho = R/D: a value, list or range; repeatable (default 0.5)")
	fs.StringVar(&m.out, "out", "results/"+command+".csv", "CSV output (the manifest goes beside it as .json)")
	fs.StringVar(&m.plot, "plot", "results/"+command+".png", "plot output, .png or .svg; empty for none")
	fs.StringVar(&m.axes, "axes", "auto", "plot axes: auto, lin, logx, logy or loglog (auto: lin for softmax, loglog for hardmax)")
	fs.BoolVar(&m.quiet, "quiet", false, "no progress bar")
}

// parseFlags parses args, turning -h into errHelp and every other problem into a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// explicitlyEmpty reports whether the flag name was given with an empty value.
func explicitlyEmpty(fs *flag.FlagSet, name string) bool {
	empty := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name && strings.TrimSpace(f.Value.String()) == "" {
			empty = true
		}
	})
	return empty
}

// validate checks the shared flags: defaultRho is used when no --rho was given, and
// defaultAlpha when --alpha was not given at all (an explicitly empty --alpha is an error).
func (m *modelFlags) validate(fs *flag.FlagSet, defaultRho []string, defaultAlpha string) error {
	switch m.channelName {
	case "softmax":
		if m.paperCompat {
			return usagef("--paper-compat applies to the hardmax channel only")
		}
	case "hardmax":
		if m.T != 2 {
			return usagef("hardmax is implemented for T = 2 only (got --T %d): for T > 2 its channel is a Gaussian orthant probability of dimension T(T-1)", m.T)
		}
	default:
		return usagef("unknown channel %q (want softmax or hardmax)", m.channelName)
	}
	if m.T < 2 {
		return usagef("--T %d: need T >= 2", m.T)
	}
	if !(m.beta > 0) || math.IsInf(m.beta, 0) {
		return usagef("--beta %g: need 0 < beta < inf", m.beta)
	}
	specs := m.rhoSpecs
	if len(specs) == 0 {
		specs = defaultRho
	}
	for _, spec := range specs {
		v, err := grid.Parse(spec)
		if err != nil {
			return usagef("--rho: %v", err)
		}
		m.rhos = append(m.rhos, v...)
	}
	for _, r := range m.rhos {
		if !(r > 0) {
			return usagef("--rho %g: need rho > 0", r)
		}
	}
	if explicitlyEmpty(fs, "alpha") {
		return usagef("--alpha: empty grid")
	}
	if m.alphaSpec == "" {
		m.alphaSpec = defaultAlpha
	}
	alphas, err := grid.Parse(m.alphaSpec)
	if err != nil {
		return usagef("--alpha: %v", err)
	}
	for _, a := range alphas {
		if !(a > 0) {
			return usagef("--alpha %s: every alpha must be > 0, got %g", m.alphaSpec, a)
		}
	}
	m.alphas = alphas
	switch m.axes {
	case "auto", "lin", "logx", "logy", "loglog":
	default:
		return usagef("--axes %q: want auto, lin, logx, logy or loglog", m.axes)
	}
	if m.plot != "" {
		if _, err := figure.Format(m.plot); err != nil {
			return usageError{err}
		}
	}
	if !strings.EqualFold(strings.TrimSpace(m.out[max(0, len(m.out)-4):]), ".csv") {
		return usagef("--out %q: the results file must end in .csv", m.out)
	}
	return nil
}

// logAxes returns which axes of the plot are logarithmic.
func (m *modelFlags) logAxes() (logx, logy bool) {
	axes := m.axes
	if axes == "auto" {
		axes = "lin"
		if m.channelName == "hardmax" {
			axes = "loglog"
		}
	}
	return axes == "logx" || axes == "loglog", axes == "logy" || axes == "loglog"
}

// theoryChannel returns the channel for state evolution.
func (m *modelFlags) theoryChannel() (aim.Channel, error) {
	if m.channelName == "hardmax" {
		return aim.NewHardmax(m.T, m.paperCompat)
	}
	return aim.NewSoftmax(m.T, m.beta)
}

// deviceChannel returns the channel for the device operations.
func (m *modelFlags) deviceChannel() device.Channel {
	kind := device.Softmax
	if m.channelName == "hardmax" {
		kind = device.Hardmax
	}
	return device.Channel{Kind: kind, T: m.T, Beta: m.beta, PaperCompat: m.paperCompat}
}

// csvChannelName is the channel column of the CSVs.
func (m *modelFlags) csvChannelName() string {
	if m.paperCompat {
		return m.channelName + "-paper"
	}
	return m.channelName
}

// csvBeta is the beta column: the value for softmax, empty for hardmax.
func (m *modelFlags) csvBeta() string {
	if m.channelName == "softmax" {
		return num(m.beta)
	}
	return ""
}

// params returns the shared flags for a manifest.
func (m *modelFlags) params() map[string]any {
	p := map[string]any{"channel": m.channelName, "paper_compat": m.paperCompat, "T": m.T, "rho": m.rhos, "alpha": m.alphaSpec}
	if m.channelName == "softmax" {
		p["beta"] = m.beta
	}
	return p
}

// results are the pending output files of a command: the CSV, its manifest and the plot.
type results struct {
	files               output.Set
	csv, manifest, plot *output.Pending
}

// openResults opens the outputs before any work starts, so that an unwritable path fails at
// once with a usage error and nothing is computed.
func openResults(csvPath, plotPath string) (*results, error) {
	r := &results{}
	var err error
	if r.csv, err = r.files.Add(csvPath); err != nil {
		return nil, usageError{err}
	}
	if r.manifest, err = r.files.Add(output.ManifestPath(csvPath)); err != nil {
		r.files.Abort()
		return nil, usageError{err}
	}
	if plotPath != "" {
		if r.plot, err = r.files.Add(plotPath); err != nil {
			r.files.Abort()
			return nil, usageError{err}
		}
	}
	return r, nil
}

// finish writes the plot (if any) and the manifest, then commits every file; on an error it
// removes them all.
func (r *results) finish(f *figure.Figure, manifest map[string]any) error {
	if r.plot != nil && f != nil {
		format, _ := figure.Format(r.plot.Path())
		if err := f.Render(r.plot.File(), format); err != nil {
			r.files.Abort()
			return err
		}
	}
	outputs := make([]string, len(r.files))
	for i, p := range r.files {
		outputs[i] = p.Path()
	}
	manifest["outputs"] = outputs
	if err := output.WriteJSON(r.manifest, manifest); err != nil {
		r.files.Abort()
		return err
	}
	return r.files.Commit()
}

// summary is the line a command prints when its files are written.
func (r *results) summary(rows int, wall time.Duration) string {
	s := fmt.Sprintf("wrote %s (%d rows)", r.csv.Path(), rows)
	if r.plot != nil {
		s += ", " + r.plot.Path()
	}
	return s + fmt.Sprintf(", %s in %.2f s", r.manifest.Path(), wall.Seconds())
}

// baseManifest holds what every manifest records.
func baseManifest(command, deviceNote string, params map[string]any, start time.Time) map[string]any {
	host, _ := os.Hostname()
	return map[string]any{
		"program":      "aim",
		"command":      command,
		"version":      programVersion(),
		"go":           runtime.Version(),
		"host":         host,
		"device":       deviceNote,
		"args":         os.Args[1:],
		"parameters":   params,
		"started":      start.UTC().Format(time.RFC3339),
		"wall_seconds": time.Since(start).Seconds(),
	}
}

func num(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 12, 64)
}

func rhoKey(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }

func indexOf(xs []float64, x float64) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return 0
}

// complete writes the plot and the manifest, commits the outputs, prints the summary, and
// turns failed rows (unconverged or diverged, already written without values) into the
// command's error, so that it exits with status 1.
func (r *results) complete(stdout io.Writer, f *figure.Figure, manifest map[string]any, rows int, start time.Time, failed []string, what string) error {
	if err := r.finish(f, manifest); err != nil {
		return err
	}
	fmt.Fprintln(stdout, r.summary(rows, time.Since(start)))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d %s (written with converged=false and no values):\n  %s",
			len(failed), rows, what, strings.Join(failed, "\n  "))
	}
	return nil
}

// readCSVFile reads a whole CSV with its header.
func readCSVFile(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 1 {
		return nil, fmt.Errorf("%s: empty file", path)
	}
	return rows, nil
}

// checkMemory refuses a sweep, before anything is allocated, when its largest run needs more
// memory than the device has free. A run needs the larger of drawing its data
// (aim.Params.Bytes) and holding the data while the algorithm's own buffers (algo) live.
func checkMemory(dev device.Device, rhos, alphas []float64, params func(rho, alpha float64) aim.Params, algo func(aim.Params) uint64) error {
	var need uint64
	var at aim.Params
	for _, r := range rhos {
		for _, a := range alphas {
			p := params(r, a)
			if n := max(p.Bytes(), p.DataBytes()+algo(p)); n > need {
				need, at = n, p
			}
		}
	}
	if free := dev.Info().FreeBytes; need > free {
		return usagef("a run at D = %d, alpha = %g needs %s of %s memory, and %s is available",
			at.D, at.Alpha, device.Bytes(need), dev.Info().Name, device.Bytes(free))
	}
	return nil
}

// simFlags are the flags the simulation commands (amp, gd) share beside modelFlags: the
// dimension, the seeds and the device.
type simFlags struct {
	modelFlags
	D       int
	seeds   int
	seed    uint64
	device  string
	workers int
	threads int // threads of the CPU backend's BLAS library (0: all cores)
	trace   string
}

func (c *simFlags) registerSim(fs *flag.FlagSet, command string, defaultD, defaultSeeds int) {
	c.register(fs, command)
	fs.IntVar(&c.D, "D", defaultD, "token dimension")
	fs.IntVar(&c.seeds, "seeds", defaultSeeds, "teachers and data sets per (rho, alpha)")
	fs.Uint64Var(&c.seed, "seed", 1, "first seed: run s uses seed + s")
	fs.StringVar(&c.device, "device", "auto", "auto, cpu or cuda")
	fs.IntVar(&c.workers, "workers", 0, "CPU goroutines (0: all cores)")
	fs.IntVar(&c.threads, "threads", 0, "threads of the CPU backend's BLAS library, OpenBLAS or MKL (0: all cores)")
}

// openDevice opens the device called name with the CPU options of --workers and --threads.
func (c *simFlags) openDevice(name string) (device.Device, string, error) {
	return auto.OpenWith(name, cpu.Options{Workers: c.workers, Threads: c.threads})
}

// validateSim checks the shared simulation flags and every (rho, alpha) point's sizes.
func (c *simFlags) validateSim() error {
	switch {
	case c.D < 2:
		return usagef("--D %d: need D >= 2", c.D)
	case c.seeds < 1:
		return usagef("--seeds %d: need at least 1", c.seeds)
	case c.workers < 0:
		return usagef("--workers %d: need 0 (all cores) or more", c.workers)
	case c.threads < 0:
		return usagef("--threads %d: need 0 (all cores) or more", c.threads)
	}
	if c.trace != "" && !strings.HasSuffix(strings.ToLower(c.trace), ".csv") {
		return usagef("--trace %q: the trace file must end in .csv", c.trace)
	}
	for _, r := range c.rhos {
		for _, a := range c.alphas {
			if err := c.params(r, a, 0).Validate(); err != nil {
				return usagef("%v", err)
			}
		}
	}
	return nil
}

// params returns the model of one run.
func (c *simFlags) params(rho, alpha float64, seed uint64) aim.Params {
	return aim.Params{D: c.D, Alpha: alpha, Rho: rho, Channel: c.deviceChannel(), Seed: seed}
}
