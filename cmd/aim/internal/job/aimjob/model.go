// Package aimjob holds the jobs of the attention-indexed model (AIM): aim se (state evolution
// and its thresholds), aim amp (GAMP-RIE), aim gd (gradient descent), aim erm (the state
// evolution of empirical risk minimisation with weight decay) and aim thresholds, with
// the shared Model and Sim configurations and the token plans (stored or streamed) that bound a
// simulation's memory. It stands on the shared core, package job.
package aimjob

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/grid"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/rie"
)

// init registers the kinds of CSV the package's jobs write, for job.ReadTable.
func init() {
	job.RegisterKinds(SESchema.Def(), AMPSchema.Def(), GDSchema.Def(), AMPTraceSchema.Def(), GDTraceSchema.Def(), ThresholdsSchema.Def(),
		ERMSchema.Def(), ERMSpectrumSchema.Def())
}

// Model is the configuration every AIM job (se, amp, gd) shares: the channel, T, beta, the rho
// and alpha grids, and the outputs. Validate parses the grids.
type Model struct {
	Channel     string   // softmax, hardmax or linear (the quadratic network, T = 1)
	PaperCompat bool     // hardmax: the published channel formula
	T           int      // tokens per sequence
	TGiven      bool     // T was given explicitly (--T); otherwise the linear channel takes T = 1
	Beta        float64  // softmax inverse temperature
	Noise       float64  // label noise Delta >= 0 (softmax: se, amp, T <= channel.NoisyTMax; linear: every job): y = g(h) + sqrt(Delta) xi
	Rho         []string // rank ratios, each a value, list or range; none: the job's default
	Alpha       string   // the sample-complexity grid; "": the job's default (unless AlphaGiven)
	AlphaGiven  bool     // Alpha was given explicitly: an empty one is an error, not the default
	Out, Plot   string   // the CSV (its manifest goes beside it) and the figure ("" for none)
	Axes        string   // plot axes: auto, lin, logx, logy or loglog
	// Teacher is the law of the target S (--teacher): mp, the paper's ("" too), or
	// powerlaw:GAMMA (ParseTeacher); validate parses it.
	Teacher string
	// Dims is the list of D of a theory command (se, erm) at which a power-law teacher's
	// theory is solved (--D): its prior is the D eigenvalues, with no D-independent limit.
	// validateDims parses it; the simulations have their own D (Sim.D).
	Dims string

	job.Figure // the figure's size and title (--size, --title)

	rhos, alphas []float64
	teacher      aim.Teacher
	dims         []int
	// hardmaxAnyT admits hardmax with 2 < T <= 6: `aim amp` (GAMP-RIE) and `aim se` (the
	// curves where aim ships the channel's table, the threshold at every T).
	hardmaxAnyT bool
}

// LinearAlpha is the default alpha grid of the simulations (amp, gd) of the linear channel:
// below, near and at the perfect-recovery threshold rho - rho^2/2 = 0.375 of rho = 0.5.
const LinearAlpha = "0.1,0.2,0.3"

// defaultModel is the Model of the flags' defaults, with its outputs under results/.
func defaultModel(command string) Model {
	return Model{Channel: "softmax", T: 2, Beta: 1, Teacher: "mp", Out: "results/" + command + ".csv", Plot: "results/" + command + ".png", Axes: "auto"}
}

// Rhos returns the rho grid (after Validate).
func (m *Model) Rhos() []float64 { return m.rhos }

// Alphas returns the alpha grid (after Validate).
func (m *Model) Alphas() []float64 { return m.alphas }

