// Package benchjob is aim bench: GAMP-RIE and GD iterations timed on every device, each
// device operation timed in its bucket through the observer of the device's checked front
// (device.Observer), with the Dgemm rate beside them. It plans each case's memory with the AIM
// jobs' model (package aimjob).
package benchjob

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/backend"
	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
)

// BenchConfig is the configuration of `aim bench`: one GAMP-RIE iteration and one GD step of
// the softmax AIM at growing D, with stored tokens at each D of Dims and streamed tokens at
// each D of StreamedDims, on every device, warm (one iteration first, not counted) and repeated
// (Repeat iterations, their median reported), with the seconds of every kind of device
// operation, the GFLOP/s and its fraction of the device's square Dgemm rate measured in the
// same run.
type BenchConfig struct {
	Device        string  // "all" (the CPU, each GPU, and all GPUs as one group), "auto", or a comma list of devices and groups (SplitDevices)
	D             string  // dimensions with stored tokens, a comma list; "": the device's default; "none": none
	StreamedD     string  // dimensions with streamed tokens; "": the largest stored D; "none": none
	Algorithms    string  // a comma list of amp and gd
	Alpha         float64 // N = floor(alpha D^2) samples
	Rho           float64 // R = floor(rho D)
	Channel       string  // softmax, or linear (the quadratic network, T = 1)
	T             int     // tokens per sequence
	TGiven        bool    // T was given (--T); otherwise the linear channel takes T = 1
	Beta          float64 // softmax inverse temperature
	Repeat        int     // timed iterations after the warm-up (at least 3)
	Precision     string  // a comma list of device.Precision names: one row per precision of the large contractions
	GemmSize      int     // n of the n x n x n Dgemm rate (0: 2048 on the CPU, 8192 on a GPU)
	Seed          uint64  // the data's seed
	Workers       int     // CPU goroutines (0: all cores)
	Threads       int     // CPU BLAS threads (0: all cores)
	HostTimer     bool    // time operations with the host clock even where a GPU timer exists
	aimjob.Tokens         // Chunk and MaxMemory of the streamed rows (Mode is not used)
	Out, Plot     string  // the CSV (its manifest beside it) and the figure ("" for none)

	job.Figure // the figure's size and title (--size, --title)

	dims, streamed []int              // parsed D lists (nil: the device's default)
	precs          []device.Precision // parsed Precision
	noStreamed     bool               // StreamedD is "none"
	algos          []string
	devices        []string // parsed device names ("all" expanded when the devices are opened)
}

// NewBenchConfig returns the configuration of `aim bench` with no flag set.
func NewBenchConfig() *BenchConfig {
	return &BenchConfig{Device: "all", Algorithms: "amp,gd", Alpha: 0.25, Rho: 0.5, Channel: "softmax", T: 2, Beta: 1, Repeat: 3, Seed: 1, Precision: "fp64",
		Out: "results/bench.csv", Plot: "results/bench.png"}
}

// benchDefaults are the dimensions and the Dgemm size of a device kind when --D and
// --gemm-size are not given: small on the CPU (seconds per row on two cores), large on a GPU.
var benchDefaults = map[string]struct {
	dims []int
	gemm int
}{
	"cpu":  {[]int{100, 200, 400}, 2048},
	"cuda": {[]int{500, 1000, 2000}, 8192},
}

// parseDims reads a comma list of dimensions D >= 2 (what names the flag in errors), sorted
// ascending, each once.
func parseDims(what, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, job.Inputf("%s %q: %q is not a whole number (want a comma list such as 200,400,800)", what, s, f)
		}
		if v < 2 {
			return nil, job.Inputf("%s %q: D = %d, need D >= 2", what, s, v)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, nil
}

// parseDeviceNames reads --device: all, auto, or a comma list (SplitDevices) of the names of
// --device elsewhere (cpu, cuda, cuda:I, and the groups cuda:I,J,..., cuda:all and cpu:K: one
// set of rows each; cuda is cuda:0), each once.
func parseDeviceNames(s string) ([]string, error) {
	var out []string
	fields := SplitDevices(s)
	if len(fields) == 0 {
		return nil, job.Inputf("--device %q: no device", s)
	}
	for _, name := range fields {
		switch name {
		case "all", "auto":
			if len(fields) > 1 {
				return nil, job.Inputf("--device %q: %s stands alone", s, name)
			}
		default:
			spec, err := backend.Parse(name)
			if err != nil {
				return nil, job.Inputf("--device %q: %v", s, err)
			}
			if spec.Kind == "cuda" && len(spec.Ordinals) == 1 {
				name = "cuda:" + strconv.Itoa(spec.Ordinals[0])
			}
		}
		if slices.Contains(out, name) {
			return nil, job.Inputf("--device %q: %s given twice", s, name)
		}
		out = append(out, name)
	}
	return out, nil
}

