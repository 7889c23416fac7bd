package aimjob

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/grid"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/erm"
	"github.com/aimtheory/aim/engine/aim/se"
)

// ERMAlpha is the default alpha grid of `aim erm`: past alpha_PR of every rho (at most 1/2),
// where the ERM lines of different lambda part.
const ERMAlpha = "0.02:1:50"

// ERMSoftmaxAlpha is the default alpha grid of `aim erm --channel softmax`: past alpha_c of
// T = 2 at every rho (2/K times the linear channel's).
const ERMSoftmaxAlpha = "0.02:0.3:15"

// ERMWeightDecay is the default list of the weight decays of `aim erm`.
const ERMWeightDecay = "0,0.01,0.1,1"

// SpectrumPoints is the number of points of the grid on which `aim erm --spectrum` writes the
// density of each spectrum.
const SpectrumPoints = 400

// EigenvalueCut is the eigenvalue below which an eigenvalue of --eigenvalues counts as zero: it
// is left out of the histogram, and its share is set beside the predicted atom.
const EigenvalueCut = 1e-6

// ERMConfig is the configuration of `aim erm`: the state evolution of empirical risk
// minimisation with weight decay lambda (nuclear-norm regularisation of S, or ridge) in the
// quadratic network, the AIM's linear channel at T = 1, or the softmax AIM (package erm),
// beside the Bayes-optimal error.
type ERMConfig struct {
	Model
	WeightDecay   string  // the lambdas >= 0: a list or range; 0 is the limit lambda -> 0+
	Penalty       string  // the regulariser: nuclear (lambda Tr S over PSD S) or ridge (lambda ||S||_F^2)
	Spectrum      float64 // the alpha of the spectrum file (with SpectrumGiven)
	SpectrumGiven bool    // --spectrum was given: write <name>_spectrum.csv and its figure
	GD            string  // an `aim gd` CSV whose points the figure draws ("" for none)
	Eigenvalues   string  // a CSV of students' eigenvalues (aim gd --spectrum) drawn beside the spectrum
	Tol           float64 // SE convergence tolerance (ERM; the Bayes-optimal SE uses se.DefaultOptions)
	MaxIter       int     // SE iteration cap
	Damping       float64 // SE damping theta in [0, 1)
	Accelerate    bool    // the solver's Aitken jumps (no flag: the engine's default)
	Samples       int     // Monte Carlo draws of the softmax channel's average (erm.Problem.Samples)
	Workers       int     // points solved in parallel (0: all cores; Validate sets it)

	lambdas []float64
	penalty erm.Penalty
	gdTable *table.Table
	eigen   []eigenvalue
}

// eigenvalue is one row of the --eigenvalues CSV (rho and alpha NaN where it has no such
// column).
type eigenvalue struct{ rho, alpha, lambda, value float64 }

// Penalties are the values of --penalty, erm.Penalty's words.
var Penalties = []string{erm.Nuclear.String(), erm.Ridge.String()}

// NewERMConfig returns the configuration of `aim erm` with no flag set.
func NewERMConfig() *ERMConfig {
	o := se.DefaultOptions()
	m := defaultModel("erm")
	m.Channel = "linear"
	return &ERMConfig{Model: m, WeightDecay: ERMWeightDecay, Penalty: erm.Nuclear.String(), Tol: o.Tol, MaxIter: o.MaxIter, Damping: o.Damping, Accelerate: o.Accelerate,
		Samples: erm.DefaultSamples}
}

// Lambdas returns the weight decays (after Validate).
func (c *ERMConfig) Lambdas() []float64 { return c.lambdas }

