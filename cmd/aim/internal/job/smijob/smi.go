// Package smijob holds the jobs of the sequence multi-index model (SMI): aim smi se, smi
// thresholds, smi amp and smi sgd, with the configuration they share. It stands on the shared
// core, package job.
package smijob

import (
	"fmt"
	"math"
	"runtime"
	"strconv"

	"github.com/aimtheory/aim/cmd/aim/internal/grid"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/smi"
	smiamp "github.com/aimtheory/aim/engine/smi/amp"
	smise "github.com/aimtheory/aim/engine/smi/se"
)

// init registers the kinds of CSV the package's jobs write, for job.ReadTable.
func init() {
	job.RegisterKinds(SMISESchema.Def(), SMIAMPSchema.Def(), SMIAMPTraceSchema.Def(), SMISGDSchema.Def(), SMIThresholdsSchema.Def())
}

// SMI is the configuration every `aim smi` job shares: the architecture (L tied rank-1
// layers on M tokens, skip c, inverse temperature beta), the outputs and the goroutines.
type SMI struct {
	L, M      int
	C         float64 // skip strength (aim smi thresholds takes a grid of them instead)
	Beta      float64
	Out, Plot string // the CSV (its manifest goes beside it) and the figure ("" for none)
	Workers   int    // goroutines (0: all cores); the results do not depend on it

	job.Figure // the figure's size and title (--size, --title)
}

func defaultSMI(sub string) SMI {
	return SMI{L: 2, M: 2, C: 1, Beta: 1, Out: "results/smi-" + sub + ".csv", Plot: "results/smi-" + sub + ".png"}
}

// check validates the output paths and the worker count.
func (f *SMI) check() error {
	if f.Workers < 0 {
		return job.Inputf("--workers %d: need 0 (all cores) or more", f.Workers)
	}
	if err := job.CheckPlot(f.Plot); err != nil {
		return err
	}
	if err := job.CheckCSV(f.Out); err != nil {
		return err
	}
	return nil
}

// channel returns the deep attention channel at skip c; with posterior it also checks that the
// channel's posterior can be integrated (M = 2; L <= 3 by the cubature, L = 3 and 4 by
// sampling). Every problem is bad input.
func (f *SMI) channel(c float64, posterior bool) (*smi.Deep, error) {
	ch, err := smi.NewDeep(f.L, f.M, c, f.Beta)
	if err != nil {
		return nil, job.InputError{Err: err}
	}
	if posterior {
		if err := ch.CheckPosterior(f.L >= 3); err != nil {
			return nil, job.InputError{Err: err}
		}
	}
	return ch, nil
}

// theory checks the shared fields for the state evolution and GAMP (an invertible channel)
// and parses the alpha grid.
func (f *SMI) theory(alphaSpec string) (*smi.Deep, []float64, error) {
	ch, err := f.channel(f.C, true)
	if err != nil {
		return nil, nil, err
	}
	if err := f.check(); err != nil {
		return nil, nil, err
	}
	alphas, err := parseAlphas(alphaSpec)
	if err != nil {
		return nil, nil, err
	}
	return ch, alphas, nil
}

// params returns the shared fields for a manifest.
func (f *SMI) params() map[string]any {
	return map[string]any{"L": f.L, "M": f.M, "beta": f.Beta, "workers": f.Workers}
}

