package aimjob

import (
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/se"
	"github.com/aimtheory/aim/internal/par"
)

// SEConfig is the configuration of `aim se`: state evolution curves of the attention-indexed
// model, one per rho, and their thresholds.
type SEConfig struct {
	Model
	Rescaled   bool    // add the rho -> 0 limit; Alpha is then alpha-bar_r = alpha/rho
	Threshold  bool    // print the thresholds only (SEThresholdsOf), write no file
	GenSamples int     // Monte Carlo samples of the generalisation error per point; 0 skips it
	GenInner   int     // inner samples per Monte Carlo sample
	Seed       uint64  // seed of the generalisation error (mixed with each point, PointSeed)
	Tol        float64 // SE convergence tolerance
	MaxIter    int     // SE iteration cap
	Damping    float64 // SE damping theta in [0, 1)
	Accelerate bool    // the solver's Aitken jumps (no flag: the engine's default)
	Workers    int     // points solved in parallel (0: all cores; Validate sets it)
	// IntTol is the largest relative error of the channel's integral F accepted at a point
	// (hardmax T > 2, a tabulated integral); 0 accepts any. A point beyond it is reported like
	// an unconverged one.
	IntTol float64
	// Start is the SE start (--start): uninformed, informed or both (se.Start). Both, the
	// default, solves from both ends and reports the fixed point of largest free entropy; for
	// a channel without a free entropy (hardmax paper-compat, hardmax at a T without a table)
	// the default falls back to uninformed, and an explicit both (StartGiven) is bad input.
	Start      string
	StartGiven bool

	start se.Start
}

// NewSEConfig returns the configuration of `aim se` with no flag set.
func NewSEConfig() *SEConfig {
	o := se.DefaultOptions()
	return &SEConfig{Model: defaultModel("se"), GenSamples: 20000, GenInner: 8, Seed: 1,
		Tol: o.Tol, MaxIter: o.MaxIter, Damping: o.Damping, Accelerate: o.Accelerate, Start: se.Both.String()}
}

// Validate checks the configuration and parses its grids; every problem is bad input.
func (c *SEConfig) Validate() error {
	defaultRho := []string{"0.5"}
	if c.Rescaled {
		defaultRho = nil
	}
	defaultAlpha := "0.001:0.25:128"
	switch {
	case c.Rescaled:
		defaultAlpha = "0.1:20:128:log"
	case c.Channel == "hardmax":
		defaultAlpha = "0.01:10:128:log"
	case c.Channel == "linear":
		// Past alpha_PR = 1/2, the largest of any rho.
		defaultAlpha = "0.005:0.6:120"
	case c.Noise > 0:
		// No perfect recovery with label noise: past the noiseless alpha_PR. A point costs
		// about a minute at T > 2 (aim.NoisySoftmaxT).
		defaultAlpha = "0.02:0.5:25"
	}
	c.hardmaxAnyT = true
	if err := c.validate(defaultRho, defaultAlpha); err != nil {
		return err
	}
	if err := c.validateDims(); err != nil {
		return err
	}
	if c.teacher.PowerLaw {
		// The thresholds and the rho -> 0 limit are the MP teacher's.
		switch {
		case c.Threshold:
			return job.Inputf("--threshold with --teacher %s: the thresholds are the MP teacher's", c.teacher)
		case c.Rescaled:
			return job.Inputf("--rescaled with --teacher %s: the rho -> 0 limit is the MP teacher's", c.teacher)
		}
	}
	if c.Channel == "hardmax" && c.T > 2 && !c.Threshold && !aim.HardmaxTTabulated(c.T) {
		_, err := c.theoryChannel()
		return job.InputError{Err: err}
	}
	if !(c.IntTol >= 0) || math.IsInf(c.IntTol, 0) {
		return job.Inputf("--int-tol %g: need a relative error >= 0 (0: any)", c.IntTol)
	}
	if c.IntTol > 0 && c.Channel == "hardmax" && c.T > 2 {
		ch, err := aim.NewHardmaxTChannel(c.T)
		if err != nil {
			return job.InputError{Err: err}
		}
		if best := ch.BestRelErr(); c.IntTol < best {
			return job.Inputf("--int-tol %g: the shipped table of hardmax T = %d gives F to %.2g relative at best (%d lattice points per shift); a finer table takes go run ./engine/aim/internal/fishergen -points N",
				c.IntTol, c.T, best, ch.Table().Points)
		}
	}
	switch {
	case c.GenSamples < 0 || c.GenSamples == 1:
		return job.Inputf("--gen-samples %d: need 0 (skip) or at least 2", c.GenSamples)
	case c.GenInner < 2:
		return job.Inputf("--gen-inner %d: need at least 2", c.GenInner)
	}
	if err := validateSolver(c.Tol, c.MaxIter, c.Damping, &c.Workers); err != nil {
		return err
	}
	return c.validateStart()
}