// Validate checks the configuration, parses its grids and reads the CSVs of --gd and
// --eigenvalues; every problem is bad input.
func (c *ERMConfig) Validate() error {
	if c.Channel == "hardmax" {
		return job.Inputf("--channel hardmax: the hardmax output has no useful loss; the ERM theory is the linear channel's and the softmax's")
	}
	alpha := ERMAlpha
	if c.Channel == "softmax" {
		alpha = ERMSoftmaxAlpha
	}
	if err := c.validate([]string{"0.5"}, alpha); err != nil {
		return err
	}
	if c.Samples < erm.MinSamples {
		return job.Inputf("--samples %d: need at least %d Monte Carlo draws", c.Samples, erm.MinSamples)
	}
	if err := c.validateDims(); err != nil {
		return err
	}
	switch c.Penalty {
	case erm.Nuclear.String():
		c.penalty = erm.Nuclear
	case erm.Ridge.String():
		c.penalty = erm.Ridge
	default:
		return job.Inputf("--penalty %q: want %s", c.Penalty, strings.Join(Penalties, " or "))
	}
	ls, err := grid.Parse(c.WeightDecay)
	if err != nil {
		return job.Inputf("--weight-decay: %v", err)
	}
	for i, l := range ls {
		switch {
		case !(l >= 0):
			return job.Inputf("--weight-decay %s: every lambda must be >= 0 (0: the limit lambda -> 0+), got %g", c.WeightDecay, l)
		case slices.Contains(ls[:i], l):
			return job.Inputf("--weight-decay %s: lambda = %g given twice", c.WeightDecay, l)
		case l == 0 && c.Channel == "softmax" && c.Noise > 0:
			return job.Inputf("--weight-decay %s with --noise %g: the softmax's limit lambda -> 0+ is implemented for noiseless labels only; give lambda > 0", c.WeightDecay, c.Noise)
		}
	}
	c.lambdas = ls
	switch {
	case c.SpectrumGiven && (!(c.Spectrum > 0) || math.IsInf(c.Spectrum, 0)):
		return job.Inputf("--spectrum %g: need one alpha > 0", c.Spectrum)
	case c.Eigenvalues != "" && !c.SpectrumGiven:
		return job.Inputf("--eigenvalues needs --spectrum (the alpha of the spectrum its eigenvalues are drawn beside)")
	}
	if err := validateSolver(c.Tol, c.MaxIter, c.Damping, &c.Workers); err != nil {
		return err
	}
	c.gdTable, c.eigen = nil, nil
	if c.GD != "" {
		if c.gdTable, err = c.readGD(c.GD); err != nil {
			return err
		}
	}
	if c.Eigenvalues != "" {
		if c.eigen, err = c.readEigenvalues(c.Eigenvalues); err != nil {
			return err
		}
	}
	return nil
}

// GDPenalty returns the penalty of the estimator that row i of an `aim gd` table trains: ridge
// for a direct student (its column direct true), nuclear otherwise (and without the column).
func GDPenalty(t *table.Table, i int) erm.Penalty {
	if d, err := strconv.ParseBool(t.S(i, "direct")); err == nil && d {
		return erm.Ridge
	}
	return erm.Nuclear
}

// readGD reads the `aim gd` CSV of --gd: the command's channel (T and beta), with runs at a rho
// and the noise of the command whose student matches --penalty (direct for ridge, W for
// nuclear).
func (c *ERMConfig) readGD(path string) (*table.Table, error) {
	t, err := job.ReadTable(path)
	if err != nil {
		return nil, job.Inputf("--gd: %v", err)
	}
	if t.Kind != table.GD {
		return nil, job.Inputf("--gd %s: an %s CSV, want one written by aim gd", path, t.Kind)
	}
	found := false
	for i := 0; i < t.Rows(); i++ {
		if ch := t.S(i, "channel"); ch != c.Channel || int(t.V(i, "T")) != c.T || c.Channel == "softmax" && !same(t.V(i, "beta"), c.Beta) {
			return nil, job.Inputf("--gd %s line %d: channel %s at T = %g, beta = %g; the command's is %s at T = %d%s", path, i+2, ch, t.V(i, "T"), t.V(i, "beta"), c.Channel, c.T, c.betaWords())
		}
		noise := t.V(i, "noise")
		if math.IsNaN(noise) {
			noise = 0
		}
		teacher := t.S(i, "teacher")
		if teacher == "" {
			teacher = aim.Teacher{}.String()
		}
		atD := !c.teacher.PowerLaw || slices.Contains(c.dims, int(t.V(i, "D")))
		for _, r := range c.rhos {
			found = found || same(t.V(i, "rho"), r) && same(noise, c.Noise) && GDPenalty(t, i) == c.penalty && teacher == c.csvTeacher() && atD
		}
	}
	if !found {
		at := ""
		if c.teacher.PowerLaw {
			at = fmt.Sprintf(" and D in %s", c.Dims)
		}
		return nil, job.Inputf("--gd %s: no run at rho = %s with noise %g, teacher %s%s and direct = %v (the %s penalty's students)", path, joinFloats(c.rhos), c.Noise,
			c.csvTeacher(), at, c.penalty == erm.Ridge, c.penalty)
	}
	return t, nil
}

