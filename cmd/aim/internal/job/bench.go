package job

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aimtheory/aim/backend"
	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
	"github.com/aimtheory/aim/engine/stream"
)

// BenchConfig is the configuration of `aim bench`: one GAMP-RIE iteration and one GD step of
// the softmax AIM at growing D, with stored tokens at each D of Dims and streamed tokens at
// each D of StreamedDims, on every device, warm (one iteration first, not counted) and repeated
// (Repeat iterations, their median reported), with the seconds of every kind of device
// operation, the GFLOP/s and its fraction of the device's square Dgemm rate measured in the
// same run.
type BenchConfig struct {
	Device     string  // "all" (the CPU, each GPU, and all GPUs as one group), "auto", or a comma list of devices and groups (SplitDevices)
	D          string  // dimensions with stored tokens, a comma list; "": the device's default; "none": none
	StreamedD  string  // dimensions with streamed tokens; "": the largest stored D; "none": none
	Algorithms string  // a comma list of amp and gd
	Alpha      float64 // N = floor(alpha D^2) samples
	Rho        float64 // R = floor(rho D)
	T          int     // tokens per sequence
	Beta       float64 // softmax inverse temperature
	Repeat     int     // timed iterations after the warm-up (at least 3)
	GemmSize   int     // n of the n x n x n Dgemm rate (0: 2048 on the CPU, 8192 on a GPU)
	Seed       uint64  // the data's seed
	Workers    int     // CPU goroutines (0: all cores)
	Threads    int     // CPU BLAS threads (0: all cores)
	HostTimer  bool    // time operations with the host clock even where a GPU timer exists
	Tokens             // Chunk and MaxMemory of the streamed rows (Mode is not used)
	Out, Plot  string  // the CSV (its manifest beside it) and the figure ("" for none)

	Size FigureSize // the figure's size (--size); zero: the default

	dims, streamed []int // parsed D lists (nil: the device's default)
	noStreamed     bool  // StreamedD is "none"
	algos          []string
	devices        []string // parsed device names ("all" expanded when the devices are opened)
}

// NewBenchConfig returns the configuration of `aim bench` with no flag set.
func NewBenchConfig() *BenchConfig {
	return &BenchConfig{Device: "all", Algorithms: "amp,gd", Alpha: 0.25, Rho: 0.5, T: 2, Beta: 1, Repeat: 3, Seed: 1,
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
			return nil, Inputf("%s %q: %q is not a whole number (want a comma list such as 200,400,800)", what, s, f)
		}
		if v < 2 {
			return nil, Inputf("%s %q: D = %d, need D >= 2", what, s, v)
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
		return nil, Inputf("--device %q: no device", s)
	}
	for _, name := range fields {
		switch name {
		case "all", "auto":
			if len(fields) > 1 {
				return nil, Inputf("--device %q: %s stands alone", s, name)
			}
		default:
			spec, err := backend.Parse(name)
			if err != nil {
				return nil, Inputf("--device %q: %v", s, err)
			}
			if spec.Kind == "cuda" && len(spec.Ordinals) == 1 {
				name = "cuda:" + strconv.Itoa(spec.Ordinals[0])
			}
		}
		if slices.Contains(out, name) {
			return nil, Inputf("--device %q: %s given twice", s, name)
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
		return Inputf("--D none: nothing to run without --streamed-D (a list of D)")
	}
	c.algos = nil
	for _, a := range strings.Split(c.Algorithms, ",") {
		a = strings.TrimSpace(a)
		if a != "amp" && a != "gd" {
			return Inputf("--algorithms %q: unknown algorithm %q (want amp, gd or amp,gd)", c.Algorithms, a)
		}
		if !slices.Contains(c.algos, a) {
			c.algos = append(c.algos, a)
		}
	}
	switch {
	case c.Repeat < 3:
		return Inputf("--repeat %d: need at least 3 timed iterations (their median is reported)", c.Repeat)
	case !(c.Alpha > 0) || math.IsInf(c.Alpha, 0):
		return Inputf("--alpha %g: need alpha > 0", c.Alpha)
	case !(c.Rho > 0) || math.IsInf(c.Rho, 0):
		return Inputf("--rho %g: need rho > 0", c.Rho)
	case c.T < 2:
		return Inputf("--T %d: need T >= 2", c.T)
	case !(c.Beta > 0) || math.IsInf(c.Beta, 0):
		return Inputf("--beta %g: need 0 < beta < inf", c.Beta)
	case c.GemmSize < 0 || c.GemmSize == 1:
		return Inputf("--gemm-size %d: need 0 (the device's default) or n >= 2", c.GemmSize)
	case c.Workers < 0:
		return Inputf("--workers %d: need 0 (all cores) or more", c.Workers)
	case c.Threads < 0:
		return Inputf("--threads %d: need 0 (all cores) or more", c.Threads)
	}
	c.Mode = "auto"
	if err := c.validateTokens(); err != nil {
		return err
	}
	for _, D := range append(slices.Clone(c.dims), c.streamed...) {
		if err := c.params(D).Validate(); err != nil {
			return Inputf("%v", err)
		}
	}
	if err := checkPlot(c.Plot); err != nil {
		return err
	}
	if err := checkCSV(c.Out); err != nil {
		return err
	}
	return nil
}

// channel is the softmax channel of the benchmark.
func (c *BenchConfig) channel() channel.Spec {
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
	}
	for k, name := range OpColumns {
		cols = append(cols, table.Float(name, func(r *BenchRow) float64 { return r.Ops.Seconds[k] }))
	}
	return append(cols, table.Float("host_s", func(r *BenchRow) float64 { return r.Host }))
}