// SplitDevices splits a comma list of devices: cpu,cuda,cuda:1 is three devices, and an ordinal
// alone continues the group before it (cuda:0,1,cpu is the group cuda:0,1 and cpu).
func SplitDevices(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if _, err := strconv.Atoi(f); err == nil && len(out) > 0 && strings.HasPrefix(out[len(out)-1], "cuda:") {
			out[len(out)-1] += "," + f
			continue
		}
		out = append(out, f)
	}
	return out
}

// Validate checks the configuration and parses its lists; every problem is bad input.
func (c *BenchConfig) Validate() error {
	var err error
	if c.devices, err = parseDeviceNames(c.Device); err != nil {
		return err
	}
	c.dims, c.streamed, c.noStreamed = nil, nil, false
	switch d := strings.TrimSpace(c.D); d {
	case "":
	case "none":
		c.dims = []int{}
	default:
		if c.dims, err = parseDims("--D", d); err != nil {
			return err
		}
	}
	switch sd := strings.TrimSpace(c.StreamedD); sd {
	case "":
	case "none":
		c.noStreamed = true
	default:
		if c.streamed, err = parseDims("--streamed-D", sd); err != nil {
			return err
		}
	}
	if c.dims != nil && len(c.dims) == 0 && c.streamed == nil {
		return job.Inputf("--D none: nothing to run without --streamed-D (a list of D)")
	}
	c.algos = nil
	for _, a := range strings.Split(c.Algorithms, ",") {
		a = strings.TrimSpace(a)
		if a != "amp" && a != "gd" {
			return job.Inputf("--algorithms %q: unknown algorithm %q (want amp, gd or amp,gd)", c.Algorithms, a)
		}
		if !slices.Contains(c.algos, a) {
			c.algos = append(c.algos, a)
		}
	}
	c.precs = nil
	for _, f := range strings.Split(c.Precision, ",") {
		p, err := device.ParsePrecision(strings.TrimSpace(f))
		if err != nil {
			return job.Inputf("--precision %q: %v", c.Precision, err)
		}
		if !slices.Contains(c.precs, p) {
			c.precs = append(c.precs, p)
		}
	}
	switch c.Channel {
	case "softmax":
	case "linear":
		if !c.TGiven {
			c.T = 1
		}
		if c.T != 1 {
			return job.Inputf("--channel linear is the quadratic network, one token: --T %d, need --T 1", c.T)
		}
	default:
		return job.Inputf("--channel %q: want softmax or linear (the hardmax GD student has no gradient)", c.Channel)
	}
	switch {
	case c.Repeat < 3:
		return job.Inputf("--repeat %d: need at least 3 timed iterations (their median is reported)", c.Repeat)
	case !(c.Alpha > 0) || math.IsInf(c.Alpha, 0):
		return job.Inputf("--alpha %g: need alpha > 0", c.Alpha)
	case !(c.Rho > 0) || math.IsInf(c.Rho, 0):
		return job.Inputf("--rho %g: need rho > 0", c.Rho)
	case c.T < 2 && c.Channel == "softmax":
		return job.Inputf("--T %d: need T >= 2", c.T)
	case !(c.Beta > 0) || math.IsInf(c.Beta, 0):
		return job.Inputf("--beta %g: need 0 < beta < inf", c.Beta)
	case c.GemmSize < 0 || c.GemmSize == 1:
		return job.Inputf("--gemm-size %d: need 0 (the device's default) or n >= 2", c.GemmSize)
	case c.Workers < 0:
		return job.Inputf("--workers %d: need 0 (all cores) or more", c.Workers)
	case c.Threads < 0:
		return job.Inputf("--threads %d: need 0 (all cores) or more", c.Threads)
	}
	c.Mode = "auto"
	if err := c.ValidateTokens(); err != nil {
		return err
	}
	for _, D := range append(slices.Clone(c.dims), c.streamed...) {
		if err := c.params(D).Validate(); err != nil {
			return job.Inputf("%v", err)
		}
	}
	if err := job.CheckPlot(c.Plot); err != nil {
		return err
	}
	if err := job.CheckCSV(c.Out); err != nil {
		return err
	}
	return nil
}