// readEigenvalues reads the CSV of --eigenvalues (what aim gd --spectrum writes): its columns
// weight_decay and eigenvalue, and rho, alpha and direct where it has them, keeping the
// eigenvalues at a rho and lambda of the command and at the alpha of --spectrum, of students
// that match --penalty (direct for ridge; a file without the column is of W students).
func (c *ERMConfig) readEigenvalues(path string) ([]eigenvalue, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, job.Inputf("--eigenvalues: %v", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, job.Inputf("--eigenvalues %s: %v", path, err)
	}
	col := map[string]int{}
	for j, h := range header {
		col[strings.TrimSpace(h)] = j
	}
	for _, need := range []string{"weight_decay", "eigenvalue"} {
		if _, ok := col[need]; !ok {
			return nil, job.Inputf("--eigenvalues %s: no column %s (want the columns of aim gd --spectrum: rho, alpha, seed, weight_decay, index, eigenvalue)", path, need)
		}
	}
	var out []eigenvalue
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, job.Inputf("--eigenvalues %s: %v", path, err)
		}
		v := func(name string) (float64, error) {
			j, ok := col[name]
			if !ok {
				return math.NaN(), nil
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(rec[j]), 64)
			if err != nil {
				return 0, job.Inputf("--eigenvalues %s line %d: column %s: %q is not a number", path, line, name, rec[j])
			}
			return x, nil
		}
		var e eigenvalue
		for _, p := range []struct {
			name string
			dst  *float64
		}{{"rho", &e.rho}, {"alpha", &e.alpha}, {"weight_decay", &e.lambda}, {"eigenvalue", &e.value}} {
			if *p.dst, err = v(p.name); err != nil {
				return nil, err
			}
		}
		if !math.IsNaN(e.alpha) && !same(e.alpha, c.Spectrum) || !slices.ContainsFunc(c.lambdas, func(l float64) bool { return same(l, e.lambda) }) {
			continue
		}
		if !math.IsNaN(e.rho) && !slices.ContainsFunc(c.rhos, func(r float64) bool { return same(r, e.rho) }) {
			continue
		}
		direct := false
		if j, ok := col["direct"]; ok {
			if direct, err = strconv.ParseBool(strings.TrimSpace(rec[j])); err != nil {
				return nil, job.Inputf("--eigenvalues %s line %d: column direct: %q is not true or false", path, line, rec[j])
			}
		}
		if direct != (c.penalty == erm.Ridge) {
			continue
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, job.Inputf("--eigenvalues %s: no eigenvalue at alpha = %g with rho in %s, weight decay in %s and direct = %v (the %s penalty's students)", path, c.Spectrum,
			joinFloats(c.rhos), joinFloats(c.lambdas), c.penalty == erm.Ridge, c.penalty)
	}
	return out, nil
}

// betaWords is ", beta = B" for the softmax, "" otherwise.
func (c *ERMConfig) betaWords() string {
	if c.Channel == "softmax" {
		return fmt.Sprintf(", beta = %g", c.Beta)
	}
	return ""
}

// same reports whether two values are the same as the CSVs write them (12 significant digits).
func same(a, b float64) bool { return table.FormatFloat(a) == table.FormatFloat(b) }