// validateSolver checks the state evolution's solver flags shared by `aim se` and `aim erm`
// (--tol, --max-iter, --damping, --workers) and sets workers 0 to all cores.
func validateSolver(tol float64, maxIter int, damping float64, workers *int) error {
	switch {
	case !(tol > 0):
		return job.Inputf("--tol %g: need a positive tolerance", tol)
	case maxIter < 1:
		return job.Inputf("--max-iter %d: need at least 1", maxIter)
	case !(damping >= 0 && damping < 1):
		return job.Inputf("--damping %g: need 0 <= damping < 1", damping)
	case *workers < 0:
		return job.Inputf("--workers %d: need 0 (all cores) or more", *workers)
	}
	if *workers == 0 {
		*workers = runtime.GOMAXPROCS(0)
	}
	return nil
}

// validateStart parses --start; both needs a channel with a free entropy (see Start).
func (c *SEConfig) validateStart() error {
	st, err := se.ParseStart(c.Start)
	if err != nil {
		return job.Inputf("--start: %v", err)
	}
	c.start = st
	if st == se.Both && c.teacher.PowerLaw {
		if c.StartGiven {
			return job.Inputf("--start both with --teacher %s: the free entropy that chooses between fixed points is the MP teacher's; use --start uninformed or informed", c.teacher)
		}
		c.start = se.Uninformed
		return nil
	}
	if st != se.Both || c.Channel == "hardmax" && c.T > 2 && !aim.HardmaxTTabulated(c.T) {
		if st == se.Both && c.StartGiven {
			return job.Inputf("--start both: hardmax at T = %d has no free entropy to choose between fixed points", c.T)
		}
		if st == se.Both {
			c.start = se.Uninformed
		}
		return nil
	}
	ch, err := c.theoryChannel()
	if err != nil {
		return job.InputError{Err: err}
	}
	if !hasEntropy(ch) {
		if c.StartGiven {
			return job.Inputf("--start both: the %s channel has no free entropy to choose between fixed points; use --start uninformed or informed", c.csvChannel())
		}
		c.start = se.Uninformed
	}
	return nil
}

// hasEntropy reports whether the channel computes an output free entropy (aim.Entropic, not
// refused).
func hasEntropy(ch aim.Channel) bool {
	e, ok := ch.(aim.Entropic)
	if !ok {
		return false
	}
	_, err := e.OutputEntropy(0.5, 0.5)
	return !errors.Is(err, aim.ErrNoEntropy)
}

func (c *SEConfig) options() se.Options {
	return se.Options{Damping: c.Damping, Tol: c.Tol, MaxIter: c.MaxIter, Accelerate: c.Accelerate, Start: c.start}
}