// workers is the number of goroutines Workers asks for.
func (f *SMI) workers() int {
	if f.Workers > 0 {
		return f.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// model returns the SMI teacher of one run.
func (f *SMI) model(D int, alpha float64, seed uint64) smi.Params {
	return smi.Params{D: D, Alpha: alpha, M: f.M, L: f.L, C: f.C, Beta: f.Beta, Seed: seed}
}

// parseAlphas parses a grid of sample complexities, all > 0.
func parseAlphas(spec string) ([]float64, error) {
	alphas, err := grid.Parse(spec)
	if err != nil {
		return nil, job.Inputf("--alpha: %v", err)
	}
	for _, a := range alphas {
		if !(a > 0) {
			return nil, job.Inputf("--alpha %s: every alpha must be > 0, got %g", spec, a)
		}
	}
	return alphas, nil
}

// SMISEOptions are the options of the SMI state evolution that `aim smi se` and
// `aim smi thresholds` share.
type SMISEOptions struct {
	Samples    int     // Monte Carlo (xi, eta) draws of the channel average per iteration
	Seed       uint64  // seed of those draws
	MonteCarlo bool    // plain pseudo-random draws instead of randomised quasi-Monte Carlo
	Epsilon    float64 // ridge of the channel variance
	Damping    float64 // theta in [0, 1), the weight on the old iterate; NaN: the authors' value (smise.AuthorsDamping)
	MaxIter    int
	Tol        float64
	// QuadMaxEval is the evaluation budget of each sample's channel integral (0:
	// smi.DefaultDeepMaxEval); the L = 3 error it buys is tabled in
	// docs/validation/smi-channel.md.
	QuadMaxEval int
	SMIIntegrals
}

// The default number of draws per sampled channel integral of `aim smi se` and
// `smi thresholds` (the state evolution), and of `aim smi amp` (GAMP) at L = 3 and 4, as the
// flags' help states them.
var (
	SMISEDefaultDraws  = strconv.Itoa(smise.DefaultDraws)
	SMIAMPDefaultDraws = fmt.Sprintf("%d at L = 3, %d at L = 4", smiamp.DefaultDraws(3), smiamp.DefaultDraws(4))
)

// SMIIntegrals chooses how the L >= 3 channel integrals are taken, for `aim smi se`,
// `smi thresholds` and `smi amp`: Draws importance-sampling draws per integral (0: the
// engine's default), or with Cubature the budget-capped adaptive cubature.
type SMIIntegrals struct {
	Draws    int
	Cubature bool
	// Device runs the sampled integrals (device.DeepSampler): cpu (the default: the CPU twin
	// in this process) or one device of OpenDevice's names (cuda, cuda:I, auto; a group is
	// refused). The estimates are the same on every device to rounding.
	Device string
}

// DefaultSMIDevice is the default of SMIIntegrals.Device.
const DefaultSMIDevice = "cpu"

// check validates --draws and --cubature for L layers; max bounds the draws.
func (o SMIIntegrals) check(L, def, max int) error {
	switch {
	case o.Draws < 0 || o.Draws > max || (o.Draws > 0 && o.Draws < 4):
		return job.Inputf("--draws %d: need 0 (the default, %d) or 4 <= draws <= %d", o.Draws, def, max)
	case o.Draws > 0 && o.Cubature:
		return job.Inputf("--draws %d with --cubature: the cubature takes no draws (choose one)", o.Draws)
	case (o.Draws > 0 || o.Cubature) && L < 3:
		return job.Inputf("--draws and --cubature choose the L >= 3 channel integrals; L = %d always uses the cubature", L)
	case o.Cubature && L > smi.MaxDeepLayers:
		return job.Inputf("--cubature: L = %d has no cubature (it stops at L = %d, 4 dimensions); its integrals are sampled (--draws)", L, smi.MaxDeepLayers)
	case o.Device == "":
		return job.Inputf("--device is empty: need cpu, cuda, cuda:I or auto")
	case o.Device != DefaultSMIDevice && (L < 3 || o.Cubature):
		return job.Inputf("--device %s runs the L >= 3 sampled channel integrals; with L = %d%s there are none (the cubature runs on the CPU)", o.Device, L,
			map[bool]string{true: " and --cubature", false: ""}[o.Cubature])
	}
	return nil
}

// open opens the device of the sampled integrals: nil for cpu (the engine's CPU twin in this
// process), else the one device OpenDevice gives for the name (workers goroutines where it is
// a CPU). A name that cannot be opened, or a group of several, is bad input.
func (o SMIIntegrals) open(workers int) (*job.Device, error) {
	if o.Device == DefaultSMIDevice {
		return nil, nil
	}
	d, err := job.OpenDevice(o.Device, workers, 0)
	if err != nil {
		return nil, err
	}
	if d.Group.Len() != 1 {
		d.Close()
		return nil, job.Inputf("--device %s: the sampled integrals run on one device, not a group of %d", o.Device, d.Group.Len())
	}
	return d, nil
}

// engineDevice returns what the engine's Options.Device takes: nil for the in-process twin.
func engineDevice(d *job.Device) device.Device {
	if d == nil {
		return nil
	}
	return d.Group.Lead()
}

// where says where the sampled integrals run, for the manifests' device: empty for cpu.
func (o SMIIntegrals) where() string {
	if o.Device == DefaultSMIDevice {
		return ""
	}
	return "; the sampled channel integrals on --device " + o.Device
}

// draws returns the engine's number of draws: 0 with --cubature, else --draws or def.
func (o SMIIntegrals) draws(def int) int {
	switch {
	case o.Cubature:
		return 0
	case o.Draws > 0:
		return o.Draws
	}
	return def
}

// addParams adds the choice to a manifest's parameters.
func (o SMIIntegrals) addParams(p map[string]any) {
	p["draws"], p["cubature"], p["device"] = o.Draws, o.Cubature, o.Device
	p["draws_note"] = "0: the default (L = 3, 4 sample their channel integrals; L = 1, 2 use the cubature)"
}

// checkQuadMaxEval validates --quad-max-eval, shared by `aim smi se`, `smi thresholds` and `smi amp`.
func checkQuadMaxEval(n int) error {
	if n < 0 {
		return job.Inputf("--quad-max-eval %d: need 0 (the default budget) or more", n)
	}
	return nil
}

func defaultSMISEOptions() SMISEOptions {
	o := smise.DefaultOptions(2)
	return SMISEOptions{Samples: o.Samples, Seed: o.Seed, Epsilon: o.Epsilon, Damping: math.NaN(), MaxIter: o.MaxIter, Tol: o.Tol, SMIIntegrals: SMIIntegrals{Device: DefaultSMIDevice}}
}

// check validates the options for L layers.
func (o *SMISEOptions) check(L int) error {
	switch {
	case o.Samples < 1:
		return job.Inputf("--samples %d: need at least 1", o.Samples)
	case !math.IsNaN(o.Damping) && !(o.Damping >= 0 && o.Damping < 1):
		return job.Inputf("--damping %g: need 0 <= damping < 1, the weight on the old iterate (0: undamped), or auto", o.Damping)
	case !(o.Epsilon >= 0 && o.Epsilon < 1):
		return job.Inputf("--epsilon %g: need 0 <= epsilon < 1", o.Epsilon)
	case o.MaxIter < 1:
		return job.Inputf("--max-iter %d: need at least 1", o.MaxIter)
	case !(o.Tol > 0) || math.IsInf(o.Tol, 0):
		return job.Inputf("--tol %g: need a positive tolerance", o.Tol)
	}
	if err := o.SMIIntegrals.check(L, smise.DefaultDraws, smise.MaxDraws); err != nil {
		return err
	}
	return checkQuadMaxEval(o.QuadMaxEval)
}

// engine returns the engine's options for L layers on workers goroutines: the damping theta
// (the weight on the old iterate) as given, or the authors' for auto (NaN).
func (o *SMISEOptions) engine(L, workers int) smise.Options {
	e := smise.DefaultOptions(L)
	e.Samples, e.Seed, e.MonteCarlo, e.Epsilon, e.MaxIter, e.Tol = o.Samples, o.Seed, o.MonteCarlo, o.Epsilon, o.MaxIter, o.Tol
	e.QuadMaxEval = o.QuadMaxEval
	e.Draws = o.draws(e.Draws)
	e.Damping = smise.AuthorsDamping(L)
	if !math.IsNaN(o.Damping) {
		e.Damping = o.Damping
	}
	e.Workers = workers
	return e
}

// addParams adds the options to a manifest's parameters.
func (o *SMISEOptions) addParams(p map[string]any) {
	var damping any = o.Damping
	if math.IsNaN(o.Damping) {
		damping = "auto"
	}
	for k, v := range map[string]any{"samples": o.Samples, "seed": o.Seed, "monte_carlo": o.MonteCarlo,
		"epsilon": o.Epsilon, "damping": damping, "damping_note": "theta, the weight on the old iterate; auto: the authors' 0.2 (L = 2) or 0.4 (L >= 3)",
		"init": smise.DefaultOptions(2).Init, "max_iter": o.MaxIter, "tol": o.Tol, "quad_max_eval": o.QuadMaxEval} {
		p[k] = v
	}
	o.SMIIntegrals.addParams(p)
}

// jsonFloats turns NaN and infinities (no threshold) into null.
func jsonFloats(xs []float64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out[i] = nil
		} else {
			out[i] = x
		}
	}
	return out
}

// stabilityAlphas returns the stability thresholds alpha_l = 1/F_l (+Inf where F_l <= 0),
// computed here from the engine's F.
func stabilityAlphas(F []float64) []float64 {
	out := make([]float64, len(F))
	for l, f := range F {
		out[l] = math.Inf(1)
		if f > 0 {
			out[l] = 1 / f
		}
	}
	return out
}