// joinFloats writes values as a comma list.
func joinFloats(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

// options returns the solver options of the ERM state evolution.
func (c *ERMConfig) options() se.Options {
	return se.Options{Damping: c.Damping, Tol: c.Tol, MaxIter: c.MaxIter, Accelerate: c.Accelerate}
}

// SpectrumPaths returns the spectrum CSV and figure of --spectrum: <out>_spectrum.csv beside
// the CSV and <plot>_spectrum.<ext> beside the figure ("" without --plot); "", "" without
// --spectrum.
func (c *ERMConfig) SpectrumPaths() (csvPath, plotPath string) {
	if !c.SpectrumGiven {
		return "", ""
	}
	csvPath = strings.TrimSuffix(c.Out, filepath.Ext(c.Out)) + "_spectrum.csv"
	if c.Plot != "" {
		ext := filepath.Ext(c.Plot)
		plotPath = strings.TrimSuffix(c.Plot, ext) + "_spectrum" + ext
	}
	return csvPath, plotPath
}

// ERMRow is one point of an `aim erm` line: a row of its CSV.
type ERMRow struct {
	Channel           string  // linear or softmax
	T                 int     // tokens per sequence (1 for linear)
	Beta              float64 // the softmax's inverse temperature; NaN (empty) for linear
	Rho, Alpha, Noise float64
	Teacher           string  // the law of S*: mp or powerlaw:GAMMA (aim.Teacher.String)
	D                 float64 // the power-law teacher's D, whose theory is at a given D; NaN (empty) for mp
	WeightDecay       float64 // lambda; 0 is the limit lambda -> 0+
	Penalty           string  // the regulariser: nuclear or ridge (erm.Penalty's word)
	TestError         float64 // E = ||S-hat - S*||_F^2 / D
	TestErr           float64 // the Monte Carlo standard error of E (softmax at lambda > 0; 0 otherwise)
	GenError          float64 // 2E: the mean squared error of a new sample's noiseless output (linear; NaN, empty, for the softmax)
	TrainError        float64 // the mean sum_ab (y-hat - y)^2 per training sample at the minimiser
	TrainErr          float64 // the Monte Carlo standard error of TrainError (softmax at lambda > 0; 0 otherwise)
	BOError           float64 // the Bayes-optimal E at (rho, alpha, noise) and the teacher: se.Point.MMSE; NaN where that SE did not converge
	Tau               float64 // the eigenvalue threshold (nuclear; 0 for ridge)
	Shrink            float64 // s of S-hat = s Y (ridge) or s r(Y) (nuclear; 1 for linear)
	Rank              float64 // the fraction of nonzero eigenvalues of S-hat
	TrS               float64 // Tr S-hat / D
	DeltaEff          float64 // (E + Delta/2) / (2 alpha)
	Interpolating     bool    // zero training error (lambda = 0 with I = 2 alpha)
	QuadError         float64 // the quadrature error bound of E
	Iterations        int
}

// ERMSchema is the one definition of an `aim erm` row.
var ERMSchema = &table.Schema[ERMRow]{Kind: table.ERM, Columns: []table.Column[ERMRow]{
	table.Added(table.Word("channel", func(r *ERMRow) string { return r.Channel })),
	table.Added(table.Int("T", func(r *ERMRow) int { return r.T })),
	table.Added(table.Float("beta", func(r *ERMRow) float64 { return r.Beta })),
	table.Float("rho", func(r *ERMRow) float64 { return r.Rho }),
	table.Float("alpha", func(r *ERMRow) float64 { return r.Alpha }),
	table.Float("noise", func(r *ERMRow) float64 { return r.Noise }),
	table.Added(table.Word("teacher", func(r *ERMRow) string { return r.Teacher })),
	table.Added(table.Float("D", func(r *ERMRow) float64 { return r.D })),
	table.Float("weight_decay", func(r *ERMRow) float64 { return r.WeightDecay }),
	table.Added(table.Word("penalty", func(r *ERMRow) string { return r.Penalty })),
	table.Float("test_error", func(r *ERMRow) float64 { return r.TestError }),
	table.Added(table.Float("test_error_err", func(r *ERMRow) float64 { return r.TestErr })),
	table.Float("gen_error", func(r *ERMRow) float64 { return r.GenError }),
	table.Float("train_error", func(r *ERMRow) float64 { return r.TrainError }),
	table.Added(table.Float("train_error_err", func(r *ERMRow) float64 { return r.TrainErr })),
	table.Float("bo_error", func(r *ERMRow) float64 { return r.BOError }),
	table.Float("tau", func(r *ERMRow) float64 { return r.Tau }),
	table.Added(table.Float("shrink", func(r *ERMRow) float64 { return r.Shrink })),
	table.Float("rank", func(r *ERMRow) float64 { return r.Rank }),
	table.Float("tr_s", func(r *ERMRow) float64 { return r.TrS }),
	table.Float("delta_eff", func(r *ERMRow) float64 { return r.DeltaEff }),
	table.Bool("interpolating", func(r *ERMRow) bool { return r.Interpolating }),
	table.Float("quad_error", func(r *ERMRow) float64 { return r.QuadError }),
	table.Int("iterations", func(r *ERMRow) int { return r.Iterations }),
}}

// ERMSpectrumRow is one point of the density of S-hat's limiting spectrum: a row of `aim erm
// --spectrum`. Every row carries the atom at 0 of its spectrum.
type ERMSpectrumRow struct {
	Channel           string  // linear or softmax
	T                 int     // tokens per sequence (1 for linear)
	Beta              float64 // the softmax's inverse temperature; NaN (empty) for linear
	Rho, Alpha, Noise float64
	Teacher           string  // mp or powerlaw:GAMMA
	D                 float64 // the power-law teacher's D; NaN (empty) for mp
	WeightDecay       float64
	Penalty           string  // nuclear or ridge
	X                 float64 // an eigenvalue: nuclear > 0 (0 at an edge clipped at 0: the density there is the limit from above); ridge any sign
	Density           float64 // the density of the continuous part at X
	Atom              float64 // the mass of the eigenvalues at 0: 1 - Rank (ridge: 0)
}

// ERMSpectrumSchema is the one definition of an `aim erm --spectrum` row.
var ERMSpectrumSchema = &table.Schema[ERMSpectrumRow]{Kind: table.ERMSpectrum, Columns: []table.Column[ERMSpectrumRow]{
	table.Added(table.Word("channel", func(r *ERMSpectrumRow) string { return r.Channel })),
	table.Added(table.Int("T", func(r *ERMSpectrumRow) int { return r.T })),
	table.Added(table.Float("beta", func(r *ERMSpectrumRow) float64 { return r.Beta })),
	table.Float("rho", func(r *ERMSpectrumRow) float64 { return r.Rho }),
	table.Float("alpha", func(r *ERMSpectrumRow) float64 { return r.Alpha }),
	table.Float("noise", func(r *ERMSpectrumRow) float64 { return r.Noise }),
	table.Added(table.Word("teacher", func(r *ERMSpectrumRow) string { return r.Teacher })),
	table.Added(table.Float("D", func(r *ERMSpectrumRow) float64 { return r.D })),
	table.Float("weight_decay", func(r *ERMSpectrumRow) float64 { return r.WeightDecay }),
	table.Added(table.Word("penalty", func(r *ERMSpectrumRow) string { return r.Penalty })),
	table.Float("x", func(r *ERMSpectrumRow) float64 { return r.X }),
	table.Float("density", func(r *ERMSpectrumRow) float64 { return r.Density }),
	table.Float("atom", func(r *ERMSpectrumRow) float64 { return r.Atom }),
}}

// ERMResult is what RunERM computed.
type ERMResult struct {
	Rows     []ERMRow         // per rho, per lambda, per alpha; the unconverged points left out
	Spectrum []ERMSpectrumRow // with --spectrum: per rho, per D (a power law's), per lambda, the density on its grid
	Failed   []string         // the state evolutions that did not converge: ERM (row not written) or Bayes-optimal (bo_error empty)
	Infinite []string         // the points whose test error is infinite (ridge at lambda = 0, alpha = 1/2): rows not written
	Missing  []job.Missing    // the points not solved when the job was interrupted: rho, alpha (and a power law's D)
	// Thresholds are the nuclear estimator's at lambda -> 0+ per rho (table.RhoKey): alpha_c
	// (erm.PerfectRecovery, noiseless labels) and, with label noise, alpha_interp
	// (erm.Interpolation at the command's noise). They are the MP teacher's: nil for a power
	// law.
	Thresholds *table.Thresholds
}

// Err is the error of the result when state evolutions did not converge (the ERM rows left
// out, or a Bayes-optimal error left empty): the command exits with status 1.
func (r *ERMResult) Err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d state evolutions did not converge:\n  %s", len(r.Failed), strings.Join(r.Failed, "\n  "))
}