// SERow is one point of an `aim se` curve: a row of its CSV.
type SERow struct {
	Channel        string  // softmax, hardmax or hardmax-paper
	T              int     // tokens
	Rho            float64 // 0: the rescaled rho -> 0 limit
	Beta           float64 // NaN (empty) for hardmax
	Noise          float64 // label noise Delta (0: noiseless)
	Teacher        string  // the law of S: mp or powerlaw:GAMMA (aim.Teacher.String)
	D              float64 // the power-law teacher's D, whose theory is at a given D; NaN (empty) for mp
	Alpha          float64 // N/D^2; NaN in the rescaled limit
	AlphaBar       float64 // alpha (T^2 + T - 2); NaN in the rescaled limit
	AlphaR         float64 // alpha/rho = N/(D R)
	MMSE, Q, QHat  float64 // the fixed point; NaN when it did not converge
	MMSEErr        float64 // the error of MMSE from the channel's integral (0: exact to 1e-12; NaN: unconverged)
	GenError       float64 // Bayes-optimal generalisation error; NaN when skipped
	GenErrorStderr float64
	Iterations     int
	Converged      bool
	// FreeEntropy is Phi of the reported fixed point (se.FreeEntropy, up to alpha times the
	// channel's q-independent constant); NaN without a free entropy, unconverged, or in the
	// rescaled limit; +Inf at perfect recovery (softmax).
	FreeEntropy float64
	// Coexist is true where the uninformed and informed starts reach two stable fixed points
	// (--start both only; false otherwise): the row reports the one of larger FreeEntropy.
	Coexist bool
}

// SESchema is the one definition of an `aim se` row.
var SESchema = &table.Schema[SERow]{Kind: table.SE, Columns: []table.Column[SERow]{
	table.Word("channel", func(r *SERow) string { return r.Channel }),
	table.Int("T", func(r *SERow) int { return r.T }),
	table.Float("rho", func(r *SERow) float64 { return r.Rho }),
	table.Float("beta", func(r *SERow) float64 { return r.Beta }),
	table.Added(table.Float("noise", func(r *SERow) float64 { return r.Noise })),
	table.Added(table.Word("teacher", func(r *SERow) string { return r.Teacher })),
	table.Added(table.Float("D", func(r *SERow) float64 { return r.D })),
	table.Float("alpha", func(r *SERow) float64 { return r.Alpha }),
	table.Float("alpha_bar", func(r *SERow) float64 { return r.AlphaBar }),
	table.Float("alpha_r", func(r *SERow) float64 { return r.AlphaR }),
	table.Float("mmse", func(r *SERow) float64 { return r.MMSE }),
	table.Added(table.Float("mmse_err", func(r *SERow) float64 { return r.MMSEErr })),
	table.Float("q", func(r *SERow) float64 { return r.Q }),
	table.Float("qhat", func(r *SERow) float64 { return r.QHat }),
	table.Float("gen_error", func(r *SERow) float64 { return r.GenError }),
	table.Float("gen_error_stderr", func(r *SERow) float64 { return r.GenErrorStderr }),
	table.Int("iterations", func(r *SERow) int { return r.Iterations }),
	table.Bool("converged", func(r *SERow) bool { return r.Converged }),
	table.Added(table.Float("free_entropy", func(r *SERow) float64 { return r.FreeEntropy })),
	table.Added(table.Bool("coexist", func(r *SERow) bool { return r.Coexist })),
}}

// seRow is the row of a solved point of model m, without D (the MP teacher's, whose theory has
// none; seRowAt gives a power-law teacher's).
func seRow(m *Model, rho, alphaR float64, p se.Point) SERow { return seRowAt(m, rho, alphaR, 0, p) }

// seRowAt is the row of a solved point of model m at the power-law teacher's D (0: none, mp).
func seRowAt(m *Model, rho, alphaR float64, D int, p se.Point) SERow {
	alpha, alphaBar := math.NaN(), math.NaN()
	if rho > 0 {
		alpha = alphaR * rho // the rescaled grid's alpha
		alphaBar = alpha * m.directions()
	}
	return SERow{Channel: m.csvChannel(), T: m.T, Rho: rho, Beta: m.csvBeta(), Noise: m.csvNoise(), Teacher: m.csvTeacher(), D: csvD(D), Alpha: alpha, AlphaBar: alphaBar, AlphaR: alphaR,
		MMSE: p.MMSE, MMSEErr: math.NaN(), Q: p.Q, QHat: p.QHat, GenError: math.NaN(), GenErrorStderr: math.NaN(), Iterations: p.Iterations, Converged: p.Converged,
		FreeEntropy: math.NaN()}
}