// benchCase is one (D, tokens) of a target: its model and token plan.
type benchCase struct {
	p    aim.Params
	plan TokenPlan
}

// benchTarget is what one set of rows runs on: a device or a device group, each member wrapped
// in the operation timer and the group's sums timed as the collective bucket (timedGroup).
type benchTarget struct {
	name  string // the CSV's device column
	dev   *Device
	timed []*timedDevice // one per member, lead first
	group *device.Group  // the timed members with the timed collective
	gemm  int            // n of the Dgemm rate, on the lead
	cases []benchCase

	dgemmSeconds float64   // median seconds of one n x n x n Dgemm, over all the target's measures
	dgemmGFlops  float64   // its rate
	dgemmRates   []float64 // the rate measured before each row
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
func (c *BenchConfig) openTargets(env Env) ([]*benchTarget, error) {
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
		d, err := OpenDevice(name, c.Workers, c.Threads)
		if err != nil {
			return fail(err)
		}
		switch {
		case d.g.Len() > 1:
			name = d.Name() // cuda x2, cpu x3
		case name == "auto" && d.Name() == "cuda":
			name = "cuda:0"
		case name == "auto":
			name = d.Name()
		}
		env.notef("bench on %s: %s", name, d.Note)
		kind := d.g.Lead().Info().Name
		t := newTarget(name, d, c.HostTimer, c.GemmSize)
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
// with the memory model of `aim amp` and `aim gd` (the larger of the two), and sets its cases.
func (c *BenchConfig) plan(t *benchTarget, dims, streamed []int) error {
	limit := t.dev.freeBytes()
	if c.MaxMemory != "" {
		m, _ := ParseBytes(c.MaxMemory) // validated
		limit = min(limit, m)
	}
	if need := 24 * uint64(t.gemm) * uint64(t.gemm); need > limit {
		return Inputf("%s: the %d x %d Dgemm needs %s, and %s is available (set --gemm-size)", t.name, t.gemm, t.gemm,
			device.Bytes(need), device.Bytes(limit))
	}
	o := gd.DefaultOptions()
	stored := func(p aim.Params, n int) uint64 {
		return max(storedPeak(p, n, amp.Bytes(p, n)), storedPeak(p, n, gd.Bytes(p, o, n)))
	}
	streamedNeed := func(p aim.Params, n, chunk int) uint64 {
		return max(streamedPeak(p, n, chunk, amp.StreamedBytes(p, n, chunk)), streamedPeak(p, n, chunk, gd.StreamedBytes(p, o, n, chunk)))
	}
	for _, mode := range []struct {
		name string
		dims []int
	}{{"stored", dims}, {"streamed", streamed}} {
		for _, D := range mode.dims {
			p := c.params(D)
			if err := p.Validate(); err != nil {
				return Inputf("%s: %v", t.name, err)
			}
			sim := Sim{Model: Model{T: c.T, rhos: []float64{c.Rho}, alphas: []float64{c.Alpha}}, D: D, Seed: c.Seed,
				Tokens: Tokens{Mode: mode.name, Chunk: c.Chunk, MaxMemory: c.MaxMemory}}
			sim.Channel, sim.Beta = "softmax", c.Beta
			pl, err := sim.planTokens(t.dev, stored, streamedNeed)
			if err != nil {
				return Inputf("%s, %s tokens: %v", t.name, mode.name, err)
			}
			t.cases = append(t.cases, benchCase{p: p, plan: pl})
		}
	}
	return nil
}

// sample is one timed iteration: its seconds and the time spent in each kind of operation.
type sample struct {
	seconds float64
	ops     OpTimes
}

// recorder marks the end of each iteration (the engine's Progress callback) with the host clock
// and the target's operation totals; samples are the differences between consecutive marks, so
// the first iteration (the warm-up) is not one of them.
type recorder struct {
	t   *benchTarget
	at  []time.Time
	ops []OpTimes
}

func (r *recorder) mark() {
	r.at = append(r.at, time.Now())
	r.ops = append(r.ops, r.t.times())
}

func (r *recorder) samples() []sample {
	var out []sample
	for i := 1; i < len(r.at); i++ {
		out = append(out, sample{seconds: r.at[i].Sub(r.at[i-1]).Seconds(), ops: r.ops[i].sub(r.ops[i-1])})
	}
	return out
}

// summary returns the median and the minimum seconds of the samples, and the operations of the
// median sample (the mean of the two middle ones for an even count), so that they add up to the
// median with the host's share.
func summary(s []sample) (median, least float64, ops OpTimes) {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b sample) int { return cmpFloat(a.seconds, b.seconds) })
	n := len(s)
	if n%2 == 1 {
		return s[n/2].seconds, s[0].seconds, s[n/2].ops
	}
	a, b := s[n/2-1], s[n/2]
	for k := range ops.Seconds {
		ops.Seconds[k] = (a.ops.Seconds[k] + b.ops.Seconds[k]) / 2
		ops.Calls[k] = (a.ops.Calls[k] + b.ops.Calls[k]) / 2
	}
	return (a.seconds + b.seconds) / 2, s[0].seconds, ops
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// iterate runs repeat + 1 iterations of algo (the first a warm-up) on the target's timed group
// and returns the repeat timed ones.
func (t *benchTarget) iterate(algo string, parts []*aim.Data, repeat int) ([]sample, error) {
	rec := &recorder{t: t}
	D := parts[0].P.D
	var done int
	switch algo {
	case "amp":
		o := amp.DefaultOptions()
		o.MaxIter, o.Tol = repeat+1, math.SmallestNonzeroFloat64 // every iteration runs
		o.Progress = func(amp.Iteration) { rec.mark() }
		res, err := amp.RunGroup(t.group, parts, o)
		if err != nil {
			return nil, fmt.Errorf("%s GAMP-RIE at D = %d: %w", t.name, D, err)
		}
		done = res.Iterations
	case "gd":
		o := gd.DefaultOptions()
		o.Steps = repeat + 1
		o.Progress = func() { rec.mark() }
		if _, err := gd.RunGroup(t.group, parts, o); err != nil {
			return nil, fmt.Errorf("%s GD at D = %d: %w", t.name, D, err)
		}
		done = len(rec.at)
	}
	if s := rec.samples(); done == repeat+1 && len(s) == repeat {
		return s, nil
	}
	return nil, fmt.Errorf("%s %s at D = %d stopped after %d of %d iterations", t.name, algo, D, done, repeat+1)
}

// measureDgemm measures the target's square Dgemm rate on its lead, C = A B with n x n operands
// of normals: one warm-up product then repeat timed ones (the GPU's events where it has them),
// their median, in GFLOP/s (2 n^3 per product). It runs before each row, so that a row's
// fraction of the Dgemm rate is a ratio of two figures measured back to back on a machine whose
// load may change between rows.
func (t *benchTarget) measureDgemm(repeat int) (float64, error) {
	n := t.gemm
	dev := t.dev.g.Lead()
	bufs, err := device.AllocAll(dev, n*n, n*n, n*n)
	if err != nil {
		return 0, fmt.Errorf("%s Dgemm %d: %w", t.name, n, err)
	}
	defer device.FreeAll(dev, bufs...)
	for i, b := range bufs[:2] {
		if err := dev.GaussianFill(b, 7, stream.Data+uint64(i*n*n), 1); err != nil {
			return 0, fmt.Errorf("%s Dgemm %d: %w", t.name, n, err)
		}
	}
	gemm := func() error { return dev.Gemm(false, false, n, n, n, 1, bufs[0], bufs[1], 0, bufs[2]) }
	var secs []float64
	for i := 0; i <= repeat; i++ {
		s, err := t.timed[0].clock(gemm)
		if err != nil {
			return 0, fmt.Errorf("%s Dgemm %d: %w", t.name, n, err)
		}
		if i > 0 {
			secs = append(secs, s)
		}
	}
	rate := 2 * float64(n) * float64(n) * float64(n) / median(secs) / 1e9
	t.dgemmRates = append(t.dgemmRates, rate)
	t.dgemmGFlops = median(t.dgemmRates)
	t.dgemmSeconds = 2 * float64(n) * float64(n) * float64(n) / t.dgemmGFlops / 1e9
	return rate, nil
}

// median returns the median of v (the mean of the two middle values for an even count).
func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// run measures the target: its Dgemm rate, then for every case the data drawn once (timed) and
// each algorithm's iterations.
func (t *benchTarget) run(c *BenchConfig, bar Progress) ([]BenchRow, error) {
	var rows []BenchRow
	for _, bc := range t.cases {
		var parts []*aim.Data
		gen, err := hostTime(func() (err error) { parts, err = bc.plan.generate(t.dev, bc.p); return err })
		if err != nil {
			return nil, fmt.Errorf("%s: data at D = %d: %w", t.name, bc.p.D, err)
		}
		for _, algo := range c.algos {
			rate, err := t.measureDgemm(c.Repeat)
			if err != nil {
				aim.FreeGroup(t.dev.g, parts)
				return nil, err
			}
			s, err := t.iterate(algo, parts, c.Repeat)
			if err != nil {
				aim.FreeGroup(t.dev.g, parts)
				return nil, err
			}
			rows = append(rows, t.row(c, bc, algo, s, gen, rate))
			bar.Add(1)
		}
		aim.FreeGroup(t.dev.g, parts)
	}
	return rows, nil
}

// row summarises the samples of one (case, algorithm).
func (t *benchTarget) row(c *BenchConfig, bc benchCase, algo string, s []sample, gen, dgemm float64) BenchRow {
	med, least, ops := summary(s)
	tokens, chunk := "stored", 0
	if bc.plan.Streamed {
		tokens, chunk = "streamed", bc.plan.Chunk
	}
	f := benchFlops(algo, bc.p)
	gf := f / med / 1e9
	return BenchRow{Device: t.name, Algorithm: algo, D: bc.p.D, N: bc.p.N(), T: bc.p.T(), Tokens: tokens, Chunk: chunk,
		Repeat: c.Repeat, SecondsMedian: med, SecondsMin: least, Generate: gen, Flops: f, GFlops: gf,
		DgemmGFlops: dgemm, Fraction: gf / dgemm, Ops: ops, Host: med - ops.Sum()}
}

// RunBench opens every device, checks that every case fits (bad input otherwise, before
// anything is computed), then measures each device in turn.
func RunBench(c *BenchConfig, env Env) (*BenchResult, error) {
	targets, err := c.openTargets(env)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, t := range targets {
			t.dev.Close()
		}
	}()
	if err := env.begin(); err != nil {
		return nil, err
	}
	total := 0
	for _, t := range targets {
		total += len(t.cases) * len(c.algos)
	}
	bar := env.progress(total, "bench")
	defer bar.Finish()
	res := &BenchResult{}
	var notes []string
	for _, t := range targets {
		rows, err := t.run(c, bar)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, rows...)
		bd := BenchDevice{Name: t.name, Description: t.dev.g.Describe(), OpTimer: t.timed[0].timer, GemmSize: t.gemm,
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
		"channel": "softmax", "alpha": c.Alpha, "rho": c.Rho, "T": c.T, "beta": c.Beta, "repeat": c.Repeat,
		"warmup": 1, "gemm_size": c.GemmSize, "seed": c.Seed, "workers": c.Workers, "threads": c.Threads,
		"host_timer": c.HostTimer, "chunk": c.Chunk, "max_memory": c.MaxMemory}
}