// channel is the channel of the benchmark: softmax, or linear.
func (c *BenchConfig) channel() channel.Spec {
	if c.Channel == "linear" {
		return channel.Spec{Kind: channel.KindLinear, T: 1}
	}
	return channel.Spec{Kind: channel.KindSoftmax, T: c.T, Beta: c.Beta}
}

// params returns the model at dimension D.
func (c *BenchConfig) params(D int) aim.Params {
	return aim.Params{D: D, Alpha: c.Alpha, Rho: c.Rho, Channel: c.channel(), Seed: c.Seed}
}

// AMPFlops is the floating-point work counted for one GAMP-RIE iteration:
//
//	F_amp = 2 N T D^2 (forward X S-hat) + 2 N T D^2 (back-projection X^T (C X))
//	      + 2 N T^2 D (TokenDots) + 2 N T^2 D (TokenMix)
//	      + (4/3 + 2) D^3 (EighSym: the tridiagonal reduction and the back-transformation of the
//	        eigenvectors; the tridiagonal solver, data-dependent, is not counted)
//	      + 2 D^3 (SpectralCompose O diag(f) O^T as a product)
//	      = 4 N T D^2 + 4 N T^2 D + (16/3) D^3.
//
// The O(N T^2) channel and the small operations are not counted, nor the regeneration of
// streamed tokens, and a symmetric back-projection (QuadFormSum, a rank-k update doing half the
// multiply-adds) counts as the product it replaces, so that the rates of devices compare.
func AMPFlops(p aim.Params) float64 {
	D, N, T := float64(p.D), float64(p.N()), float64(p.T())
	return 4*N*T*D*D + 4*N*T*T*D + 16.0/3*D*D*D
}

// GDFlops is the floating-point work counted for one gradient step of the student of width
// R = floor(rho D):
//
//	F_gd = 2 R D^2 (S = W^T W / sqrt(R D)) + 2 N T D^2 (forward X S) + 2 N T^2 D (TokenDots)
//	     + 2 N T^2 D (TokenMix Gamma X) + 2 N T D^2 (G_S = X^T (Gamma X))
//	     + 4 R D^2 (grad = W (G_S + G_S^T) / sqrt(R D), two products)
//	     = 4 N T D^2 + 4 N T^2 D + 6 R D^2.
//
// The channel, the loss gradient, Adam and the regeneration of streamed tokens are not counted.
func GDFlops(p aim.Params) float64 {
	D, N, T, R := float64(p.D), float64(p.N()), float64(p.T()), float64(p.R())
	return 4*N*T*D*D + 4*N*T*T*D + 6*R*D*D
}

// benchFlops returns the counted work of one iteration of algorithm algo.
func benchFlops(algo string, p aim.Params) float64 {
	if algo == "gd" {
		return GDFlops(p)
	}
	return AMPFlops(p)
}

// BenchRow is one (device, algorithm, D, tokens) of `aim bench`: a row of its CSV.
type BenchRow struct {
	Device        string // cpu, cuda:0, ...
	Algorithm     string // amp (one GAMP-RIE iteration) or gd (one Adam step)
	Channel       string // softmax or linear (empty in older CSVs: softmax)
	D, N, T       int
	Tokens        string // stored or streamed
	Chunk         int    // samples per chunk when streamed (0 when stored)
	Repeat        int    // timed iterations after the warm-up
	SecondsMedian float64
	SecondsMin    float64
	Generate      float64 // seconds to draw the teacher and the data (once per D and tokens)
	Flops         float64 // AMPFlops or GDFlops
	GFlops        float64 // Flops / SecondsMedian / 1e9
	DgemmGFlops   float64 // the device's square Dgemm rate measured just before the row, 2 n^3 / median seconds / 1e9
	Fraction      float64 // GFlops / DgemmGFlops
	Precision     string  // of the large contractions (device.Precision; empty in older CSVs: fp64)
	GemmGFlops    float64 // the square product's rate at the row's precision (device.GemmAt), measured just before the row: DgemmGFlops at fp64
	FractionGemm  float64 // GFlops / GemmGFlops: the row's rate against its own precision's product
	Ops           OpTimes // per operation, of the median iteration (the mean of the two middle ones for an even Repeat)
	Host          float64 // SecondsMedian - Ops.Sum(): the host's work between operations
}

