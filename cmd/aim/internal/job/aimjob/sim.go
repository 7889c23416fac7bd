package aimjob

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/cuda"
	"github.com/aimtheory/aim/engine/aim"
)

// Sim is the configuration the AIM simulations (amp, gd) share beside Model: the dimension,
// the seeds, the device and the trace.
type Sim struct {
	Model
	D       int    // token dimension
	Seeds   int    // teachers and data sets per (rho, alpha)
	Seed    uint64 // run s uses seed Seed + s
	Device  string // auto, cpu, cpu:K, cuda, cuda:I, cuda:I,J,... or cuda:all
	Workers int    // CPU goroutines (0: all cores)
	Threads int    // threads of the CPU backend's BLAS library (0: all cores)
	Trace   string // a CSV of every iteration or step ("" for none)
	Tokens         // stored or streamed tokens, and the memory cap
	// Precision is the arithmetic of the large contractions (device.ParsePrecision: fp64,
	// fp32, tf32, bf16x9; "" is fp64); Validate parses it into prec.
	Precision string
	prec      device.Precision
	// Points is the lattice rule of each sample's g_out for hardmax and the noisy softmax at
	// T > 2: Points points of each of 8 shifts, every point used (channel.Spec.Points with
	// Tol < 0).
	Points int
}

// DefaultSimPoints is Sim.Points unless --points says otherwise: 64 points x 8 shifts, about
// 0.3 ms a sample at T = 3 on one core. At D = 60, alpha = 0.2 GAMP-RIE ends within 0.001 of
// the run with 256 points (0.2549 against 0.2541), against 18 ms a sample for the channel's
// default rule (1024 points, adaptive to 1e-3).
const DefaultSimPoints = 64

func defaultSim(command string, D, seeds int) Sim {
	return Sim{Model: defaultModel(command), D: D, Seeds: seeds, Seed: 1, Device: "auto", Tokens: Tokens{Mode: "auto"}, Points: DefaultSimPoints, Precision: "fp64"}
}

// SoftmaxSim is the simulation of the softmax channel at one (rho, alpha), as `aim amp` and
// `aim gd` would run it, for planning its memory (Sim.PlanTokens) and drawing its data.
func SoftmaxSim(T int, beta, rho, alpha float64, D int, seed uint64, tokens Tokens) Sim {
	return Sim{Model: Model{Channel: "softmax", T: T, Beta: beta, rhos: []float64{rho}, alphas: []float64{alpha}},
		D: D, Seed: seed, Tokens: tokens}
}

// validateSim checks the shared simulation fields and every (rho, alpha) point's sizes.
func (c *Sim) validateSim() error {
	switch {
	case c.D < 2:
		return job.Inputf("--D %d: need D >= 2", c.D)
	case c.Seeds < 1:
		return job.Inputf("--seeds %d: need at least 1", c.Seeds)
	case c.Workers < 0:
		return job.Inputf("--workers %d: need 0 (all cores) or more", c.Workers)
	case c.Threads < 0:
		return job.Inputf("--threads %d: need 0 (all cores) or more", c.Threads)
	case c.Points < 1:
		return job.Inputf("--points %d: need at least 1 lattice point per shift", c.Points)
	}
	if err := c.ValidateTokens(); err != nil {
		return err
	}
	var err error
	if c.prec, err = device.ParsePrecision(c.Precision); err != nil {
		return job.Inputf("--precision: %v", err)
	}
	if strings.HasPrefix(c.Device, "cuda") && !slices.Contains(cuda.Precisions, c.prec) {
		// Known before a GPU is opened: the precisions the CUDA backend declares.
		return job.Inputf("--precision %v on --device %s: precision %v is not supported on this device yet (it computes fp64); use --device cpu", c.prec, c.Device, c.prec)
	}
	if c.Trace != "" && !strings.HasSuffix(strings.ToLower(c.Trace), ".csv") {
		return job.Inputf("--trace %q: the trace file must end in .csv", c.Trace)
	}
	for _, r := range c.rhos {
		for _, a := range c.alphas {
			if err := c.params(r, a, 0).Validate(); err != nil {
				return job.Inputf("%v", err)
			}
		}
	}
	return nil
}

// params returns the model of one run.
func (c *Sim) params(rho, alpha float64, seed uint64) aim.Params {
	ch := c.channelSpec()
	if c.lattice() {
		ch.Points, ch.Tol = c.Points, -1
	}
	return aim.Params{D: c.D, Alpha: alpha, Rho: rho, Channel: ch, Seed: seed, Teacher: c.teacher}
}