// ExecuteBench runs `aim bench` as the command does: RunBench with the outputs opened once the
// devices are open and every case is known to fit, then the CSV, the figure and the manifest.
func ExecuteBench(c *BenchConfig, env Env) (string, error) {
	res, out, start, err := execute(env, func() (*outputs, error) { return openOutputs(c.Out, c.Plot, "", "") },
		func(e Env) (*BenchResult, error) { return RunBench(c, e) })
	if err != nil {
		return "", err
	}
	if err := BenchSchema.Write(out.res.csv.File(), 0, res.Rows); err != nil {
		return "", out.abort(err)
	}
	var fig *figure.Figure
	if c.Plot != "" {
		t, err := BenchSchema.Table(c.Out, 0, res.Rows)
		if err != nil {
			return "", out.abort(err)
		}
		t.Params = c.manifestParams()
		if fig, err = drawFigure([]*table.Table{t}, plot.Options{Size: c.Size}); err != nil {
			return "", out.abort(err)
		}
	}
	man := env.manifest("bench", res.Note, c.manifestParams(), start)
	man["devices"] = res.Devices
	man["rows"] = len(res.Rows)
	man["flops"] = map[string]string{
		"amp": "4 N T D^2 + 4 N T^2 D + (16/3) D^3 (forward and back-projection products, TokenDots, TokenMix, EighSym (4/3 + 2) D^3, SpectralCompose 2 D^3)",
		"gd":  "4 N T D^2 + 4 N T^2 D + 6 R D^2 (forward and G_S products, TokenDots, TokenMix, W^T W and the two W G_S products)",
	}
	man["timing"] = "warm-up iteration first; repeat timed iterations between the engine's Progress callbacks (host clock); operations timed by the op_timer of each device; host_s = seconds_median - the operations' sum"
	return out.complete(fig, man, len(res.Rows), start, nil)
}