// ermPoint is what one (rho, alpha) of the grid solved: the row of each lambda (ok false for an
// unconverged one) and the failures.
type ermPoint struct {
	rows     []ERMRow
	ok       []bool
	failed   []string
	infinite []string
	err      error
}

// RunERM solves every point of a validated configuration, in parallel on c.Workers goroutines,
// and the spectra of --spectrum. When env's context is cancelled it stops at once and returns
// the points solved so far with the missing ones and ErrInterrupted.
func RunERM(c *ERMConfig, env job.Env) (*ERMResult, error) {
	ch, err := c.theoryChannel()
	if err != nil {
		return nil, job.InputError{Err: err}
	}
	if err := env.Begin(); err != nil {
		return nil, err
	}
	var th *table.Thresholds
	if !c.teacher.PowerLaw { // the thresholds are the MP teacher's
		if th, err = c.thresholds(); err != nil {
			return nil, err
		}
	}
	type point struct {
		rho, alpha float64
		D          int // the power-law teacher's; 0 for mp
	}
	var points []point
	dims := c.theoryDims()
	for _, r := range c.rhos {
		for _, D := range dims {
			for _, a := range c.alphas {
				points = append(points, point{r, a, D})
			}
		}
	}
	bar := env.Meter(len(points), "erm "+c.Channel)
	out, done, err := job.ForPoints(env.Ctx(), c.Workers, len(points), bar, func(i int) ermPoint {
		return c.solvePoint(ch, points[i].rho, points[i].alpha, points[i].D)
	})
	if err != nil {
		return nil, err
	}
	bar.Finish()
	res := &ERMResult{Thresholds: th}
	for i, p := range out {
		if !done[i] {
			m := job.Missing{"rho": points[i].rho, "alpha": points[i].alpha}
			if points[i].D > 0 {
				m["D"] = points[i].D
			}
			res.Missing = append(res.Missing, m)
			continue
		}
		if p.err != nil {
			return nil, p.err
		}
		res.Failed = append(res.Failed, p.failed...)
		res.Infinite = append(res.Infinite, p.infinite...)
	}
	// The rows per rho, per D, per lambda, per alpha: each lambda's line in one piece.
	for ri := range c.rhos {
		for di := range dims {
			for li := range c.lambdas {
				for ai := range c.alphas {
					k := (ri*len(dims)+di)*len(c.alphas) + ai
					if done[k] && out[k].ok[li] {
						res.Rows = append(res.Rows, out[k].rows[li])
					}
				}
			}
		}
	}
	if len(res.Missing) > 0 {
		return res, job.Interrupted(len(points)-len(res.Missing), len(points), "points")
	}
	if c.SpectrumGiven {
		if res.Spectrum, err = c.spectra(&res.Failed, &res.Infinite); err != nil {
			return nil, err
		}
	}
	for _, s := range res.Infinite {
		env.Notef("%s", s)
	}
	return res, nil
}

