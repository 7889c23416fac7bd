package benchjob

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
)

// tinyBench is a configuration of a CPU bench small enough for a unit test.
func tinyBench(dir string) *BenchConfig {
	c := NewBenchConfig()
	c.Device, c.D, c.StreamedD, c.GemmSize = "cpu", "40,80", "80", 128
	c.Chunk = 300 // N = 1600 at D = 80: chunks of 300, 300, 300, 300, 300, 100
	c.Out, c.Plot = filepath.Join(dir, "bench.csv"), filepath.Join(dir, "bench.svg")
	return c
}

// TestBenchValidate checks that every malformed configuration is bad input, and that good ones
// pass.
func TestBenchValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *BenchConfig)
		msg  string // "" for valid
	}{
		{"tiny", func(c *BenchConfig) {}, ""},
		{"defaults", func(c *BenchConfig) { c.D, c.StreamedD, c.Chunk = "", "", 0 }, ""},
		{"no streamed", func(c *BenchConfig) { c.StreamedD = "none" }, ""},
		{"no stored", func(c *BenchConfig) { c.D = "none" }, ""},
		{"nothing", func(c *BenchConfig) { c.D, c.StreamedD = "none", "" }, "nothing to run"},
		{"nothing at all", func(c *BenchConfig) { c.D, c.StreamedD = "none", "none" }, "nothing to run"},
		{"device list", func(c *BenchConfig) { c.Device = "cpu,cuda:1,cuda:0,1,cpu:2" }, ""},
		{"D < 2", func(c *BenchConfig) { c.D = "1,40" }, "D >= 2"},
		{"D word", func(c *BenchConfig) { c.D = "40,abc" }, "not a whole number"},
		{"D empty item", func(c *BenchConfig) { c.D = "40,,80" }, "not a whole number"},
		{"D range", func(c *BenchConfig) { c.D = "40:80:3" }, "not a whole number"},
		{"streamed D", func(c *BenchConfig) { c.StreamedD = "0" }, "D >= 2"},
		{"repeat 2", func(c *BenchConfig) { c.Repeat = 2 }, "at least 3"},
		{"unknown device", func(c *BenchConfig) { c.Device = "tpu" }, "unknown device"},
		{"bad ordinal", func(c *BenchConfig) { c.Device = "cuda:x" }, "GPU ordinal"},
		{"device twice", func(c *BenchConfig) { c.Device = "cuda,cuda:0" }, "twice"},
		{"all in a list", func(c *BenchConfig) { c.Device = "all,cpu" }, "stands alone"},
		{"devices and a group", func(c *BenchConfig) { c.Device = "cpu,cuda:0,cuda:0,1" }, ""},
		{"ordinal after cpu:K", func(c *BenchConfig) { c.Device = "cpu:2,3" }, "unknown device"},
		{"GPU twice in a group", func(c *BenchConfig) { c.Device = "cuda:0,0" }, "listed twice"},
		{"algorithm", func(c *BenchConfig) { c.Algorithms = "amp,sgd" }, "unknown algorithm"},
		{"alpha", func(c *BenchConfig) { c.Alpha = 0 }, "alpha"},
		{"N = 0", func(c *BenchConfig) { c.Alpha = 1e-4 }, "N = floor(alpha D^2) = 0"},
		{"rho", func(c *BenchConfig) { c.Rho = -1 }, "rho"},
		{"T", func(c *BenchConfig) { c.T = 1 }, "T >= 2"},
		{"beta", func(c *BenchConfig) { c.Beta = math.Inf(1) }, "beta"},
		{"gemm size", func(c *BenchConfig) { c.GemmSize = 1 }, "gemm-size"},
		{"chunk", func(c *BenchConfig) { c.Chunk = -1 }, "chunk"},
		{"max memory", func(c *BenchConfig) { c.MaxMemory = "lots" }, "max-memory"},
		{"plot format", func(c *BenchConfig) { c.Plot = "b.gif" }, "unknown format"},
		{"out", func(c *BenchConfig) { c.Out = "b.txt" }, ".csv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyBench(t.TempDir())
			tc.edit(c)
			err := c.Validate()
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("valid configuration refused: %v", err)
			case tc.msg != "" && (err == nil || !job.IsInput(err) || !strings.Contains(err.Error(), tc.msg)):
				t.Fatalf("got %v; want bad input mentioning %q", err, tc.msg)
			}
		})
	}
}

