package emu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

// emuBin is the emulator built by TestMain.
var emuBin string

var dev = cpu.New(2)

// TestMain compiles the kernels' CUDA C as C++ with the host emulation of cuda_emu.h (blocks
// one after another, the threads of a block as OS threads, __syncthreads and warp shuffles as
// barriers). Without a C++20 compiler the tests skip, except under CI=true.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aim-emu")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	emuBin = filepath.Join(dir, "emu")
	out, err := exec.Command("g++", "-std=c++20", "-O1", "-pthread", "-ffp-contract=off", "-o", emuBin, filepath.Join("testdata", "emu.cpp")).CombinedOutput()
	if err != nil {
		emuBin = ""
		buildErr = fmt.Sprintf("cannot build the kernel emulator with g++ -std=c++20: %v\n%s", err, out)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildErr says why the emulator is missing.
var buildErr string

// needEmu skips (or, under CI, fails) when the emulator could not be built.
func needEmu(t *testing.T) {
	t.Helper()
	if emuBin != "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(buildErr)
	}
	t.Skip(buildErr)
}

type arg interface{}

// buf is a buffer argument: its file path and values.
type buf struct {
	path string
	v    []float64
}

func newBuf(t *testing.T, v []float64) *buf {
	f, err := os.CreateTemp(t.TempDir(), "b*.bin")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	f.Write(b)
	f.Close()
	return &buf{f.Name(), v}
}

func (b *buf) read(t *testing.T) []float64 {
	data, err := os.ReadFile(b.path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(data)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	}
	if len(b.v) == 0 {
		return nil
	}
	return out[:len(b.v)]
}

func launch(t *testing.T, kernel string, grid uint32, args ...arg) {
	t.Helper()
	cmd := []string{kernel, strconv.Itoa(int(grid))}
	for _, a := range args {
		switch v := a.(type) {
		case *buf:
			cmd = append(cmd, v.path)
		case int:
			cmd = append(cmd, strconv.Itoa(v))
		case uint64:
			cmd = append(cmd, strconv.FormatUint(v, 10))
		case float64:
			cmd = append(cmd, strconv.FormatFloat(v, 'g', -1, 64))
		default:
			t.Fatalf("arg %T", a)
		}
	}
	out, err := exec.Command(emuBin, cmd...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", kernel, err, out)
	}
}