// thresholds returns the thresholds of the nuclear estimator at lambda -> 0+ at every rho:
// alpha_c (erm.PerfectRecovery; the softmax's is 2/K times the linear channel's) and, with
// label noise on the linear channel, alpha_interp (erm.Interpolation).
func (c *ERMConfig) thresholds() (*table.Thresholds, error) {
	th := &table.Thresholds{PerfectRecovery: map[string]float64{}}
	linear := c.Channel == "linear"
	if c.Noise > 0 && linear {
		th.Interpolation = map[string]float64{}
	}
	for _, r := range c.rhos {
		if !linear {
			if c.Noise == 0 { // the noisy softmax never recovers S exactly
				a, err := erm.PerfectRecoverySoftmax(r, c.T)
				if err != nil {
					return nil, err
				}
				th.PerfectRecovery[table.RhoKey(r)] = a
			}
			continue
		}
		a, err := erm.PerfectRecovery(r)
		if err != nil {
			return nil, err
		}
		th.PerfectRecovery[table.RhoKey(r)] = a
		if c.Noise > 0 {
			if a, err = erm.Interpolation(r, c.Noise); err != nil {
				return nil, err
			}
			th.Interpolation[table.RhoKey(r)] = a
		}
	}
	return th, nil
}

// infinite reports whether a point's solve failed because its test error is infinite (ridge
// least squares at lambda = 0 with as many samples as unknowns, alpha = 1/2), and says so.
func infinite(p erm.Problem, pt erm.Point, err error) (string, bool) {
	if err == nil || p.Penalty != erm.Ridge || !math.IsInf(pt.TestError, 1) {
		return "", false
	}
	return fmt.Sprintf("rho %g, alpha %g, lambda %g: the ridge estimator's test error is infinite (least squares with as many samples as unknowns); row not written",
		p.Rho, p.Alpha, p.Lambda), true
}

// problem is the ERM estimator of lambda at (rho, alpha): the power-law teacher's law at D
// (nil, MP(rho), for mp).
func (c *ERMConfig) problem(rho, alpha, lambda float64, D int) erm.Problem {
	p := erm.Problem{Rho: rho, Alpha: alpha, Noise: c.Noise, Lambda: lambda, Penalty: c.penalty, Samples: c.Samples, Workers: 1}
	if c.Channel == "softmax" {
		p.T, p.Beta = c.T, c.Beta
	}
	if c.teacher.PowerLaw {
		p.Prior = c.prior(rho, D)
	}
	return p
}

// solvePoint solves the Bayes-optimal SE at (rho, alpha) (a power-law teacher's at D) and the
// ERM SE of every lambda there.
func (c *ERMConfig) solvePoint(ch aim.Channel, rho, alpha float64, D int) ermPoint {
	p := ermPoint{rows: make([]ERMRow, len(c.lambdas)), ok: make([]bool, len(c.lambdas))}
	bo := math.NaN()
	b, err := c.solveSE(ch, rho, alpha, D, se.DefaultOptions())
	switch {
	case errors.Is(err, se.ErrNotConverged):
		p.failed = append(p.failed, "Bayes-optimal "+err.Error()+" (bo_error left empty)")
	case err != nil:
		p.err = err
		return p
	default:
		bo = b.MMSE
	}
	for li, l := range c.lambdas {
		prob := c.problem(rho, alpha, l, D)
		pt, err := erm.Solve(prob, c.options())
		if msg, ok := infinite(prob, pt, err); ok {
			p.infinite = append(p.infinite, msg)
			continue
		}
		switch {
		case errors.Is(err, erm.ErrNotConverged):
			p.failed = append(p.failed, err.Error()+" (row not written)")
			continue
		case err != nil:
			p.err = err
			return p
		}
		p.rows[li] = ERMRow{Channel: c.Channel, T: c.T, Beta: c.csvBeta(), Rho: rho, Alpha: alpha, Noise: c.Noise, Teacher: c.csvTeacher(), D: csvD(D), WeightDecay: l, Penalty: c.penalty.String(),
			TestError: pt.TestError, TestErr: pt.TestErr, TrainErr: pt.TrainErr, GenError: pt.GenError,
			TrainError: pt.TrainError, BOError: bo, Tau: pt.Tau, Shrink: pt.Shrink, Rank: pt.Rank, TrS: pt.TrS, DeltaEff: pt.DeltaEff,
			Interpolating: pt.Interpolating, QuadError: pt.QuadError, Iterations: pt.Iterations}
		p.ok[li] = true
	}
	return p
}

// spectra returns the rows of --spectrum: per rho, per D (a power-law teacher's), per lambda,
// the density of the continuous part of S-hat's limiting spectrum at alpha = c.Spectrum on
// SpectrumGrid (SpectrumPoints points, over every piece of its support: a power-law teacher's
// has outliers), each row with the atom. An unconverged point is added to failed, one of
// infinite error to inf, and neither has rows.
func (c *ERMConfig) spectra(failed, inf *[]string) ([]ERMSpectrumRow, error) {
	var rows []ERMSpectrumRow
	for _, r := range c.rhos {
		for _, D := range c.theoryDims() {
			for _, l := range c.lambdas {
				rs, err := c.spectrum(r, l, D, failed, inf)
				if err != nil {
					return nil, err
				}
				rows = append(rows, rs...)
			}
		}
	}
	return rows, nil
}