// TestBenchRefusedWritesNothing checks that rows that do not fit in memory and devices that
// cannot be opened are bad input, found before anything is written.
func TestBenchRefusedWritesNothing(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *BenchConfig)
		msg  string
	}{
		{"stored over max-memory", func(c *BenchConfig) { c.MaxMemory = "1MiB" }, "stored tokens"},
		{"streamed over max-memory", func(c *BenchConfig) { c.D, c.StreamedD, c.MaxMemory = "40", "400", "2MiB" }, "streamed tokens"},
		{"dgemm over max-memory", func(c *BenchConfig) { c.GemmSize = 4096; c.MaxMemory = "64MiB" }, "Dgemm"},
		{"larger than the host", func(c *BenchConfig) { c.D = "20000" }, "available"},
		{"gpu ordinal absent", func(c *BenchConfig) { c.Device = "cpu,cuda:7" }, "cuda:7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tinyBench(filepath.Join(dir, "res"))
			tc.edit(c)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			_, err := ExecuteBench(c, job.Env{})
			if err == nil || !job.IsInput(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v; want bad input mentioning %q", err, tc.msg)
			}
			if entries, _ := os.ReadDir(filepath.Join(dir, "res")); len(entries) != 0 {
				t.Errorf("a refused bench left files: %v", entries)
			}
		})
	}
}

// TestFlopFormulas holds AMPFlops and GDFlops to their formulas written out at one point.
func TestFlopFormulas(t *testing.T) {
	p := aim.Params{D: 100, Alpha: 0.25, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 3, Beta: 1}}
	// N = 2500, T = 3, R = 50.
	if got, want := AMPFlops(p), 4*2500*3*1e4+4*2500*9*100+16.0/3*1e6; math.Abs(got-want) > 1e-6*want {
		t.Errorf("AMPFlops = %g, want %g", got, want)
	}
	if got, want := GDFlops(p), 4*2500*3*1e4+4*2500*9*100+6*50*1e4; got != want {
		t.Errorf("GDFlops = %g, want %g", got, want)
	}
}

// TestBenchSummary checks the median, the minimum and the operations of the median sample.
func TestBenchSummary(t *testing.T) {
	op := func(g float64) OpTimes { var o OpTimes; o.Seconds[OpGemm], o.Calls[OpGemm] = g, 2; return o }
	tests := []struct {
		name               string
		s                  []sample
		median, least, gem float64
	}{
		{"odd", []sample{{3, op(2.5)}, {1, op(0.5)}, {2, op(1.5)}}, 2, 1, 1.5},
		{"even", []sample{{4, op(3)}, {1, op(0.5)}, {2, op(1.5)}, {3, op(2.5)}}, 2.5, 1, 2},
	}
	for _, tc := range tests {
		med, least, ops := summary(tc.s)
		if med != tc.median || least != tc.least || ops.Seconds[OpGemm] != tc.gem || ops.Calls[OpGemm] != 2 {
			t.Errorf("%s: summary = %g, %g, gemm %g (%d calls); want %g, %g, %g (2)", tc.name, med, least,
				ops.Seconds[OpGemm], ops.Calls[OpGemm], tc.median, tc.least, tc.gem)
		}
	}
}