// ParseTeacher parses --teacher: "mp" (or "", the zero value: the paper's teacher, spectrum
// Marchenko-Pastur) or "powerlaw:GAMMA" with GAMMA a finite number >= 0 (aim.Teacher).
func ParseTeacher(s string) (aim.Teacher, error) {
	spec := strings.TrimSpace(s)
	if spec == "" || spec == "mp" {
		return aim.Teacher{}, nil
	}
	g, ok := strings.CutPrefix(spec, "powerlaw:")
	if !ok {
		if spec == "powerlaw" {
			return aim.Teacher{}, job.Inputf("--teacher %s: the power law needs its exponent, powerlaw:GAMMA (e.g. powerlaw:1.25)", s)
		}
		return aim.Teacher{}, job.Inputf("--teacher %q: want mp or powerlaw:GAMMA", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(g), 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 0) {
		return aim.Teacher{}, job.Inputf("--teacher %s: the exponent GAMMA must be a finite number >= 0", s)
	}
	return aim.Teacher{PowerLaw: true, Gamma: v}, nil
}

// TeacherLaw returns the parsed teacher (after Validate).
func (m *Model) TeacherLaw() aim.Teacher { return m.teacher }

// Dimensions returns the D of a power-law teacher's theory (after validateDims; none for MP).
func (m *Model) Dimensions() []int { return m.dims }

// validateDims parses --D of a theory command (se, erm): a list of integers D >= 2, each at
// least one rank R = floor(rho D) at every rho, given with a power-law teacher only and
// needed by it.
func (m *Model) validateDims() error {
	m.dims = nil
	if !m.teacher.PowerLaw {
		if strings.TrimSpace(m.Dims) != "" {
			return job.Inputf("--D is the power-law teacher's dimension; the MP teacher's theory is D-independent")
		}
		return nil
	}
	if strings.TrimSpace(m.Dims) == "" {
		return job.Inputf("--teacher %s needs --D: the power-law teacher's theory is at a given dimension D (its prior is the D eigenvalues)", m.teacher)
	}
	vs, err := grid.Parse(m.Dims)
	if err != nil {
		return job.Inputf("--D: %v", err)
	}
	for _, v := range vs {
		D := int(v)
		switch {
		case v != math.Trunc(v) || v < 2 || v > 1<<20:
			return job.Inputf("--D %s: every D must be an integer >= 2, got %g", m.Dims, v)
		case slices.Contains(m.dims, D):
			return job.Inputf("--D %s: D = %d given twice", m.Dims, D)
		}
		for _, r := range m.rhos {
			if p := (aim.Params{D: D, Rho: r}); p.R() < 1 {
				return job.Inputf("--D %s: rho = %g at D = %d gives R = floor(rho D) = 0", m.Dims, r, D)
			}
		}
		m.dims = append(m.dims, D)
	}
	return nil
}

// theoryDims returns the D at which the theory is solved: the power law's, or one 0 for the MP
// teacher, whose theory has no D.
func (m *Model) theoryDims() []int {
	if m.teacher.PowerLaw {
		return m.dims
	}
	return []int{0}
}

// prior returns the teacher's law at (rho, D) as the state evolutions see it: MP(rho), or the
// power law's D eigenvalues (aim.Params.Prior).
func (m *Model) prior(rho float64, D int) rie.Prior {
	return aim.Params{D: D, Rho: rho, Teacher: m.teacher}.Prior()
}

// csvTeacher is the teacher column: mp or powerlaw:GAMMA (aim.Teacher.String).
func (m *Model) csvTeacher() string { return m.teacher.String() }

// csvD is the D column of the theory commands (se, erm): the power law's D, none (NaN, an
// empty cell) for the MP teacher, whose theory is D-independent.
func csvD(D int) float64 {
	if D == 0 {
		return math.NaN()
	}
	return float64(D)
}

// validate checks the shared fields: defaultRho is used when Rho is empty, and defaultAlpha
// when Alpha is empty and was not given (an explicitly empty Alpha is an error).
func (m *Model) validate(defaultRho []string, defaultAlpha string) error {
	m.rhos, m.alphas = nil, nil
	t, err := ParseTeacher(m.Teacher)
	if err != nil {
		return err
	}
	m.teacher = t
	switch m.Channel {
	case "softmax":
		if m.PaperCompat {
			return job.Inputf("--paper-compat applies to the hardmax channel only")
		}
	case "linear":
		if m.PaperCompat {
			return job.Inputf("--paper-compat applies to the hardmax channel only")
		}
		if !m.TGiven {
			m.T = 1
		}
		if m.T != 1 {
			return job.Inputf("--channel linear is the quadratic network, one token: --T %d, need --T 1", m.T)
		}
	case "hardmax":
		switch {
		case m.T == 2:
		case m.hardmaxAnyT && m.T > 2 && m.T <= channel.HardmaxTMax && !m.PaperCompat:
		case m.hardmaxAnyT && m.PaperCompat:
			return job.Inputf("hardmax --paper-compat is the published formula for T = 2 only (got --T %d)", m.T)
		case m.hardmaxAnyT && m.T > channel.HardmaxTMax:
			return job.Inputf("hardmax: --T %d, the largest supported is %d", m.T, channel.HardmaxTMax)
		default:
			return job.Inputf("hardmax is implemented for T = 2 only here (got --T %d); aim se and aim amp compute 3 <= T <= %d", m.T, channel.HardmaxTMax)
		}
	default:
		return job.Inputf("unknown channel %q (want softmax, hardmax or linear)", m.Channel)
	}
	if m.T < 2 && m.Channel != "linear" {
		return job.Inputf("--T %d: need T >= 2", m.T)
	}
	if !(m.Beta > 0) || math.IsInf(m.Beta, 0) {
		return job.Inputf("--beta %g: need 0 < beta < inf", m.Beta)
	}
	switch {
	case !(m.Noise >= 0) || math.IsInf(m.Noise, 0):
		return job.Inputf("--noise %g: the label noise variance Delta must be finite and >= 0", m.Noise)
	case m.Noise > 0 && m.Channel == "hardmax":
		return job.Inputf("--noise %g: label noise is implemented for the softmax and linear channels only", m.Noise)
	case m.Noise > 0 && m.Channel == "softmax" && m.T > channel.NoisyTMax:
		return job.Inputf("--noise %g with --T %d: the noisy softmax is implemented for 2 <= T <= %d", m.Noise, m.T, channel.NoisyTMax)
	}
	specs := m.Rho
	if len(specs) == 0 {
		specs = defaultRho
	}
	for _, spec := range specs {
		v, err := grid.Parse(spec)
		if err != nil {
			return job.Inputf("--rho: %v", err)
		}
		m.rhos = append(m.rhos, v...)
	}
	for _, r := range m.rhos {
		if !(r > 0) {
			return job.Inputf("--rho %g: need rho > 0", r)
		}
	}
	alpha := m.Alpha
	if m.AlphaGiven && strings.TrimSpace(alpha) == "" {
		return job.Inputf("--alpha: empty grid")
	}
	if m.Channel == "linear" && !m.AlphaGiven && alpha != "" {
		alpha = LinearAlpha // in place of the simulations' softmax grid, their flag's default
	}
	if alpha == "" {
		alpha = defaultAlpha
	}
	alphas, err := grid.Parse(alpha)
	if err != nil {
		return job.Inputf("--alpha: %v", err)
	}
	for _, a := range alphas {
		if !(a > 0) {
			return job.Inputf("--alpha %s: every alpha must be > 0, got %g", alpha, a)
		}
	}
	m.Alpha, m.alphas = alpha, alphas
	switch m.Axes {
	case "auto", "lin", "logx", "logy", "loglog":
	default:
		return job.Inputf("--axes %q: want auto, lin, logx, logy or loglog", m.Axes)
	}
	if err := job.CheckPlot(m.Plot); err != nil {
		return err
	}
	if err := job.CheckCSV(m.Out); err != nil {
		return err
	}
	return nil
}

// logAxes returns which axes of the plot are logarithmic.
func (m *Model) logAxes() (logx, logy bool) {
	axes := m.Axes
	if axes == "auto" {
		axes = "lin"
		if m.Channel == "hardmax" {
			axes = "loglog"
		}
	}
	return axes == "logx" || axes == "loglog", axes == "logy" || axes == "loglog"
}

// hasSE reports whether the state evolution of the model exists (every model but hardmax at a
// T > 2 without a shipped table): without it the simulations' SE column is empty and their
// figures have no SE line.
func (m *Model) hasSE() bool {
	return !(m.Channel == "hardmax" && m.T > 2 && !aim.HardmaxTTabulated(m.T))
}

// theoryChannel returns the channel for state evolution: aim.NewChannel of channelSpec.
func (m *Model) theoryChannel() (aim.Channel, error) {
	ch, err := aim.NewChannel(m.channelSpec())
	if err != nil && m.Channel == "hardmax" && m.T > 2 {
		return nil, fmt.Errorf("%w; `aim se --threshold` computes alpha-bar_c at 2 <= T <= %d", err, channel.HardmaxTMax)
	}
	return ch, err
}

// channelSpec returns the channel of the model, for the device operations and the theory.
func (m *Model) channelSpec() channel.Spec {
	kind := channel.KindSoftmax
	switch m.Channel {
	case "hardmax":
		kind = channel.KindHardmax
	case "linear":
		kind = channel.KindLinear
	}
	return channel.Spec{Kind: kind, T: m.T, Beta: m.Beta, PaperCompat: m.PaperCompat, Noise: m.Noise}
}

// csvChannel is the channel column of the CSVs.
func (m *Model) csvChannel() string {
	if m.PaperCompat {
		return m.Channel + "-paper"
	}
	return m.Channel
}

// csvBeta is the beta column: the value for softmax, none (NaN, an empty cell) for hardmax.
func (m *Model) csvBeta() float64 {
	if m.Channel == "softmax" {
		return m.Beta
	}
	return math.NaN()
}

// directions is K, the factor of alpha-bar = alpha K: T^2 + T - 2 (the directions the softmax
// observes, times two), and 2 for the linear channel, which observes its one field.
func (m *Model) directions() float64 {
	if m.Channel == "linear" {
		return 2
	}
	return float64(m.T*m.T + m.T - 2)
}

// params returns the shared fields for a manifest.
func (m *Model) params() map[string]any {
	p := map[string]any{"channel": m.Channel, "paper_compat": m.PaperCompat, "T": m.T, "rho": m.rhos, "alpha": m.Alpha, "teacher": m.teacher.String()}
	switch m.Channel {
	case "softmax":
		p["beta"] = m.Beta
		p["noise"] = m.Noise
	case "linear":
		p["noise"] = m.Noise
	}
	return p
}

// csvNoise is the noise column: Delta (0 when noiseless).
func (m *Model) csvNoise() float64 { return m.Noise }

// readSETable reads the `aim se` CSV of a simulation's --se: it must have the job's channel, T,
// beta, noise (a CSV without the noise column is noiseless) and teacher (without the column:
// mp), and a curve at each of its rho; a power-law teacher's at the simulation's dimension D.
func (m *Model) readSETable(path string, D int) (*table.Table, error) {
	t, err := job.ReadTable(path)
	if err != nil {
		return nil, job.Inputf("--se: %v", err)
	}
	if t.Kind != table.SE {
		return nil, job.Inputf("--se %s: an %s CSV, want one written by aim se", path, t.Kind)
	}
	beta := table.FormatFloat(m.csvBeta())
	have := map[string]bool{}
	for i := 0; i < t.Rows(); i++ {
		if t.S(i, "channel") != m.csvChannel() || t.S(i, "T") != strconv.Itoa(m.T) || t.S(i, "beta") != beta {
			return nil, job.Inputf("--se %s line %d: channel %s, T = %s, beta = %s; the command has %s, %d, %s",
				path, i+2, t.S(i, "channel"), t.S(i, "T"), t.S(i, "beta"), m.csvChannel(), m.T, beta)
		}
		noise := t.S(i, "noise")
		if noise == "" {
			noise = table.FormatFloat(0)
		}
		if noise != table.FormatFloat(m.csvNoise()) {
			return nil, job.Inputf("--se %s line %d: noise %s; the command has --noise %g", path, i+2, noise, m.Noise)
		}
		teacher := t.S(i, "teacher")
		if teacher == "" {
			teacher = aim.Teacher{}.String()
		}
		if teacher != m.csvTeacher() {
			return nil, job.Inputf("--se %s line %d: teacher %s; the command has --teacher %s", path, i+2, teacher, m.csvTeacher())
		}
		if !m.teacher.PowerLaw || t.V(i, "D") == float64(D) {
			have[t.S(i, "rho")] = true
		}
	}
	for _, r := range m.rhos {
		if !have[table.FormatFloat(r)] {
			if m.teacher.PowerLaw {
				return nil, job.Inputf("--se %s: no curve at rho = %g and D = %d (the power-law teacher's theory is at the runs' D)", path, r, D)
			}
			return nil, job.Inputf("--se %s: no curve at rho = %g", path, r)
		}
	}
	return t, nil
}