// lattice reports whether the channel estimates each g_out on a lattice rule (Points): hardmax
// and the noisy softmax at T > 2.
func (c *Sim) lattice() bool { return c.T > 2 && (c.Channel == "hardmax" || c.Noise > 0) }

// simParams returns the shared fields for a manifest.
func (c *Sim) simParams() map[string]any {
	p := c.Model.params()
	p["D"], p["seeds"], p["seed"] = c.D, c.Seeds, c.Seed
	p["precision"] = c.prec.String()
	if c.lattice() {
		p["points"] = c.Points
	}
	return p
}

// alphaRange returns the smallest and the largest alpha of the grid.
func (c *Sim) alphaRange() (amin, amax float64) {
	amin, amax = math.Inf(1), 0.0
	for _, a := range c.alphas {
		amax, amin = math.Max(amax, a), math.Min(amin, a)
	}
	return amin, amax
}

// simJob is a validated simulation with its device open, the SE channel of its model and the
// token mode of its grid.
type simJob struct {
	dev  *job.Device
	ch   aim.Channel
	plan TokenPlan
}

// runSimJob opens a simulation's device (open), says which, chooses stored or streamed tokens
// and refuses runs that fit in neither (planner), makes the SE channel (everything that can
// refuse the job before it writes or computes anything), then, once env's outputs are open,
// runs it and closes the device.
func runSimJob[R any](c *Sim, env job.Env, open func() (*job.Device, error), planner func(*job.Device) (TokenPlan, error), run func(simJob) (R, error)) (R, error) {
	var none R
	dev, err := open()
	if err != nil {
		return none, err
	}
	defer dev.Close()
	if err := dev.CheckPrecision(c.prec); err != nil {
		return none, err
	}
	env.Notef("%s", dev.Note)
	pl, err := planner(dev)
	if err != nil {
		return none, err
	}
	env.Notef("%s", pl.Note)
	var ch aim.Channel // nil where the model has no SE yet
	if c.hasSE() {
		if ch, err = c.theoryChannel(); err != nil {
			return none, job.InputError{Err: err}
		}
	}
	if err := env.Begin(); err != nil {
		return none, err
	}
	return run(simJob{dev: dev, ch: ch, plan: pl})
}

// tokenParams returns the manifest fields of the token mode.
func (c *Sim) tokenParams(pl TokenPlan) map[string]any {
	m := map[string]any{"tokens": c.Mode, "max_memory": c.MaxMemory, "tokens_used": "stored"}
	if pl.Streamed {
		m["tokens_used"], m["chunk"] = "streamed", pl.Chunk
	}
	return m
}

// simRun is one run of a simulation grid: its point, its seed, its model and the SE's mmse at
// the point.
type simRun struct {
	rho, alpha, mmse float64
	seed             uint64
	p                aim.Params
}

// eachRun calls run for every (rho, alpha, seed) of the grid, in the CSV's order, with the SE
// solved once per point (ch; NaN when ch is nil). A run's error wrapping diverged is recorded
// in failed and the grid goes on; any other error stops it. Once ctx is cancelled no run
// starts any more (the one in flight ends first): the runs left are appended to missing and
// eachRun returns ErrInterrupted.
func (c *Sim) eachRun(ctx context.Context, ch aim.Channel, diverged error, failed *[]string, missing *[]job.Missing, run func(r simRun) error) error {
	done := 0
	for _, rho := range c.rhos {
		for _, alpha := range c.alphas {
			mmse := math.NaN()
			for s := 0; s < c.Seeds; s++ {
				seed := job.RunSeed(c.Seed, s)
				if ctx.Err() != nil {
					*missing = append(*missing, job.Missing{"rho": rho, "alpha": alpha, "seed": seed})
					continue
				}
				if s == 0 && ch != nil {
					mmse = c.seMMSE(ch, rho, alpha, c.D)
				}
				r := simRun{rho: rho, alpha: alpha, mmse: mmse, seed: seed, p: c.params(rho, alpha, seed)}
				if err := run(r); err != nil {
					if !errors.Is(err, diverged) {
						return err
					}
					*failed = append(*failed, fmt.Sprintf("rho %g alpha %g seed %d: %v", rho, alpha, seed, err))
				}
				done++
			}
		}
	}
	if len(*missing) > 0 {
		return job.Interrupted(done, done+len(*missing), "runs")
	}
	return nil
}