// TestTimedDeviceBuckets calls every operation once with the timer observing the device and
// checks that each lands in its bucket, and only there.
func TestTimedDeviceBuckets(t *testing.T) {
	d, err := job.OpenDevice("cpu", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	td := d.Group.Lead()
	tm, err := newTimer(td, false)
	if err != nil {
		t.Fatal(err)
	}
	if tm.timer != "host clock" {
		t.Errorf("CPU timer %q, want the host clock", tm.timer)
	}
	tm.attach()
	defer tm.detach()
	const n, T, D = 3, 2, 4
	bufs, err := device.AllocAll(td, n*T*D, n*T*D, n*T*D, n*T*T, n*T*T, n*T*T, D*D, D*D, D, T*T)
	if err != nil {
		t.Fatal(err)
	}
	defer device.FreeAll(td, bufs...)
	x, y, z, h, g, om, a, vecs, vals, pat := bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8], bufs[9]
	ch := channel.Spec{Kind: channel.KindSoftmax, T: T, Beta: 1}
	caps := td.Capabilities()
	if caps.Trainer == nil {
		t.Fatal("the CPU has no Trainer")
	}
	tests := []struct {
		name string
		kind OpKind
		call func() error
	}{
		{"GaussianFill", OpGaussian, func() error { return td.GaussianFill(x, 1, 0, 1) }},
		{"Gemm", OpGemm, func() error { return td.Gemm(false, false, n*T, D, D, 1, x, a, 0, y) }},
		{"TokenDots", OpTokenDots, func() error { return td.TokenDots(h, y, x, n, T, D) }},
		{"TokenMix", OpTokenMix, func() error { return td.TokenMix(z, h, x, n, T, D) }},
		{"ChannelOutput", OpChannel, func() error { return td.ChannelOutput(ch, om, h, n) }},
		{"ChannelGOut", OpChannel, func() error { _, err := td.ChannelGOut(ch, g, om, h, n, 1); return err }},
		{"SoftmaxLossGrad", OpChannel, func() error { _, err := caps.Trainer.SoftmaxLossGrad(ch, g, om, h, n, 1); return err }},
		{"AddDiag", OpOther, func() error { return td.AddDiag(a, 1, D, 1) }},
		{"EighSym", OpEigh, func() error { return td.EighSym(vals, vecs, a, D) }},
		{"SpectralCompose", OpSpectral, func() error { return td.SpectralCompose(a, vecs, vals, D) }},
		{"Scal", OpOther, func() error { return td.Scal(x, 1) }},
		{"Axpby", OpOther, func() error { return td.Axpby(y, 1, x, 0) }},
		{"Dot", OpOther, func() error { _, err := td.Dot(x, y); return err }},
		{"SqDist", OpOther, func() error { _, err := td.SqDist(x, y); return err }},
		{"SumDiag", OpOther, func() error { _, err := td.SumDiag(h, n, T); return err }},
		{"MulPattern", OpOther, func() error { return td.MulPattern(h, pat, n, T*T) }},
		{"Copy", OpOther, func() error { return td.Copy(z, x) }},
		{"Upload", OpOther, func() error { return td.Upload(pat, make([]float64, T*T)) }},
		{"Download", OpOther, func() error { return td.Download(make([]float64, D), vals) }},
		{"AdamStep", OpOther, func() error { return caps.Trainer.AdamStep(x, y, z, z, 0.1, 0.9, 0.99, 1e-8, 1) }},
	}
	if q := caps.QuadFormSummer; q != nil {
		tests = append(tests, struct {
			name string
			kind OpKind
			call func() error
		}{"QuadFormSum", OpQuadForm, func() error { return q.QuadFormSum(a, h, x, z, n, T, D, 1) }})
	}
	for _, tc := range tests {
		before := tm.Times()
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		d := tm.Times().sub(before)
		for k := range d.Calls {
			want := 0
			if OpKind(k) == tc.kind {
				want = 1
			}
			if d.Calls[k] != want || d.Seconds[k] < 0 || (want == 0 && d.Seconds[k] != 0) {
				t.Errorf("%s: bucket %s got %d calls, %g s; want %d", tc.name, OpColumns[k], d.Calls[k], d.Seconds[k], want)
			}
		}
	}
	tm.detach()
	before := tm.Times()
	if err := td.Scal(x, 1); err != nil {
		t.Fatal(err)
	}
	if tm.Times() != before {
		t.Error("a detached timer counted an operation")
	}
}