// SEThresholds are the thresholds of `aim se`, drawn on its figure and written to its manifest.
type SEThresholds struct {
	AlphaPR         map[string]float64 // per rho (table.RhoKey), from the SE solver; +Inf: none
	AlphaPRCounting map[string]float64 // per rho, the counting formula (softmax, noiseless linear)
	AlphaBarC       float64            // rho -> 0 weak recovery, in N/(D R)
	AlphaBarCErr    float64            // its standard error (hardmax T > 2, a polytope integral); 0 when exact
	// FirstOrder holds, per rho, the first-order transition on the alpha grid
	// (se.FirstOrder: spinodal, alpha_IT, alpha_alg), for the channels with a free entropy: in
	// --threshold mode at every rho, in a run only at the rho where coexisting fixed points were
	// found. Absent: not searched (no free entropy).
	FirstOrder map[string]se.Transition
}

// SEThresholdsOf computes the thresholds of every rho of a validated configuration. For hardmax
// at a T > 2 without a shipped table that is alpha-bar_c = 1/(2 FisherSum(0, 1)) with its error
// (hardmaxAlphaBarC); hardmax has no finite alpha_PR at any T (se.AlphaPR).
func SEThresholdsOf(c *SEConfig) (SEThresholds, error) {
	if c.Channel == "hardmax" && c.T > 2 && !aim.HardmaxTTabulated(c.T) {
		v, e, err := hardmaxAlphaBarC(c.T)
		if err != nil {
			return SEThresholds{}, err
		}
		th := SEThresholds{AlphaPR: map[string]float64{}, AlphaPRCounting: map[string]float64{}, AlphaBarC: v, AlphaBarCErr: e}
		for _, r := range c.rhos {
			th.AlphaPR[table.RhoKey(r)] = math.Inf(1)
		}
		return th, nil
	}
	ch, err := c.theoryChannel()
	if err != nil {
		return SEThresholds{}, job.InputError{Err: err}
	}
	return seThresholds(c, ch)
}

func seThresholds(c *SEConfig, ch aim.Channel) (SEThresholds, error) {
	th := SEThresholds{AlphaPR: map[string]float64{}, AlphaPRCounting: map[string]float64{}}
	var err error
	if th.AlphaBarC, err = se.AlphaBarC(ch); err != nil {
		return th, err
	}
	if hc, ok := ch.(*aim.HardmaxTChannel); ok {
		f, _ := hc.FisherSum(0, 1)
		th.AlphaBarCErr = hc.FisherSumErr(0, 1) / (2 * f * f)
	}
	for _, r := range c.rhos {
		a, err := se.AlphaPR(ch, r, 1e-9, c.options())
		if err != nil {
			return th, err
		}
		if c.Threshold && hasEntropy(ch) && !c.Rescaled {
			if err := c.firstOrder(ch, r, &th); err != nil {
				return th, err
			}
		}
		th.AlphaPR[table.RhoKey(r)] = a
		if dc, ok := ch.(interface{ Directions() int }); ok {
			th.AlphaPRCounting[table.RhoKey(r)] = se.AlphaPRCounting(r, dc.Directions())
		}
	}
	return th, nil
}

// firstOrder searches the first-order transition at rho on the configuration's alpha grid.
func (c *SEConfig) firstOrder(ch aim.Channel, rho float64, th *SEThresholds) error {
	if th.FirstOrder == nil {
		th.FirstOrder = map[string]se.Transition{}
	}
	tr, err := se.FirstOrder(ch, rho, c.alphas, 1e-8, c.options())
	if err != nil {
		return err
	}
	th.FirstOrder[table.RhoKey(rho)] = tr
	return nil
}

// SEResult is what RunSE computed.
type SEResult struct {
	Rows       []SERow // in grid order: per curve (the rescaled limit first), per alpha
	Thresholds SEThresholds
	Failed     []string // the points that did not converge (their rows have no values)
	// Coexisting lists the points where two fixed points coexist (--start both), each with
	// both branches and their free entropies; the row reports the larger.
	Coexisting []Coexisting
	// Missing lists the points not solved when the job was interrupted (RunSE returns
	// ErrInterrupted with the rows of the others): rho, alpha_r and, unless rho = 0 (the
	// rescaled limit), alpha.
	Missing []job.Missing
}