func randv(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

func up(t *testing.T, v []float64) device.Buffer {
	b, err := dev.Alloc(len(v))
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Upload(b, v); err != nil {
		t.Fatal(err)
	}
	return b
}

func down(t *testing.T, b device.Buffer) []float64 {
	v := make([]float64, b.Len())
	if err := dev.Download(v, b); err != nil {
		t.Fatal(err)
	}
	return v
}

func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			if bad < 5 {
				t.Errorf("%s[%d] = %v (%#x), want %v (%#x)", what, i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d differ", what, bad, len(got))
	}
}

func close(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	worst := 0.0
	for i := range got {
		e := math.Abs(got[i]-want[i]) / math.Max(math.Abs(want[i]), 1e-300)
		if math.IsNaN(got[i]) != math.IsNaN(want[i]) || e > tol {
			t.Errorf("%s[%d] = %v, want %v (rel %g)", what, i, got[i], want[i], e)
			return
		}
		worst = math.Max(worst, e)
	}
	t.Logf("%s: %d values, worst rel err %.3g", what, len(got), worst)
}

func TestGauss(t *testing.T) {
	needEmu(t)
	for _, c := range []struct {
		n            int
		seed, offset uint64
		scale        float64
		grid         uint32
	}{
		{1, 1, 0, 1, 1}, {1, 1, 1, 1, 1}, {2, 7, 1, 1, 1}, {1000, 42, 0, 1, 1}, {1001, 42, 3, 0.5, 2},
		{777, 1<<63 + 5, math.MaxUint64 - 10, 2, 1}, {3000, 9, 12345678901, -1.5, 3}, {0, 1, 0, 1, 1},
	} {
		x := newBuf(t, make([]float64, c.n))
		launch(t, "gaussian_fill", c.grid, x, c.n, c.seed, c.offset, c.scale)
		b := up(t, make([]float64, c.n))
		if err := dev.GaussianFill(b, c.seed, c.offset, c.scale); err != nil {
			t.Fatal(err)
		}
		sameBits(t, fmt.Sprintf("gauss %+v", c), x.read(t), down(t, b))
	}
}

func TestElementwise(t *testing.T) {
	needEmu(t)
	r := rand.New(rand.NewPCG(1, 2))
	n := 5000
	xv, yv := randv(r, n), randv(r, n)
	// scal
	x := newBuf(t, xv)
	launch(t, "scal", 3, x, n, 1.7)
	b := up(t, xv)
	dev.Scal(b, 1.7)
	sameBits(t, "scal", x.read(t), down(t, b))
	// axpby
	x, y := newBuf(t, xv), newBuf(t, yv)
	launch(t, "axpby", 2, y, 0.3, x, -1.1, n)
	bx, by := up(t, xv), up(t, yv)
	dev.Axpby(by, 0.3, bx, -1.1)
	sameBits(t, "axpby", y.read(t), down(t, by))
	// add_diag
	for _, tt := range []int{1, 2, 5} {
		ns := 300
		v := randv(r, ns*tt*tt)
		x := newBuf(t, v)
		launch(t, "add_diag", kernels.GridElems(int64(ns*tt)), x, ns, tt, 0.25)
		b := up(t, v)
		dev.AddDiag(b, ns, tt, 0.25)
		sameBits(t, "add_diag", x.read(t), down(t, b))
	}
	// mul_pattern
	for _, m := range []int{1, 3, 7, 300} {
		ns := 50
		v, p := randv(r, ns*m), randv(r, m)
		x, pb := newBuf(t, v), newBuf(t, p)
		launch(t, "mul_pattern", 2, x, pb, ns, m)
		b := up(t, v)
		dev.MulPattern(b, up(t, p), ns, m)
		sameBits(t, "mul_pattern", x.read(t), down(t, b))
	}
	// scale_columns
	for _, d := range []int{1, 17, 70} {
		o, f := randv(r, d*d), randv(r, d)
		out := newBuf(t, make([]float64, d*d))
		launch(t, "scale_columns", 2, out, newBuf(t, o), newBuf(t, f), d)
		want := make([]float64, d*d)
		for i := 0; i < d; i++ {
			for k := 0; k < d; k++ {
				want[i*d+k] = o[i*d+k] * f[k]
			}
		}
		sameBits(t, "scale_columns", out.read(t), want)
	}
}

func sumParts(p []float64) float64 {
	s := 0.0
	for _, v := range p {
		s += v
	}
	return s
}

func TestReductions(t *testing.T) {
	needEmu(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 255, 4096, 3*4096 + 17} {
		xv, yv := randv(r, n), randv(r, n)
		g := kernels.GridReduce(int64(n))
		for _, k := range []string{"dot_partial", "sqdist_partial"} {
			part := newBuf(t, make([]float64, g))
			launch(t, k, g, part, newBuf(t, xv), newBuf(t, yv), n)
			var want float64
			if k == "dot_partial" {
				want, _ = dev.Dot(up(t, xv), up(t, yv))
			} else {
				want, _ = dev.SqDist(up(t, xv), up(t, yv))
			}
			close(t, fmt.Sprintf("%s n=%d", k, n), []float64{sumParts(part.read(t))}, []float64{want}, 1e-12)
		}
		// grid smaller than the chunk count: blocks take several chunks
		if n > 4096 {
			part := newBuf(t, make([]float64, g))
			launch(t, "dot_partial", 1, part, newBuf(t, xv), newBuf(t, yv), n)
			want, _ := dev.Dot(up(t, xv), up(t, yv))
			close(t, "dot_partial grid 1", []float64{sumParts(part.read(t))}, []float64{want}, 1e-12)
		}
	}
	for _, tt := range []int{1, 2, 3} {
		for _, ns := range []int{0, 5, 4096 + 300} {
			v := randv(r, ns*tt*tt)
			g := kernels.GridReduce(int64(ns))
			part := newBuf(t, make([]float64, g))
			launch(t, "sumdiag_partial", g, part, newBuf(t, v), ns, tt)
			want, _ := dev.SumDiag(up(t, v), ns, tt)
			close(t, fmt.Sprintf("sumdiag n=%d t=%d", ns, tt), []float64{sumParts(part.read(t))}, []float64{want}, 1e-12)
		}
	}
}

func TestTokens(t *testing.T) {
	needEmu(t)
	r := rand.New(rand.NewPCG(5, 6))
	// Shapes cover the register path (t <= 8), the tiled path (t > 8), empty and odd d. Every
	// warp shuffle of the emulation is an OS-thread barrier, so the set is kept small.
	for _, tt := range []int{1, 2, 3, 8, 9} {
		for _, d := range []int{0, 37, 300} {
			n := 5
			yv, xv, cv := randv(r, n*tt*d), randv(r, n*tt*d), randv(r, n*tt*tt)
			h := newBuf(t, make([]float64, n*tt*tt))
			launch(t, "token_dots", 3, h, newBuf(t, yv), newBuf(t, xv), n, tt, d)
			hb := up(t, make([]float64, n*tt*tt))
			if err := dev.TokenDots(hb, up(t, yv), up(t, xv), n, tt, d); err != nil {
				t.Fatal(err)
			}
			got, want := h.read(t), down(t, hb)
			// Dots of random vectors: compare against the scale sqrt(d).
			for i := range got {
				if e := math.Abs(got[i] - want[i]); e > 1e-13*math.Sqrt(float64(d))*4 {
					t.Errorf("token_dots t=%d d=%d [%d] = %v want %v", tt, d, i, got[i], want[i])
					break
				}
			}
			z := newBuf(t, make([]float64, n*tt*d))
			launch(t, "token_mix", 2, z, newBuf(t, cv), newBuf(t, xv), n, tt, d)
			zb := up(t, make([]float64, n*tt*d))
			if err := dev.TokenMix(zb, up(t, cv), up(t, xv), n, tt, d); err != nil {
				t.Fatal(err)
			}
			sameBits(t, fmt.Sprintf("token_mix t=%d d=%d", tt, d), z.read(t), down(t, zb))
		}
	}
}

func TestChannelOutput(t *testing.T) {
	needEmu(t)
	r := rand.New(rand.NewPCG(7, 8))
	n := 700
	for _, tt := range []int{2, 3, 5} {
		hv := randv(r, n*tt*tt)
		for i := range hv {
			hv[i] *= 5
		}
		for _, inPlace := range []bool{false, true} {
			y := newBuf(t, make([]float64, n*tt*tt))
			h := newBuf(t, hv)
			if inPlace {
				y = h
			}
			launch(t, "softmax_output", kernels.GridThreads(int64(n)), y, h, n, tt, 1.3)
			yb := up(t, make([]float64, n*tt*tt))
			dev.ChannelOutput(channel.Spec{Kind: channel.KindSoftmax, T: tt, Beta: 1.3}, yb, up(t, hv), n)
			close(t, fmt.Sprintf("softmax_output t=%d inplace=%v", tt, inPlace), y.read(t), down(t, yb), 1e-14)
		}
	}
	hv := randv(r, n*4)
	for i := 0; i < 40; i++ { // ties
		hv[4*i+1] = hv[4*i]
	}
	y := newBuf(t, make([]float64, n*4))
	launch(t, "hardmax_output", kernels.GridThreads(int64(n)), y, newBuf(t, hv), n, 2)
	yb := up(t, make([]float64, n*4))
	dev.ChannelOutput(channel.Spec{Kind: channel.KindHardmax, T: 2}, yb, up(t, hv), n)
	sameBits(t, "hardmax_output", y.read(t), down(t, yb))
}

func TestChannelGOut(t *testing.T) {
	needEmu(t)
	r := rand.New(rand.NewPCG(9, 10))
	n := 600
	for _, ch := range []channel.Spec{
		{Kind: channel.KindSoftmax, T: 2, Beta: 1}, {Kind: channel.KindSoftmax, T: 3, Beta: 2.5}, {Kind: channel.KindSoftmax, T: 6, Beta: 0.7},
		{Kind: channel.KindHardmax, T: 2}, {Kind: channel.KindHardmax, T: 2, PaperCompat: true},
	} {
		tt := ch.T
		for _, scale := range []float64{1, 10, 60} {
			for _, alias := range []bool{false, true} {
				hv := randv(r, n*tt*tt)
				for i := range hv {
					hv[i] *= scale
				}
				ov := randv(r, n*tt*tt)
				for i := range ov {
					ov[i] *= scale
				}
				// outputs from the teacher h (symmetrise h first)
				for mu := 0; mu < n; mu++ {
					for a := 0; a < tt; a++ {
						for b := 0; b < a; b++ {
							hv[mu*tt*tt+a*tt+b] = hv[mu*tt*tt+b*tt+a]
						}
					}
				}
				yb := up(t, make([]float64, n*tt*tt))
				if err := dev.ChannelOutput(ch, yb, up(t, hv), n); err != nil {
					t.Fatal(err)
				}
				yv := down(t, yb)
				v := 0.8
				gb := up(t, make([]float64, n*tt*tt))
				want, err := dev.ChannelGOut(ch, gb, yb, up(t, ov), n, v)
				if err != nil {
					t.Fatal(err)
				}
				grid := kernels.GridThreads(int64(n))
				part := newBuf(t, make([]float64, grid))
				om := newBuf(t, ov)
				g := newBuf(t, make([]float64, n*tt*tt))
				if alias {
					g = om
				}
				name := fmt.Sprintf("%v T=%d scale=%g alias=%v", ch, tt, scale, alias)
				if ch.Kind == channel.KindSoftmax {
					launch(t, "softmax_gout", grid, g, part, newBuf(t, yv), om, n, tt, ch.Beta, v)
				} else {
					p := 0
					if ch.PaperCompat {
						p = 1
					}
					launch(t, "hardmax_gout", grid, g, part, newBuf(t, yv), om, n, v, p)
				}
				tol := 1e-12
				if ch.Kind == channel.KindSoftmax {
					tol = 1e-9 // g = difference of logs: compare below against the scale of g
				}
				gg, gw := g.read(t), down(t, gb)
				if ch.Kind == channel.KindSoftmax {
					sc := 0.0
					for _, w := range gw {
						sc = math.Max(sc, math.Abs(w))
					}
					worst := 0.0
					skipped := map[int]bool{}
					for i, yy := range yv {
						if yy < 0x1p-1022 { // Go's amd64 math.Log is wrong on subnormals (golang/go#56600)
							skipped[i/(tt*tt)] = true
						}
					}
					t.Logf("%s: %d samples with subnormal or zero y skipped", name, len(skipped))
					for i := range gg {
						if skipped[i/(tt*tt)] {
							continue
						}
						e := math.Abs(gg[i]-gw[i]) / sc
						if !(e <= 1e-13) {
							mu := i / (tt * tt)
							t.Errorf("%s: g[%d] = %v want %v; y = %v om = %v", name, i, gg[i], gw[i], yv[mu*tt*tt:(mu+1)*tt*tt], ov[mu*tt*tt:(mu+1)*tt*tt])
							break
						}
						worst = math.Max(worst, e)
					}
					if worst > 1e-13 {
						t.Errorf("%s: worst err / max|g| = %g", name, worst)
					}
					t.Logf("%s: worst err / max|g| = %.3g", name, worst)
				} else {
					close(t, name, gg, gw, tol)
				}
				if ch.Kind == channel.KindSoftmax && scale > 10 {
					continue
				}
				close(t, name+" sum", []float64{sumParts(part.read(t))}, []float64{want}, 1e-12)
			}
		}
	}
}

var _ = filepath.Join

// TestTrain runs the training kernels: softmax_loss_grad's gamma bit for bit and its loss to
// 1e-12 (block tree against sequential sum), adam_step bit for bit over three steps.
func TestTrain(t *testing.T) {
	needEmu(t)
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range []struct{ n, t int }{{1, 2}, {300, 2}, {257, 3}, {40, 5}} {
		ch := channel.Spec{Kind: channel.KindSoftmax, T: tc.t, Beta: 1.3}
		tt := tc.t * tc.t
		h, y := randv(r, tc.n*tt), randv(r, tc.n*tt)
		hb := up(t, h)
		if err := dev.ChannelOutput(ch, hb, hb, tc.n); err != nil {
			t.Fatal(err)
		}
		yhat := down(t, hb)
		gam := up(t, make([]float64, tc.n*tt))
		want, err := dev.Capabilities().Trainer.SoftmaxLossGrad(ch, gam, hb, up(t, y), tc.n, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		grid := kernels.GridThreads(int64(tc.n))
		g, part := newBuf(t, make([]float64, tc.n*tt)), newBuf(t, make([]float64, grid))
		launch(t, "softmax_loss_grad", grid, g, part, newBuf(t, yhat), newBuf(t, y), tc.n, tc.t, 1.3, 0.01)
		sameBits(t, fmt.Sprintf("softmax_loss_grad gamma n=%d t=%d", tc.n, tc.t), g.read(t), down(t, gam))
		if got := sumParts(part.read(t)); math.Abs(got-want) > 1e-12*math.Abs(want) {
			t.Errorf("softmax_loss_grad n=%d t=%d: loss %.17g, cpu %.17g", tc.n, tc.t, got, want)
		}
	}
	const n = 5000
	w := randv(r, n)
	wc, gc, mc, vc := up(t, w), up(t, make([]float64, n)), up(t, make([]float64, n)), up(t, make([]float64, n))
	wb, mb, vb := newBuf(t, w), newBuf(t, make([]float64, n)), newBuf(t, make([]float64, n))
	for step := 1; step <= 3; step++ {
		grad := randv(r, n)
		if err := dev.Upload(gc, grad); err != nil {
			t.Fatal(err)
		}
		if err := dev.Capabilities().Trainer.AdamStep(wc, gc, mc, vc, 0.1, 0.9, 0.999, 1e-8, step); err != nil {
			t.Fatal(err)
		}
		c1, c2 := 1-math.Pow(0.9, float64(step)), 1-math.Pow(0.999, float64(step))
		launch(t, "adam_step", kernels.GridElems(n), wb, newBuf(t, grad), mb, vb, n, 0.1, 0.9, 0.999, 1e-8, c1, c2)
	}
	sameBits(t, "adam_step w", wb.read(t), down(t, wc))
}

// TestHardmaxTGOut compares hardmaxt_gout (one sample per block, the threads over the lattice
// points) with the CPU backend's ChannelGOut (channel.HardmaxT per sample) at T = 3 and 4, on
// teacher outputs and omega = tau o h + noise, with a fixed number of points (Tol < 0), so that
// the stopping rule cannot differ: the sums over points differ in order only, and g must agree
// to 1e-12 of max |g|. The adaptive rule (Tol 1e-3) is compared too, on the samples where both
// stopped at the same doubling (all of them, in practice). The emulator's barriers cost about
// 1.5 s a sample, hence the few samples.
func TestHardmaxTGOut(t *testing.T) {
	needEmu(t)
	if testing.Short() {
		t.Skip("about 30 s: the emulator runs 256 threads a sample")
	}
	r := rand.New(rand.NewPCG(19, 20))
	for _, c := range []struct {
		ch channel.Spec
		n  int
	}{
		{channel.Spec{Kind: channel.KindHardmax, T: 3, Points: 256, Tol: -1}, 10},
		{channel.Spec{Kind: channel.KindHardmax, T: 4, Points: 128, Tol: -1}, 6},
		{channel.Spec{Kind: channel.KindHardmax, T: 3, Points: 512}, 4},
	} {
		ch, n := c.ch, c.n
		tt := ch.T * ch.T
		hv, ov := randv(r, n*tt), randv(r, n*tt)
		for mu := 0; mu < n; mu++ {
			for a := 0; a < ch.T; a++ {
				for b := 0; b < ch.T; b++ {
					i, j := mu*tt+a*ch.T+b, mu*tt+b*ch.T+a
					if b < a {
						hv[i] = hv[j]
					}
					tau := math.Sqrt2
					if a == b {
						tau = 1
					}
					ov[i] = tau*hv[i] + 0.5*ov[i]
				}
			}
		}
		yb := up(t, make([]float64, n*tt))
		if err := dev.ChannelOutput(ch, yb, up(t, hv), n); err != nil {
			t.Fatal(err)
		}
		yv := down(t, yb)
		const v = 0.8
		gb := up(t, make([]float64, n*tt))
		want, err := dev.ChannelGOut(ch, gb, yb, up(t, ov), n, v)
		if err != nil {
			t.Fatal(err)
		}
		g, part := newBuf(t, make([]float64, n*tt)), newBuf(t, make([]float64, n))
		points, tol := ch.Lattice()
		launch(t, "hardmaxt_gout", kernels.GridSamples(int64(n)), g, part, newBuf(t, yv), newBuf(t, ov), n, ch.T, v, points, channel.HardmaxTShifts, tol)
		gg, gw := g.read(t), down(t, gb)
		sc := 0.0
		for _, w := range gw {
			sc = math.Max(sc, math.Abs(w))
		}
		worst := 0.0
		for i := range gg {
			e := math.Abs(gg[i]-gw[i]) / sc
			if !(e <= 1e-12) {
				t.Errorf("%v T=%d points %d tol %g: g[%d] = %v, CPU %v", ch, ch.T, points, tol, i, gg[i], gw[i])
				break
			}
			worst = math.Max(worst, e)
		}
		var got float64
		for _, s := range part.read(t) {
			got += s
		}
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("%v T=%d: square-sum %v, CPU %v", ch, ch.T, got, want)
		}
		t.Logf("%v T=%d points %d tol %g: %d samples, worst |g_emu - g_cpu| / max|g| = %.3g, square-sums %.15g / %.15g", ch, ch.T, points, tol, n, worst, got, want)
	}
}

// deepTask returns one deep_sample task at L layers (channel.DeepIn(L) values) of the given
// kind, V = C C^T with C lower triangular: "broad" (V_LL > 0.25: the prior alone), "sharp"
// (V_LL about 1e-3, u the forward model's output at a point near omega, so the charts find
// solutions), "corr" (sharp, with V's off-diagonals large: the earlier layers strongly
// correlated, the last one mildly), "notpd" (V_12 = V_21 = 1.5 sqrt(V_11 V_22), indefinite).
// u is +-B_{L-1}(z_1, ..., z_{L-1}) z_L at Z = omega + noise, except for a broad task, where
// it is that or (half the time) random.
func deepTask(r *rand.Rand, kind string, L int, slot, c, beta float64) []float64 {
	task := make([]float64, channel.DeepIn(L))
	task[0] = slot
	omega, V := task[3:3+2*L], task[3+2*L:]
	for i := range omega {
		omega[i] = r.NormFloat64()
	}
	C := make([]float64, L*L)
	for k := 0; k < L-1; k++ {
		C[k*L+k] = 0.3 + 0.8*r.Float64()
	}
	C[L*L-1] = 0.6 + 0.6*r.Float64()
	for i := 1; i < L; i++ {
		last := i == L-1
		for j := 0; j < i; j++ {
			switch {
			case kind == "broad" && last:
				C[i*L+j] = 0.3 * r.NormFloat64()
			case kind == "broad":
				C[i*L+j] = 0.5 * r.NormFloat64()
			case kind == "sharp" && last:
				C[i*L+j] = 0.005 * r.NormFloat64()
			case kind == "sharp":
				C[i*L+j] = 0.2 * r.NormFloat64()
			case kind == "corr" && last && j%2 == 1:
				C[i*L+j] = -0.015 * (1 + r.Float64())
			case kind == "corr" && last:
				C[i*L+j] = 0.02 * (1 + r.Float64())
			case kind == "corr":
				C[i*L+j] = 0.8 * C[i*L+i] * (1 + r.Float64())
			}
		}
	}
	switch kind {
	case "sharp":
		C[L*L-1] = 0.02 + 0.02*r.Float64()
	case "corr":
		C[L*L-1] = 0.01 + 0.01*r.Float64()
	}
	for i := 0; i < L; i++ {
		for j := 0; j < L; j++ {
			for k := 0; k < L; k++ {
				V[i*L+j] += C[i*L+k] * C[j*L+k]
			}
		}
	}
	if kind == "notpd" {
		V[1] = 1.5 * math.Sqrt(V[0]*V[L+1])
		V[L] = V[1]
	}
	// Z = omega + noise (per token, 0.5 C times standard normals), u = s B_{L-1} z_L.
	Z := make([]float64, 2*L)
	for tok := 0; tok < 2; tok++ {
		n := randv(r, L)
		for l := 0; l < L; l++ {
			x := 0.0
			for k := 0; k < L; k++ {
				x += C[l*L+k] * n[k]
			}
			Z[2*l+tok] = omega[2*l+tok] + 0.5*x
		}
	}
	mul := func(m [4]float64, v [2]float64) [2]float64 {
		return [2]float64{m[0]*v[0] + m[1]*v[1], m[2]*v[0] + m[3]*v[1]}
	}
	B := [4]float64{1, 0, 0, 1} // B_k = A(v_k) B_{k-1}, v_k = B_{k-1} z_k
	for k := 0; k < L-1; k++ {
		a := channel.Attention2(c, beta, mul(B, [2]float64{Z[2*k], Z[2*k+1]}))
		B = [4]float64{a[0]*B[0] + a[1]*B[2], a[0]*B[1] + a[1]*B[3], a[2]*B[0] + a[3]*B[2], a[2]*B[1] + a[3]*B[3]}
	}
	u := mul(B, [2]float64{Z[2*L-2], Z[2*L-1]})
	s := 1.0
	if r.IntN(2) == 0 {
		s = -1
	}
	task[1], task[2] = s*u[0], s*u[1]
	if kind == "broad" && r.IntN(2) == 0 {
		task[1], task[2] = r.NormFloat64(), r.NormFloat64()
	}
	return task
}

// deepKernels are the two variants of the deep channel's sampler, with their grids: deep_sample
// (one task per thread) and deep_sample_warp (one task per warp, the draws over the lanes).
var deepKernels = []struct {
	name string
	grid func(n int64) uint32
}{
	{"deep_sample", kernels.GridThreads},
	{"deep_sample_warp", kernels.GridWarps},
}

// TestDeepSample runs deep_sample (one task per thread) and deep_sample_warp (one per warp, the
// same draws summed in another order: 32 lane sums merged in a tree) against their CPU twin
// channel.DeepSampleBatch (device.FillNormals' stream) at every L = channel.DeepMinL ..
// DeepMaxL on random tasks: broad and sharp last layers, correlated V, an indefinite V
// (DeepNotPD), bad slots (DeepBadSlot), slots out of task order, several (c, beta), even and
// odd draw counts, an offset at which one draw's normals wrap around 2^64 (between two of its
// Philox pairs at L = 3 and 4), and the tasks of channel.DeepTasks. Statuses must agree exactly
// and NaNs sit in the same places. The arithmetic is the same, operation for operation, but exp
// and log are glibc's in the emulator and Go's in the twin (a few ulps apart), and the weights
// carry that into the sums, so values are compared to 1e-9 of their scale: |x| for log Z and
// the ESS; for the means, their errors and the second moments, the larger of |x| and the RMS
// of the components involved (sqrt of the second moments' diagonal), since a mean or
// off-diagonal moment near 0 is a cancellation whose relative error says nothing. The worst
// errors, relative and scaled, are logged per group and L.
func TestDeepSample(t *testing.T) {
	needEmu(t)
	r := rand.New(rand.NewPCG(51, 52))
	const seed = 0x5eed_0123_4567_89ab
	for L := channel.DeepMinL; L <= channel.DeepMaxL; L++ {
		nin, nout, pm := channel.DeepIn(L), channel.DeepOut(L), 2*L
		sec := channel.DeepOutSecond(L)
		groups := []struct {
			name   string
			lo, hi int
		}{
			{"mean", 0, pm},
			{"second", sec, sec + pm*pm},
			{"err", channel.DeepOutErr(L), channel.DeepOutErr(L) + pm},
			{"logZ", channel.DeepOutLogZ(L), channel.DeepOutLogZ(L) + 1},
			{"ess", channel.DeepOutESS(L), channel.DeepOutESS(L) + 1},
		}
		worstRel, worstScaled := map[string][]float64{}, map[string][]float64{} // by kernel, then group
		for _, kern := range deepKernels {
			worstRel[kern.name] = make([]float64, len(groups))
			worstScaled[kern.name] = make([]float64, len(groups))
		}
		// At offset 2^64 - 2 - 200 (L - 1), slot 0's draw 100 takes the normals at indices
		// -2, -1, 0, ..., 2 L - 5 (mod 2^64): its first pair before the wrap, the others after
		// it (at L = 2 the draw before it ends at the wrap).
		wrap := uint64(math.MaxUint64 - 1 - 200*uint64(L-1))
		for _, cf := range []struct {
			c, beta        float64
			draws, n       int
			offset, stride uint64
			shared         bool // the tasks of channel.DeepTasks (as the CPU and GPU twin tests)
		}{
			{1, 1, 300, 40, 1<<60 + 1<<40, 1 << 24, false},
			{0.5, 1.3, 257, 280, 1<<60 + 1<<40, 1 << 24, false}, // two blocks, the second partly idle
			{2, 0.7, 300, 37, wrap, 1 << 24, false},             // slot 0's normals wrap around 2^64 in draw 100
			{1, 2, 2, 29, 1 << 40, 1 << 12, false},              // the fewest draws: no q_0 draw in a sharp task
			{0.2, 1, 7, 29, 1 << 40, 1 << 12, false},
			{0.5, 2, 400, 37, 1<<60 + 1<<40, 1 << 24, true},
		} {
			n := cf.n
			in := make([]float64, 0, n*nin)
			slots := r.Perm(n) // slots out of task order
			for i, s := range slots {
				if s == 0 { // slot 0 at task 3, a task with an estimate
					slots[i], slots[3] = slots[3], 0
				}
			}
			kinds := []string{"broad", "sharp", "corr"}
			var kindOf []string
			for i := 0; i < n; i++ {
				kind := kinds[i%3]
				slot := float64(slots[i])
				switch i {
				case 1:
					kind = "notpd"
				case 4:
					slot = -1
				case 7:
					slot = 2.5
				case 10:
					slot = channel.MaxDeepSlot
				case 13:
					slot = math.NaN()
				}
				kindOf = append(kindOf, kind)
				in = append(in, deepTask(r, kind, L, slot, cf.c, cf.beta)...)
			}
			if cf.shared {
				in = channel.DeepTasks(3, n, L, cf.c, cf.beta)
				for i := range kindOf {
					kindOf[i] = "shared"
				}
			}
			want := make([]float64, n*nout)
			if err := channel.DeepSampleBatch(want, in, n, L, cf.draws, cf.c, cf.beta, seed, cf.offset, cf.stride, 2, device.FillNormals); err != nil {
				t.Fatal(err)
			}
			for _, kern := range deepKernels {
				outBuf := newBuf(t, make([]float64, n*nout))
				launch(t, kern.name, kern.grid(int64(n)), outBuf, newBuf(t, in), n, L, cf.draws, cf.c, cf.beta, uint64(seed), cf.offset, cf.stride)
				got := outBuf.read(t)
				name := fmt.Sprintf("%s L=%d c=%g beta=%g draws=%d n=%d", kern.name, L, cf.c, cf.beta, cf.draws, n)
				status := map[float64]int{}
				minESS := map[string]float64{}
				for task := 0; task < n; task++ {
					g, w := got[task*nout:(task+1)*nout], want[task*nout:(task+1)*nout]
					st := w[channel.DeepOutStatus(L)]
					status[st]++
					if g[channel.DeepOutStatus(L)] != st {
						t.Errorf("%s task %d (%s): status %v, CPU %v", name, task, kindOf[task], g[channel.DeepOutStatus(L)], st)
						continue
					}
					if st == channel.DeepOK {
						if e, ok := minESS[kindOf[task]]; !ok || w[channel.DeepOutESS(L)] < e {
							minESS[kindOf[task]] = w[channel.DeepOutESS(L)]
						}
					}
					rms := func(a int) float64 { return math.Sqrt(math.Abs(w[sec+a*(pm+1)])) }
					for gi, gr := range groups {
						for i := gr.lo; i < gr.hi; i++ {
							if math.IsNaN(g[i]) != math.IsNaN(w[i]) {
								t.Errorf("%s task %d (%s): out[%d] = %v, CPU %v", name, task, kindOf[task], i, g[i], w[i])
								continue
							}
							if math.IsNaN(w[i]) || g[i] == w[i] {
								continue
							}
							d := math.Abs(g[i] - w[i])
							scale := math.Abs(w[i])
							switch gr.name {
							case "mean", "err":
								scale = math.Max(scale, rms(i-gr.lo))
							case "second":
								scale = math.Max(scale, math.Sqrt(rms((i-gr.lo)/pm)*rms((i-gr.lo)%pm)))
							}
							if !(d <= 1e-9*scale) {
								t.Errorf("%s task %d (%s): out[%d] (%s) = %.17g, CPU %.17g (error / scale %.3g)", name, task, kindOf[task], i, gr.name, g[i], w[i], d/scale)
							}
							wr, ws := worstRel[kern.name], worstScaled[kern.name]
							wr[gi] = math.Max(wr[gi], d/math.Abs(w[i]))
							ws[gi] = math.Max(ws[gi], d/scale)
						}
					}
				}
				t.Logf("%s: statuses %v, least ESS of a task by kind %v", name, status, minESS)
				// A task with a few draws may find no point; with hundreds, every valid task has one.
				if cf.shared {
					if status[channel.DeepOK] != n {
						t.Errorf("%s: statuses %v, want all DeepOK", name, status)
					}
				} else if status[channel.DeepNotPD] != 1 || status[channel.DeepBadSlot] != 4 || (cf.draws >= 100 && status[channel.DeepOK] != n-5) {
					t.Errorf("%s: statuses %v, want 1 DeepNotPD, 4 DeepBadSlot and (with 100 draws or more) the rest DeepOK", name, status)
				}
			}
		}
		for gi, gr := range groups {
			for _, kern := range deepKernels {
				t.Logf("%s L=%d %s: worst error relative to the value %.3g, to its scale %.3g", kern.name, L, gr.name, worstRel[kern.name][gi], worstScaled[kern.name][gi])
			}
		}
	}
}

// TestDeepSampleBadL launches deep_sample and deep_sample_warp at layer counts outside channel.DeepMinL ..
// DeepMaxL, which the device front refuses and DeepSampleBatch rejects: for 1 <= L <= 64 every
// task's DeepOut(L) values are NaN with the kernel-only status 4 (deep.cu's DEEP_BAD_L) last,
// whatever the input; for L <= 0 (and L > 64) nothing is written.
func TestDeepSampleBadL(t *testing.T) {
	needEmu(t)
	const n = 3
	in := newBuf(t, make([]float64, n*channel.DeepIn(5)))
	for _, kern := range deepKernels {
		for _, L := range []int{1, 5, 64, 0, -1, 65} {
			nout := channel.DeepOut(L)
			init := make([]float64, n*nout)
			for i := range init {
				init[i] = 7
			}
			outBuf := newBuf(t, init)
			launch(t, kern.name, kern.grid(n), outBuf, in, n, L, 10, 1.0, 1.0, uint64(1), uint64(0), uint64(64))
			got := outBuf.read(t)
			for i, g := range got {
				want := 7.0
				if L >= 1 && L <= 64 {
					want = math.NaN()
					if i%nout == channel.DeepOutStatus(L) {
						want = 4
					}
				}
				if !(g == want || math.IsNaN(g) && math.IsNaN(want)) {
					t.Fatalf("%s, L = %d: out[%d] = %v, want %v", kern.name, L, i, g, want)
				}
			}
		}
	}
}