// TestBenchTinyCPU runs a tiny CPU bench end to end and checks its numbers: the rows asked for,
// the flop counts, GFLOP/s = flops / seconds, the fraction of the Dgemm rate, the operations'
// calls per iteration, and that the operations add up to the iteration within 25% at D = 80
// (the rest is the host's work between operations: the RIE map, Go).
func TestBenchTinyCPU(t *testing.T) {
	c := tinyBench(t.TempDir())
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := RunBench(c, job.Env{})
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		algo, tokens string
		D            int
	}
	want := []key{{"amp", "stored", 40}, {"gd", "stored", 40}, {"amp", "stored", 80}, {"gd", "stored", 80},
		{"amp", "streamed", 80}, {"gd", "streamed", 80}}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(want))
	}
	if len(res.Devices) != 1 || res.Devices[0].Name != "cpu" || !(res.Devices[0].DgemmGFlops > 0) || res.Devices[0].GemmSize != 128 {
		t.Fatalf("devices %+v", res.Devices)
	}
	for i, r := range res.Rows {
		if (key{r.Algorithm, r.Tokens, r.D}) != want[i] || r.Device != "cpu" || r.Repeat != 3 || r.T != 2 || r.N != r.D*r.D/4 {
			t.Fatalf("row %d: %+v, want %v", i, r, want[i])
		}
		p := c.params(r.D)
		flops := map[string]float64{"amp": AMPFlops(p), "gd": GDFlops(p)}[r.Algorithm]
		rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }
		switch {
		case r.Flops != flops:
			t.Errorf("row %d: flops %g, want %g", i, r.Flops, flops)
		case rel(r.GFlops, r.Flops/r.SecondsMedian/1e9) > 1e-12:
			t.Errorf("row %d: gflops %g, flops / seconds %g", i, r.GFlops, r.Flops/r.SecondsMedian/1e9)
		case !(r.DgemmGFlops > 0) || rel(r.Fraction, r.GFlops/r.DgemmGFlops) > 1e-12:
			t.Errorf("row %d: fraction %g of %g GFLOP/s, want %g", i, r.Fraction, r.DgemmGFlops, r.GFlops/r.DgemmGFlops)
		case !(r.SecondsMin > 0 && r.SecondsMin <= r.SecondsMedian) || !(r.Generate > 0):
			t.Errorf("row %d: seconds min %g, median %g, generate %g", i, r.SecondsMin, r.SecondsMedian, r.Generate)
		case rel(r.Host+r.Ops.Sum(), r.SecondsMedian) > 1e-12 || r.Host < 0:
			t.Errorf("row %d: operations %g + host %g != %g", i, r.Ops.Sum(), r.Host, r.SecondsMedian)
		}
		if r.D == 80 && r.Ops.Sum() < 0.75*r.SecondsMedian {
			t.Errorf("row %d (%s %s D = 80): operations %g s of the iteration's %g s, want at least 75%%", i, r.Algorithm, r.Tokens, r.Ops.Sum(), r.SecondsMedian)
		}
		// Calls per iteration: the chunks of the tokens (one when stored).
		chunks := 1
		if r.Tokens == "streamed" {
			chunks = 6
			if r.Chunk != 300 {
				t.Errorf("row %d: chunk %d, want 300", i, r.Chunk)
			}
		}
		calls := r.Ops.Calls
		fills, dots := calls[OpGaussian], calls[OpTokenDots]
		if r.Tokens == "stored" {
			fills = 0
		}
		if calls[OpGaussian] != fills || dots != chunks || (r.Tokens == "streamed" && fills != chunks) {
			t.Errorf("row %d: %d fills, %d TokenDots; want %d chunks", i, calls[OpGaussian], dots, chunks)
		}
		switch r.Algorithm {
		case "amp": // forward Gemm, and Gemm + TokenMix or QuadFormSum, per chunk; one EighSym and SpectralCompose
			back := calls[OpQuadForm] + calls[OpTokenMix]
			if back != chunks || calls[OpGemm] != chunks+calls[OpTokenMix] || calls[OpEigh] != 1 || calls[OpSpectral] != 1 || calls[OpChannel] != chunks {
				t.Errorf("row %d: calls %v", i, calls)
			}
		case "gd": // W^T W, the forward Gemm and Gemm + TokenMix or QuadFormSum per chunk, two W G_S; ChannelOutput and SoftmaxLossGrad per chunk
			back := calls[OpQuadForm] + calls[OpTokenMix]
			if back != chunks || calls[OpGemm] != 3+chunks+calls[OpTokenMix] || calls[OpChannel] != 2*chunks || calls[OpEigh] != 0 {
				t.Errorf("row %d: calls %v", i, calls)
			}
		}
	}
}

// TestBenchDgemmPerRow: the Dgemm rate is measured before every row (a ratio of figures taken
// back to back), and the device's rate in the manifest is the median of the rows' rates.
func TestBenchDgemmPerRow(t *testing.T) {
	c := tinyBench(t.TempDir())
	c.D, c.StreamedD = "40", "none"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := RunBench(c, job.Env{})
	if err != nil {
		t.Fatal(err)
	}
	var rates []float64
	for _, r := range res.Rows {
		rates = append(rates, r.DgemmGFlops)
	}
	if len(rates) != 2 || res.Devices[0].DgemmGFlops != median(rates) || median([]float64{3, 1, 2}) != 2 || median([]float64{4, 1, 2, 3}) != 2.5 {
		t.Errorf("rows' Dgemm rates %v, device %g", rates, res.Devices[0].DgemmGFlops)
	}
}