// Coexisting is a point of two stable fixed points: both branches and their free entropies.
// The manifest lists them under "coexisting".
type Coexisting struct {
	Rho, Alpha                   float64
	MMSEUninformed, MMSEInformed float64
	PhiUninformed, PhiInformed   float64
	Optimal                      string // the branch of larger free entropy: "uninformed" or "informed"
}

// Err is the error of the result when points did not converge (their rows written without
// values): the command exits with status 1.
func (r *SEResult) Err() error { return job.Failures(r.Failed, len(r.Rows), "points did not converge") }

// RunSE solves every point of a validated configuration, in parallel on c.Workers goroutines.
// When env's context is cancelled it stops at once and returns the points solved so far with
// the missing ones and ErrInterrupted.
func RunSE(c *SEConfig, env job.Env) (*SEResult, error) {
	ch, err := c.theoryChannel()
	if err != nil {
		return nil, job.InputError{Err: err}
	}
	if err := env.Begin(); err != nil {
		return nil, err
	}
	return runSE(c, ch, env)
}

func runSE(c *SEConfig, ch aim.Channel, env job.Env) (*SEResult, error) {
	type point struct {
		rho, alphaR float64
		D           int // the power-law teacher's; 0 for mp
	}
	var points []point
	curves := c.rhos
	if c.Rescaled {
		curves = append([]float64{0}, c.rhos...)
	}
	for _, r := range curves {
		for _, D := range c.theoryDims() {
			for _, a := range c.alphas {
				if c.Rescaled || r == 0 {
					points = append(points, point{r, a, D})
				} else {
					points = append(points, point{r, a / r, D})
				}
			}
		}
	}
	ctx := env.Ctx()
	res := &SEResult{}
	if !c.teacher.PowerLaw { // the thresholds are the MP teacher's
		th, err := seThresholds(c, ch)
		if err != nil {
			return nil, err
		}
		res.Thresholds = th
	}
	type solved struct {
		row  SERow
		coex *Coexisting
		err  error
	}
	bar := env.Meter(len(points), "se "+ch.Name())
	// Points run in parallel on c.Workers goroutines; each point's Monte Carlo takes an equal
	// share of the cores, and its draws depend on the point, not on the grid or the schedule.
	genWorkers := max(1, par.Workers(0)/max(1, min(c.Workers, len(points))))
	out, done, err := job.ForPoints(ctx, c.Workers, len(points), bar, func(i int) solved {
		var s solved
		s.row, s.coex, s.err = solvePoint(c, ch, points[i].rho, points[i].alphaR, points[i].D, genWorkers)
		return s
	})
	if err != nil {
		return nil, err
	}
	bar.Finish()
	var coex []*Coexisting
	for i, s := range out {
		if !done[i] {
			m := job.Missing{"rho": points[i].rho, "alpha_r": points[i].alphaR}
			if points[i].rho > 0 {
				m["alpha"] = points[i].alphaR * points[i].rho
			}
			if points[i].D > 0 {
				m["D"] = points[i].D
			}
			res.Missing = append(res.Missing, m)
			continue
		}
		if s.err != nil && !errors.Is(s.err, se.ErrNotConverged) {
			return nil, s.err
		}
		if s.err != nil {
			res.Failed = append(res.Failed, s.err.Error())
		}
		res.Rows = append(res.Rows, s.row)
		coex = append(coex, s.coex)
	}
	if len(res.Missing) > 0 {
		// The first-order search solves the whole alpha grid again: not after an interruption.
		return res, job.Interrupted(len(res.Rows), len(points), "points")
	}
	// The first-order transitions, at the rho where the grid found coexisting fixed points.
	searched := map[float64]bool{}
	for _, x := range coex {
		if x == nil {
			continue
		}
		res.Coexisting = append(res.Coexisting, *x)
		if !searched[x.Rho] {
			searched[x.Rho] = true
			if err := c.firstOrder(ch, x.Rho, &res.Thresholds); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// solvePoint solves one point (rho = 0: the rescaled limit at alpha-bar_r; D > 0: the
// power-law teacher at dimension D), its free entropy and its generalisation error; with
// --start both it also returns the two branches where they coexist.
func solvePoint(c *SEConfig, ch aim.Channel, rho, alphaR float64, D int, genWorkers int) (SERow, *Coexisting, error) {
	var p se.Point
	var err error
	var coex *Coexisting
	phi := math.NaN()
	switch {
	case rho == 0:
		p, err = se.SolveRescaled(ch, alphaR, c.options())
	case c.start == se.Both:
		var b se.Branches
		b, err = se.SolveBranches(ch, rho, alphaR*rho, c.options())
		if err == nil {
			p, phi = b.Optimal()
			if b.Coexist {
				coex = &Coexisting{Rho: rho, Alpha: alphaR * rho, MMSEUninformed: b.Uninformed.MMSE, MMSEInformed: b.Informed.MMSE,
					PhiUninformed: b.PhiUninformed, PhiInformed: b.PhiInformed, Optimal: "uninformed"}
				if p.MMSE == b.Informed.MMSE {
					coex.Optimal = "informed"
				}
			}
		} else {
			p = b.Uninformed
		}
	case c.teacher.PowerLaw: // no free entropy: it is the MP teacher's
		p, err = c.solveSE(ch, rho, alphaR*rho, D, c.options())
	default:
		p, err = se.Solve(ch, rho, alphaR*rho, c.options())
		if err == nil && hasEntropy(ch) {
			phi, err = se.FreeEntropy(ch, p)
		}
	}
	row := seRowAt(&c.Model, rho, alphaR, D, p)
	row.FreeEntropy, row.Coexist = phi, coex != nil
	if err == nil {
		row.MMSEErr, err = mmseErr(c, ch, rho, alphaR, D, p)
	}
	if hc, ok := ch.(*aim.HardmaxTChannel); ok && err == nil && c.IntTol > 0 && p.MMSE > 0 {
		q, V := 1+rho-p.MMSE, p.MMSE // Q0 = 1 + rho (1 in the rescaled limit, rho = 0)
		if c.teacher.PowerLaw {
			q = c.prior(rho, D).Q0() - p.MMSE
		}
		f, _ := hc.FisherSum(q, V)
		if rel := hc.FisherSumErr(q, V) / f; rel > c.IntTol {
			err = fmt.Errorf("se hardmax: rho = %g, alpha = %g: %w: the integral's relative error %.2g is above --int-tol %g",
				rho, alphaR*rho, se.ErrNotConverged, rel, c.IntTol)
			row = seRowAt(&c.Model, rho, alphaR, D, se.Point{MMSE: math.NaN(), Q: math.NaN(), QHat: math.NaN(), Iterations: p.Iterations})
		}
	}
	if err != nil || c.GenSamples == 0 {
		return row, coex, err
	}
	o := se.GenErrorOptions{Samples: c.GenSamples, Inner: c.GenInner, Seed: PointSeed(c.Seed, rho, alphaR), Workers: genWorkers}
	row.GenError, row.GenErrorStderr, err = se.GenError(ch, p.Q, p.MMSE, o)
	return row, coex, err
}

// mmseErr is the error of a solved point's MMSE that the channel's integration error causes:
// for a tabulated channel (aim.HardmaxTChannel), a Monte Carlo one (aim.NoisySoftmaxT, the
// noisy softmax at T > 2) or the noisy softmax at T = 2 (aim.NoisySoftmax, whose error is the
// difference from a coarser rule) the larger distance from MMSE to the fixed points solved,
// from the same start, with FisherSum moved up and down by its error. It is 0 for the channels
// computed to 1e-12 (softmax, hardmax T = 2).
func mmseErr(c *SEConfig, ch aim.Channel, rho, alphaR float64, D int, p se.Point) (float64, error) {
	var bound func(sign float64) aim.Channel
	switch b := ch.(type) {
	case *aim.HardmaxTChannel:
		bound = func(sign float64) aim.Channel { return b.Bound(sign) }
	case *aim.NoisySoftmaxT:
		bound = func(sign float64) aim.Channel { return b.Bound(sign) }
	case *aim.NoisySoftmax:
		bound = func(sign float64) aim.Channel { return b.Bound(sign) }
	default:
		return 0, nil
	}
	var m [2]float64
	for i, sign := range []float64{-1, 1} {
		var b se.Point
		var err error
		if rho == 0 {
			b, err = se.SolveRescaled(bound(sign), alphaR, c.options())
		} else {
			b, err = c.solveSE(bound(sign), rho, alphaR*rho, D, c.options())
		}
		if err != nil {
			return math.NaN(), err
		}
		m[i] = b.MMSE
	}
	return math.Max(math.Abs(m[0]-p.MMSE), math.Abs(m[1]-p.MMSE)), nil
}

// PointSeed returns the seed of the Monte Carlo generalisation error at one point of `aim se`:
// the user's seed mixed (SplitMix64's finaliser) with the bits of rho and alpha-bar_r =
// alpha/rho, so that a point gets the same draws in any grid, sweep or order. The CLI derives
// it; it belongs with the engine's stream registry (engine/stream).
func PointSeed(seed uint64, rho, alphaR float64) uint64 {
	z := seed
	for _, v := range []float64{rho, alphaR} {
		z += 0x9E3779B97F4A7C15 ^ math.Float64bits(v)
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
	}
	return z
}

// ExecuteSE runs `aim se` as the command does: RunSE, with the outputs opened before it solves
// anything, then the CSV, the figure and the manifest written. It returns the line to print;
// unconverged points give an error after everything is written, and so does an interruption
// (ErrInterrupted: the points solved are written, the manifest lists the missing ones).
func ExecuteSE(c *SEConfig, env job.Env) (string, error) {
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, "", "") },
		func(e job.Env) (*SEResult, error) { return RunSE(c, e) })
	stop := err
	if err != nil && !job.Stopped(err, out) {
		return "", err
	}
	if err := SESchema.Write(out.CSV(), 0, res.Rows); err != nil {
		return "", out.Abort(err)
	}
	t, err := SESchema.Table(c.Out, 0, res.Rows)
	if err != nil {
		return "", out.Abort(err)
	}
	if !c.teacher.PowerLaw { // the thresholds are the MP teacher's
		t.Th = figureThresholds(res.Thresholds)
	}
	var fig *figure.Figure
	if stop == nil || len(res.Rows) > 0 {
		if fig, err = job.DrawFigure([]*table.Table{t}, c.Figure.Options(plot.Options{Axes: c.Axes})); err != nil {
			return "", out.Abort(err)
		}
	}
	params := c.params()
	for k, v := range map[string]any{"rescaled": c.Rescaled, "damping": c.Damping, "tol": c.Tol, "max_iter": c.MaxIter,
		"accelerate": c.Accelerate, "gen_samples": c.GenSamples, "gen_inner": c.GenInner, "seed": c.Seed, "start": c.start.String()} {
		params[k] = v
	}
	if c.teacher.PowerLaw {
		params["D"] = c.dims
	}
	man := env.Manifest("se", "cpu (theory: scalar state evolution)", params, start)
	if !c.teacher.PowerLaw { // the thresholds are the MP teacher's
		man["thresholds"] = jsonThresholds(res.Thresholds)
	}
	man["points"] = len(res.Rows)
	man["unconverged"] = len(res.Failed)
	coex := []map[string]any{}
	for _, x := range res.Coexisting {
		num := func(v float64) any { // JSON holds no NaN or infinity
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil
			}
			return v
		}
		coex = append(coex, map[string]any{"rho": x.Rho, "alpha": x.Alpha, "mmse_uninformed": num(x.MMSEUninformed), "mmse_informed": num(x.MMSEInformed),
			"free_entropy_uninformed": num(x.PhiUninformed), "free_entropy_informed": num(x.PhiInformed), "optimal": x.Optimal})
	}
	man["coexisting"] = coex
	if stop != nil {
		job.MarkIncomplete(man, res.Missing)
	}
	return out.Complete(fig, man, len(res.Rows), start, errors.Join(stop, res.Err()))
}