// BenchSchema is the one definition of an `aim bench` row.
var BenchSchema = &table.Schema[BenchRow]{Kind: table.Bench, Columns: benchColumns()}

func benchColumns() []table.Column[BenchRow] {
	cols := []table.Column[BenchRow]{
		table.Word("device", func(r *BenchRow) string { return r.Device }),
		table.Word("algorithm", func(r *BenchRow) string { return r.Algorithm }),
		table.Int("D", func(r *BenchRow) int { return r.D }),
		table.Int("N", func(r *BenchRow) int { return r.N }),
		table.Int("T", func(r *BenchRow) int { return r.T }),
		table.Added(table.Word("channel", func(r *BenchRow) string { return r.Channel })),
		table.Word("tokens", func(r *BenchRow) string { return r.Tokens }),
		table.Int("chunk", func(r *BenchRow) int { return r.Chunk }),
		table.Int("repeat", func(r *BenchRow) int { return r.Repeat }),
		table.Float("seconds_median", func(r *BenchRow) float64 { return r.SecondsMedian }),
		table.Float("seconds_min", func(r *BenchRow) float64 { return r.SecondsMin }),
		table.Float("generate_s", func(r *BenchRow) float64 { return r.Generate }),
		table.Float("flops", func(r *BenchRow) float64 { return r.Flops }),
		table.Float("gflops", func(r *BenchRow) float64 { return r.GFlops }),
		table.Float("dgemm_gflops", func(r *BenchRow) float64 { return r.DgemmGFlops }),
		table.Float("fraction_of_dgemm", func(r *BenchRow) float64 { return r.Fraction }),
		table.Added(table.Word("precision", func(r *BenchRow) string { return r.Precision })),
		table.Added(table.Float("gemm_gflops", func(r *BenchRow) float64 { return r.GemmGFlops })),
		table.Added(table.Float("fraction_of_gemm", func(r *BenchRow) float64 { return r.FractionGemm })),
	}
	for k, name := range OpColumns {
		cols = append(cols, table.Float(name, func(r *BenchRow) float64 { return r.Ops.Seconds[k] }))
	}
	return append(cols, table.Float("host_s", func(r *BenchRow) float64 { return r.Host }))
}

// benchCase is one (D, tokens) of a target: its model and token plan.
type benchCase struct {
	p    aim.Params
	plan aimjob.TokenPlan
}

// benchTarget is what one set of rows runs on: a device or a device group, each member with an
// operation timer and the group's sums timed as the collective bucket (timedCollective).
type benchTarget struct {
	name   string // the CSV's device column
	dev    *job.Device
	timers []*opTimer    // one per member, lead first
	group  *device.Group // the members with the timed collective
	gemm   int           // n of the Dgemm rate, on the lead
	cases  []benchCase

	precs []device.Precision // the run's precisions that every member computes

	dgemmSeconds float64   // median seconds of one n x n x n Dgemm, over all the target's measures
	dgemmGFlops  float64   // its rate
	dgemmRates   []float64 // the rate measured before each row
}

// supports returns nil when every member of the target computes its large products at p
// (device.SupportsPrecision).
func (t *benchTarget) supports(p device.Precision) error {
	for _, m := range t.group.Members {
		if err := device.SupportsPrecision(m, p); err != nil {
			return err
		}
	}
	return nil
}

// BenchDevice is what the manifest records of a device of the run.
type BenchDevice struct {
	Name         string  `json:"name"`
	Description  string  `json:"description"`
	OpTimer      string  `json:"op_timer"`
	GemmSize     int     `json:"gemm_size"`
	DgemmSeconds float64 `json:"dgemm_seconds"`
	DgemmGFlops  float64 `json:"dgemm_gflops"`
	Dims         []int   `json:"D"`
	StreamedDims []int   `json:"streamed_D"`
	Chunk        int     `json:"chunk"`
}

// BenchResult is what RunBench measured.
type BenchResult struct {
	Rows    []BenchRow
	Devices []BenchDevice
	Note    string // the devices, one sentence each
}