// spectrum returns the rows of --spectrum at (rho, lambda) and a power law's D (spectra).
func (c *ERMConfig) spectrum(r, l float64, D int, failed, inf *[]string) ([]ERMSpectrumRow, error) {
	prob := c.problem(r, c.Spectrum, l, D)
	pt, err := erm.Solve(prob, c.options())
	if msg, ok := infinite(prob, pt, err); ok {
		*inf = append(*inf, "spectrum: "+msg)
		return nil, nil
	}
	if errors.Is(err, erm.ErrNotConverged) {
		*failed = append(*failed, "spectrum: "+err.Error()+" (no rows written)")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sp, err := pt.Spectrum()
	if err != nil {
		return nil, err
	}
	row := ERMSpectrumRow{Channel: c.Channel, T: c.T, Beta: c.csvBeta(), Rho: r, Alpha: c.Spectrum, Noise: c.Noise, Teacher: c.csvTeacher(), D: csvD(D), WeightDecay: l, Penalty: c.penalty.String(), Atom: sp.Atom}
	xs := SpectrumGrid(sp.Edges(), SpectrumPoints)
	if len(xs) == 0 { // every eigenvalue at 0: the atom alone
		return []ERMSpectrumRow{row}, nil
	}
	rows := make([]ERMSpectrumRow, 0, len(xs))
	for _, x := range xs {
		row.X, row.Density = x, spectrumDensity(sp, x, c.penalty)
		rows = append(rows, row)
	}
	return rows, nil
}

// spectrumDensity is the density of sp at x: nuclear (x >= 0), at x = 0, an edge clipped at 0
// (tau inside a bulk), the limit from above; ridge, at x itself (its eigenvalues have either
// sign).
func spectrumDensity(sp *erm.Spectrum, x float64, pen erm.Penalty) float64 {
	if pen == erm.Ridge {
		return sp.Density(x)
	}
	return sp.Density(math.Max(x, math.SmallestNonzeroFloat64))
}

// SpectrumGrid returns n points over the bulks of edges ([a0, b0, a1, b1, ...], as
// erm.Spectrum.Edges gives them), both edges of every bulk among them: half the points shared
// equally among the bulks, so that a narrow one is resolved too, and half in proportion to their
// widths, spaced in each bulk as the Chebyshev points a + (b - a)(1 - cos(pi j/(m - 1)))/2,
// close together at the edges, where the density has its square-root (or, at a hard edge,
// steeper) behaviour.
func SpectrumGrid(edges []float64, n int) []float64 {
	k := len(edges) / 2
	if k == 0 {
		return nil
	}
	n = max(n, 2*k)
	total := 0.0
	for b := 0; b < k; b++ {
		total += edges[2*b+1] - edges[2*b]
	}
	counts := make([]int, k)
	sum, widest := 0, 0
	for b := range counts {
		w := edges[2*b+1] - edges[2*b]
		counts[b] = n / (2 * k)
		if total > 0 {
			counts[b] += int(float64(n-n/(2*k)*k) * w / total)
		}
		counts[b] = max(2, counts[b])
		sum += counts[b]
		if w > edges[2*widest+1]-edges[2*widest] {
			widest = b
		}
	}
	counts[widest] = max(2, counts[widest]+n-sum)
	var xs []float64
	for b, m := range counts {
		a, e := edges[2*b], edges[2*b+1]
		for j := 0; j < m; j++ {
			xs = append(xs, a+(e-a)*(1-math.Cos(math.Pi*float64(j)/float64(m-1)))/2)
		}
	}
	return xs
}

// histograms returns the normalised histograms of the --eigenvalues CSV at each rho and lambda
// of the configuration (a CSV without a rho column counts at every rho). The nuclear penalty's
// leave the eigenvalues below EigenvalueCut out (the atom at 0); the ridge penalty's, whose
// spectrum has no atom and eigenvalues of either sign, keep every one (Cut 0).
func (c *ERMConfig) histograms() []plot.Histogram {
	cut := EigenvalueCut
	if c.penalty == erm.Ridge {
		cut = 0
	}
	var out []plot.Histogram
	for _, r := range c.rhos {
		for _, l := range c.lambdas {
			var kept []float64
			n := 0
			for _, e := range c.eigen {
				if !same(e.lambda, l) || !math.IsNaN(e.rho) && !same(e.rho, r) {
					continue
				}
				n++
				if cut == 0 || e.value >= cut {
					kept = append(kept, e.value)
				}
			}
			if n == 0 {
				continue
			}
			out = append(out, eigenHistogram(r, l, kept, n, cut))
		}
	}
	return out
}

// eigenHistogram returns the histogram of the eigenvalues kept (those at or above cut; every
// one for cut 0) of n at (rho, lambda): about 2 n^(1/3) bins (Rice's rule, 10 to 60) over their
// range, heights count / (n width), so that its area is the share kept.
func eigenHistogram(rho, lambda float64, kept []float64, n int, cut float64) plot.Histogram {
	h := plot.Histogram{Rho: rho, Lambda: lambda, N: n, Below: float64(n-len(kept)) / float64(n), Cut: cut}
	if len(kept) == 0 {
		return h
	}
	lo, hi := slices.Min(kept), slices.Max(kept)
	bins := min(60, max(10, int(math.Round(2*math.Cbrt(float64(len(kept)))))))
	if hi <= lo {
		hi, bins = lo+math.Max(1e-9, 1e-6*math.Abs(lo)), 1
	}
	w := (hi - lo) / float64(bins)
	counts := make([]float64, bins)
	for _, v := range kept {
		counts[min(bins-1, int((v-lo)/w))]++
	}
	for k := 0; k <= bins; k++ {
		h.Edges = append(h.Edges, lo+w*float64(k))
	}
	for _, cnt := range counts {
		h.Density = append(h.Density, cnt/(float64(n)*w))
	}
	return h
}

// ExecuteERM runs `aim erm` as the command does: RunERM, with the outputs opened before it
// solves anything, then the CSV, the figure and the manifest written, and with --spectrum the
// spectrum's CSV, figure and manifest. It returns the line to print; unconverged points give
// an error after everything is written, and so does an interruption (ErrInterrupted: the
// points solved are written, the manifest lists the missing ones).
func ExecuteERM(c *ERMConfig, env job.Env) (string, error) {
	specCSV, specPlot := c.SpectrumPaths()
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, specCSV, specPlot) },
		func(e job.Env) (*ERMResult, error) { return RunERM(c, e) })
	stop := err
	if err != nil && !job.Stopped(err, out) {
		return "", err
	}
	if err := ERMSchema.Write(out.CSV(), 0, res.Rows); err != nil {
		return "", out.Abort(err)
	}
	var fig *figure.Figure
	if c.Plot != "" && (stop == nil || len(res.Rows) > 0) {
		t, err := ERMSchema.Table(c.Out, 0, res.Rows)
		if err != nil {
			return "", out.Abort(err)
		}
		t.Th = res.Thresholds
		tables := []*table.Table{t}
		if c.gdTable != nil {
			tables = append(tables, c.gdTable)
		}
		if fig, err = job.DrawFigure(tables, c.Figure.Options(plot.Options{Axes: c.Axes})); err != nil {
			return "", out.Abort(err)
		}
	}
	params := c.params()
	delete(params, "paper_compat")
	for k, v := range map[string]any{"weight_decay": c.lambdas, "penalty": c.Penalty, "damping": c.Damping, "tol": c.Tol, "max_iter": c.MaxIter,
		"accelerate": c.Accelerate, "gd": c.GD, "eigenvalues": c.Eigenvalues, "samples": c.Samples} {
		params[k] = v
	}
	if c.SpectrumGiven {
		params["spectrum"] = c.Spectrum
	}
	if c.teacher.PowerLaw {
		params["D"] = c.dims
	}
	man := env.Manifest("erm", "cpu (theory: scalar state evolution)", params, start)
	man["points"] = len(res.Rows)
	man["unconverged"] = len(res.Failed)
	if len(res.Infinite) > 0 {
		man["infinite"] = res.Infinite
	}
	if th := res.Thresholds; th != nil {
		// The nuclear estimator's at lambda -> 0+, whatever --penalty: aim plot draws them
		// beside its lambda = 0 line.
		ths := map[string]any{"perfect_recovery": th.PerfectRecovery}
		if th.Interpolation != nil {
			ths["interpolation"] = th.Interpolation
		}
		man["thresholds"] = ths
	}
	if out.HasTrace() {
		specMan := env.Manifest("erm spectrum", "cpu (theory: scalar state evolution)", params, start)
		specMan["grid_points"] = SpectrumPoints
		hists := c.histograms()
		if len(hists) > 0 && c.penalty == erm.Nuclear {
			specMan["eigenvalue_cut"] = EigenvalueCut
		}
		draw := func(t *table.Table) (*figure.Figure, error) {
			f := plot.ERMSpectrumFigure(t, hists, c.Figure.Options(plot.Options{}))
			return f, nil
		}
		if err := job.WriteTraceDrawn(out, ERMSpectrumSchema, 0, res.Spectrum, draw, params, specMan, stop, res.Missing); err != nil {
			return "", out.Abort(err)
		}
	}
	if stop != nil {
		job.MarkIncomplete(man, res.Missing)
	}
	summary, err := out.Complete(fig, man, len(res.Rows), start, errors.Join(stop, res.Err()))
	if summary != "" && specCSV != "" {
		summary += fmt.Sprintf("; spectrum %s (%d rows)", specCSV, len(res.Spectrum))
	}
	return summary, err
}