// figureThresholds keeps the thresholds the manifest records as numbers (no infinities).
func figureThresholds(th SEThresholds) *table.Thresholds {
	out := &table.Thresholds{AlphaPR: map[string]float64{}, AlphaBarC: th.AlphaBarC, AlphaIT: map[string]float64{}, AlphaAlg: map[string]float64{}}
	for k, v := range th.AlphaPR {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			out.AlphaPR[k] = v
		}
	}
	for k, tr := range th.FirstOrder {
		if !math.IsNaN(tr.AlphaIT) {
			out.AlphaIT[k] = tr.AlphaIT
		}
		if !math.IsNaN(tr.AlphaAlg) {
			out.AlphaAlg[k] = tr.AlphaAlg
		}
	}
	return out
}

// jsonThresholds replaces infinite thresholds (no perfect recovery) by nil, which JSON can hold.
func jsonThresholds(th SEThresholds) map[string]any {
	clean := func(m map[string]float64) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				out[k] = nil
			} else {
				out[k] = v
			}
		}
		return out
	}
	out := map[string]any{"alpha_PR": clean(th.AlphaPR), "alpha_PR_counting": clean(th.AlphaPRCounting), "alpha_bar_c": th.AlphaBarC, "alpha_bar_c_err": th.AlphaBarCErr}
	if th.FirstOrder != nil {
		it, alg, sp := map[string]float64{}, map[string]float64{}, map[string]float64{}
		for k, tr := range th.FirstOrder {
			it[k], alg[k], sp[k] = tr.AlphaIT, tr.AlphaAlg, tr.AlphaSpinodal
		}
		out["alpha_IT"], out["alpha_alg"], out["alpha_spinodal"] = clean(it), clean(alg), clean(sp)
	}
	return out
}