// openTargets opens every device of --device (all: the CPU, each GPU that CUDA reports usable
// and, with two or more, all of them as one group; auto: the device auto picks). A device that
// cannot be opened is bad input.
func (c *BenchConfig) openTargets(env job.Env) ([]*benchTarget, error) {
	names := c.devices
	if len(names) == 1 && names[0] == "all" {
		names = []string{"cpu"}
		gpus := backend.GPUs()
		for i := range gpus {
			names = append(names, "cuda:"+strconv.Itoa(i))
		}
		if gpus > 1 {
			names = append(names, "cuda:all")
		}
	}
	var out []*benchTarget
	fail := func(err error) ([]*benchTarget, error) {
		for _, t := range out {
			t.dev.Close()
		}
		return nil, err
	}
	for _, name := range names {
		d, err := job.OpenDevice(name, c.Workers, c.Threads)
		if err != nil {
			return fail(err)
		}
		switch {
		case d.Group.Len() > 1:
			name = d.Name() // cuda x2, cpu x3
		case name == "auto" && d.Name() == "cuda":
			name = "cuda:0"
		case name == "auto":
			name = d.Name()
		}
		env.Notef("bench on %s: %s", name, d.Note)
		kind := d.Group.Lead().Info().Name
		t, err := newTarget(name, d, c.HostTimer, c.GemmSize)
		if err != nil {
			d.Close()
			return fail(err)
		}
		if t.gemm == 0 {
			t.gemm = benchDefaults[kind].gemm
		}
		out = append(out, t)
		dims := c.dims
		if dims == nil {
			dims = benchDefaults[kind].dims
		}
		streamed := c.streamed
		if streamed == nil && !c.noStreamed && len(dims) > 0 {
			streamed = dims[len(dims)-1:]
		}
		if err := c.plan(t, dims, streamed); err != nil {
			return fail(err)
		}
	}
	return out, nil
}

// plan checks that the Dgemm and every case fit in the target's memory (within --max-memory),
// with the memory model of `aim amp` and `aim gd` (the larger of the two, with the work arrays
// the device keeps at the most demanding of the run's precisions), and sets its cases.
func (c *BenchConfig) plan(t *benchTarget, dims, streamed []int) error {
	limit := t.dev.FreeBytes()
	if c.MaxMemory != "" {
		m, _ := aimjob.ParseBytes(c.MaxMemory) // validated
		limit = min(limit, m)
	}
	if need := 24 * uint64(t.gemm) * uint64(t.gemm); need > limit {
		return job.Inputf("%s: the %d x %d Dgemm needs %s, and %s is available (set --gemm-size)", t.name, t.gemm, t.gemm,
			device.Bytes(need), device.Bytes(limit))
	}
	o, lead := gd.DefaultOptions(), t.dev.Group.Lead()
	scratch := func(p aim.Params, n, rows int) (ampBytes, gdBytes uint64) {
		for _, pr := range c.precs {
			ao, gdo := amp.DefaultOptions(), o
			ao.Precision, gdo.Precision = pr, pr
			ampBytes, gdBytes = max(ampBytes, amp.Scratch(lead, p, ao, n, rows)), max(gdBytes, gd.Scratch(lead, p, gdo, n, rows))
		}
		return ampBytes, gdBytes
	}
	stored := func(p aim.Params, n int) uint64 {
		a, g := scratch(p, n, n)
		return max(aimjob.StoredPeak(p, n, amp.Bytes(p, n)+a), aimjob.StoredPeak(p, n, gd.Bytes(p, o, n)+g))
	}
	streamedNeed := func(p aim.Params, n, chunk int) uint64 {
		a, g := scratch(p, n, min(chunk, n))
		return max(aimjob.StreamedPeak(p, n, chunk, amp.StreamedBytes(p, n, chunk)+a), aimjob.StreamedPeak(p, n, chunk, gd.StreamedBytes(p, o, n, chunk)+g))
	}
	for _, mode := range []struct {
		name string
		dims []int
	}{{"stored", dims}, {"streamed", streamed}} {
		for _, D := range mode.dims {
			p := c.params(D)
			if err := p.Validate(); err != nil {
				return job.Inputf("%s: %v", t.name, err)
			}
			sim := aimjob.SoftmaxSim(c.T, c.Beta, c.Rho, c.Alpha, D, c.Seed, aimjob.Tokens{Mode: mode.name, Chunk: c.Chunk, MaxMemory: c.MaxMemory})
			pl, err := sim.PlanTokens(t.dev, stored, streamedNeed)
			if err != nil {
				return job.Inputf("%s, %s tokens: %v", t.name, mode.name, err)
			}
			t.cases = append(t.cases, benchCase{p: p, plan: pl})
		}
	}
	return nil
}