// TestBenchFigure checks the plot: one series of points and one line per (device, algorithm,
// tokens), and the D^4 reference through the slowest point with slope 4 on the log-log axes.
func TestBenchFigure(t *testing.T) {
	rows := []BenchRow{
		{Device: "cpu", Algorithm: "amp", D: 100, Tokens: "stored", SecondsMedian: 0.01},
		{Device: "cpu", Algorithm: "amp", D: 200, Tokens: "stored", SecondsMedian: 0.1},
		{Device: "cpu", Algorithm: "amp", D: 200, Tokens: "streamed", SecondsMedian: 0.3},
		{Device: "cuda:0", Algorithm: "gd", D: 400, Tokens: "stored", SecondsMedian: 0.05},
	}
	tb, err := BenchSchema.Table("bench.csv", 0, rows)
	if err != nil {
		t.Fatal(err)
	}
	f, err := plot.Build([]*table.Table{tb}, plot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !f.LogX || !f.LogY || len(f.Series) != 2*3+1 {
		t.Fatalf("log %v %v, %d series; want log-log, 7", f.LogX, f.LogY, len(f.Series))
	}
	ref := f.Series[len(f.Series)-1]
	if ref.Label != "D^{4}" || ref.X[0] != 100 || ref.X[1] != 400 {
		t.Fatalf("reference %+v", ref)
	}
	slope := math.Log(ref.Y[1]/ref.Y[0]) / math.Log(ref.X[1]/ref.X[0])
	at200 := ref.Y[0] * math.Pow(2, 4)
	if math.Abs(slope-4) > 1e-12 || math.Abs(at200-0.3) > 1e-12 {
		t.Errorf("reference slope %g (want 4), at D = 200 %g (want the slowest point, 0.3)", slope, at200)
	}
}

// TestBenchCPUGroup runs the bench on a group of two CPU devices: one row per algorithm named
// for the group, each member's operations counted (they take turns), and the group's sums in
// the collective bucket: a reduce and a broadcast per iteration for both algorithms.
func TestBenchCPUGroup(t *testing.T) {
	c := tinyBench(t.TempDir())
	c.Device, c.D, c.StreamedD = "cpu:2", "40", "none"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := RunBench(c, job.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || len(res.Devices) != 1 || res.Devices[0].Name != "cpu x2" {
		t.Fatalf("%d rows, devices %+v", len(res.Rows), res.Devices)
	}
	for _, r := range res.Rows {
		calls := r.Ops.Calls
		if r.Device != "cpu x2" || calls[OpCollective] != 2 || calls[OpTokenDots] != 2 || !(r.Ops.Seconds[OpCollective] > 0) {
			t.Errorf("%s: device %q, calls %v", r.Algorithm, r.Device, calls)
		}
		if r.Algorithm == "amp" && calls[OpEigh] != 1 {
			t.Errorf("amp: %d EighSym per iteration on a group, want 1 (the lead's)", calls[OpEigh])
		}
	}
}

// TestBenchPrecisionRows: --precision gives one row per (case, algorithm, precision), each
// precision once, with the precision's own product rate measured before it (the Dgemm rate at
// fp64) and fraction_of_gemm = gflops / gemm_gflops; the linear channel's rows say so and have
// T = 1.
func TestBenchPrecisionRows(t *testing.T) {
	c := tinyBench(t.TempDir())
	c.D, c.StreamedD, c.Precision, c.Channel = "40", "none", "fp64, fp32,fp64", "linear"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := RunBench(c, job.Env{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ algo, prec string }{{"amp", "fp64"}, {"amp", "fp32"}, {"gd", "fp64"}, {"gd", "fp32"}}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(want))
	}
	rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }
	for i, r := range res.Rows {
		if r.Algorithm != want[i].algo || r.Precision != want[i].prec || r.Channel != "linear" || r.T != 1 {
			t.Fatalf("row %d: %s %s %s T = %d, want %s %s linear T = 1", i, r.Algorithm, r.Precision, r.Channel, r.T, want[i].algo, want[i].prec)
		}
		if !(r.GemmGFlops > 0) || rel(r.FractionGemm, r.GFlops/r.GemmGFlops) > 1e-12 || rel(r.Fraction, r.GFlops/r.DgemmGFlops) > 1e-12 {
			t.Errorf("row %d: fractions %g of %g and %g of %g GFLOP/s for %g", i, r.FractionGemm, r.GemmGFlops, r.Fraction, r.DgemmGFlops, r.GFlops)
		}
		if r.Precision == "fp64" && r.GemmGFlops != r.DgemmGFlops {
			t.Errorf("row %d: fp64 product rate %g, Dgemm %g", i, r.GemmGFlops, r.DgemmGFlops)
		}
		if r.Precision == "fp32" && r.Ops.Calls[OpGemm] == 0 {
			t.Errorf("row %d: no product counted in the Gemm bucket at fp32: %v", i, r.Ops.Calls)
		}
	}
	c.Precision = "fp16"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--precision") {
		t.Errorf("--precision fp16: %v", err)
	}
}