// denseSE solves the SE on a dense grid for the lines of a simulation's figure, at every rho
// of m: alpha = a1 k / n for k = from..n (when logx, the geometric grid a0 (a1/a0)^(k/n)). A
// power-law teacher's is at the simulations' dimension D (unused for mp).
func denseSE(m *Model, D int, a0, a1 float64, from, n int, logx bool) (*table.Table, error) {
	ch, err := m.theoryChannel()
	if err != nil {
		return nil, err
	}
	if m.Noise > 0 && m.T > 2 && n > 12 {
		// The noisy softmax's SE at T > 2 costs about a minute a point (aim.NoisySoftmaxT): a
		// coarser line.
		from, n = (from*12+n-1)/n, 12
	}
	var rows []SERow
	seen := map[float64]bool{}
	for _, r := range m.rhos {
		if seen[r] {
			continue
		}
		seen[r] = true
		for k := from; k <= n; k++ {
			a := a1 * float64(k) / float64(n)
			if logx {
				a = a0 * math.Pow(a1/a0, float64(k)/float64(n))
			}
			if a <= 0 {
				continue
			}
			p, err := m.solveSE(ch, r, a, D, se.DefaultOptions())
			if err != nil {
				continue
			}
			row := seRowAt(m, r, a/r, m.theoryD(D), p)
			row.Alpha, row.AlphaBar = a, a*m.directions()
			rows = append(rows, row)
		}
	}
	return SESchema.Table("se", 0, rows)
}

// seMMSE is the state evolution's mmse at (rho, alpha) beside a simulation at dimension D
// (NaN where it does not converge): a power-law teacher's at that D.
func (m *Model) seMMSE(ch aim.Channel, rho, alpha float64, D int) float64 {
	p, err := m.solveSE(ch, rho, alpha, D, se.DefaultOptions())
	if err != nil {
		return math.NaN()
	}
	return p.MMSE
}

// solveSE solves the Bayes-optimal state evolution at (rho, alpha): the MP teacher's
// (se.Solve), or the power-law teacher's at dimension D (se.SolvePrior with its D
// eigenvalues).
func (m *Model) solveSE(ch aim.Channel, rho, alpha float64, D int, o se.Options) (se.Point, error) {
	if !m.teacher.PowerLaw {
		return se.Solve(ch, rho, alpha, o)
	}
	return se.SolvePrior(ch, m.prior(rho, D), alpha, o)
}

// theoryD is the D of the theory's rows beside a simulation at dimension D: D for a power-law
// teacher, 0 (none) for mp.
func (m *Model) theoryD(D int) int {
	if m.teacher.PowerLaw {
		return D
	}
	return 0
}