// RunBench opens every device, checks that every case fits (bad input otherwise, before
// anything is computed), then measures each device in turn.
func RunBench(c *BenchConfig, env job.Env) (*BenchResult, error) {
	targets, err := c.openTargets(env)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, t := range targets {
			t.dev.Close()
		}
	}()
	if err := env.Begin(); err != nil {
		return nil, err
	}
	total := 0
	var notes []string
	for _, t := range targets {
		t.precs = nil
		for _, p := range c.precs {
			if err := t.supports(p); err != nil {
				notes = append(notes, fmt.Sprintf("%s: no %s rows: %v", t.name, p, err))
				continue
			}
			t.precs = append(t.precs, p)
		}
		total += len(t.cases) * len(c.algos) * len(t.precs)
	}
	bar := env.Meter(total, "bench")
	defer bar.Finish()
	res := &BenchResult{}
	for _, t := range targets {
		rows, err := t.run(c, bar)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, rows...)
		bd := BenchDevice{Name: t.name, Description: t.dev.Group.Describe(), OpTimer: t.timers[0].timer, GemmSize: t.gemm,
			DgemmSeconds: t.dgemmSeconds, DgemmGFlops: t.dgemmGFlops, Dims: []int{}, StreamedDims: []int{}}
		for _, bc := range t.cases {
			if bc.plan.Streamed {
				bd.StreamedDims, bd.Chunk = append(bd.StreamedDims, bc.p.D), bc.plan.Chunk
			} else {
				bd.Dims = append(bd.Dims, bc.p.D)
			}
		}
		res.Devices = append(res.Devices, bd)
		notes = append(notes, t.name+": "+t.dev.Note)
	}
	res.Note = strings.Join(notes, "; ")
	return res, nil
}

// params returns the manifest's parameters.
func (c *BenchConfig) manifestParams() map[string]any {
	return map[string]any{"device": c.Device, "D": c.D, "streamed_D": c.StreamedD, "algorithms": c.algos,
		"channel": c.Channel, "precision": c.precs, "alpha": c.Alpha, "rho": c.Rho, "T": c.T, "beta": c.Beta, "repeat": c.Repeat,
		"warmup": 1, "gemm_size": c.GemmSize, "seed": c.Seed, "workers": c.Workers, "threads": c.Threads,
		"host_timer": c.HostTimer, "chunk": c.Chunk, "max_memory": c.MaxMemory}
}

// ExecuteBench runs `aim bench` as the command does: RunBench with the outputs opened once the
// devices are open and every case is known to fit, then the CSV, the figure and the manifest.
func ExecuteBench(c *BenchConfig, env job.Env) (string, error) {
	res, out, start, err := job.Execute(env, func() (*job.Outputs, error) { return job.OpenOutputs(c.Out, c.Plot, "", "") },
		func(e job.Env) (*BenchResult, error) { return RunBench(c, e) })
	if err != nil {
		return "", err
	}
	if err := BenchSchema.Write(out.CSV(), 0, res.Rows); err != nil {
		return "", out.Abort(err)
	}
	var fig *figure.Figure
	if c.Plot != "" {
		t, err := BenchSchema.Table(c.Out, 0, res.Rows)
		if err != nil {
			return "", out.Abort(err)
		}
		t.Params = c.manifestParams()
		if fig, err = job.DrawFigure([]*table.Table{t}, c.Figure.Options(plot.Options{})); err != nil {
			return "", out.Abort(err)
		}
	}
	man := env.Manifest("bench", res.Note, c.manifestParams(), start)
	man["devices"] = res.Devices
	man["rows"] = len(res.Rows)
	man["flops"] = map[string]string{
		"amp": "4 N T D^2 + 4 N T^2 D + (16/3) D^3 (forward and back-projection products, TokenDots, TokenMix, EighSym (4/3 + 2) D^3, SpectralCompose 2 D^3)",
		"gd":  "4 N T D^2 + 4 N T^2 D + 6 R D^2 (forward and G_S products, TokenDots, TokenMix, W^T W and the two W G_S products)",
	}
	man["timing"] = "warm-up iteration first; repeat timed iterations between the engine's Progress callbacks (host clock); operations timed by the op_timer of each device; host_s = seconds_median - the operations' sum"
	return out.Complete(fig, man, len(res.Rows), start, nil)
}
