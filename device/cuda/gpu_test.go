package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// GPU tests compare every operation with the cpu backend on the same fresh random inputs.
// Without a usable GPU they skip with the reason (Probe's); with AIM_REQUIRE_GPU set they fail
// instead. When Probe finds a usable GPU, a failing Open is a test failure, not a skip.
//
// Accuracy measure: the norm-wise relative error ||got - want||_2 / ||want||_2.
const tol = 1e-12

var (
	gpuOnce sync.Once
	gpuDev  *Device
	gpuErr  error
	gpuSkip string
)

// TestMain closes the shared GPU device after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if gpuDev != nil {
		if err := gpuDev.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the GPU:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// probeReason says why a report is not usable.
func probeReason(r Report) string {
	if r.Error != "" {
		return r.Error
	}
	for _, l := range r.Libraries {
		if l.Error != "" && !l.Optional {
			return l.Name + ": " + l.Error
		}
	}
	return "no CUDA device"
}

// openGPU probes for a usable GPU and opens it (once: gpuOnce).
func openGPU() {
	r := Probe()
	if !r.Usable() {
		gpuSkip = "no usable CUDA GPU: " + probeReason(r)
		return
	}
	gpuDev, gpuErr = Open(0)
	if gpuErr == nil {
		fmt.Fprintf(os.Stderr, "GPU tests on %s\n", gpuDev.Info().Description)
		for _, l := range gpuDev.Libraries() {
			fmt.Fprintf(os.Stderr, "  %s\n", l)
		}
	}
}

// gpu returns the shared GPU device, or skips the test when there is no usable GPU.
func gpu(t testing.TB) *Device {
	t.Helper()
	gpuOnce.Do(openGPU)
	if gpuSkip != "" {
		if os.Getenv("AIM_REQUIRE_GPU") != "" {
			t.Fatalf("AIM_REQUIRE_GPU is set, but %s", gpuSkip)
		}
		t.Skip(gpuSkip)
	}
	if gpuErr != nil {
		t.Fatalf("Probe found a usable GPU but Open failed: %v", gpuErr)
	}
	return gpuDev
}

func relErr(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var num, den float64
	for i := range got {
		e := got[i] - want[i]
		num += e * e
		den += want[i] * want[i]
	}
	if math.IsNaN(num) {
		return math.Inf(1)
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

func relScalar(got, want float64) float64 {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.Inf(1)
	}
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func randVec(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// randSym returns a random symmetric d x d matrix.
func randSym(r *rand.Rand, d int) []float64 {
	a := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := r.NormFloat64()
			a[i*d+j], a[j*d+i] = v, v
		}
	}
	return a
}

// randSymBatch returns n random symmetric t x t matrices with entries of standard deviation s.
func randSymBatch(r *rand.Rand, n, t int, s float64) []float64 {
	v := make([]float64, n*t*t)
	for mu := 0; mu < n; mu++ {
		for a := 0; a < t; a++ {
			for b := a; b < t; b++ {
				x := s * r.NormFloat64()
				v[(mu*t+a)*t+b], v[(mu*t+b)*t+a] = x, x
			}
		}
	}
	return v
}

// up allocates a buffer on dev holding v.
func up(t testing.TB, dev device.Device, v []float64) device.Buffer {
	t.Helper()
	b, err := dev.Alloc(len(v))
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Upload(b, v); err != nil {
		t.Fatal(err)
	}
	return b
}

// down returns the contents of a buffer.
func down(t testing.TB, dev device.Device, b device.Buffer) []float64 {
	t.Helper()
	v := make([]float64, b.Len())
	if err := dev.Download(v, b); err != nil {
		t.Fatal(err)
	}
	return v
}

// pair holds the same data on the cpu and on the device under test.
type pair struct {
	c, g device.Buffer
}

// both uploads v to the cpu device and the device under test.
func both(t testing.TB, c, g device.Device, v []float64) pair {
	t.Helper()
	return pair{up(t, c, v), up(t, g, v)}
}

func (p pair) free(c, g device.Device) { c.Free(p.c); g.Free(p.g) }

// maxErr tracks the largest error of one operation, fails above the tolerance and logs the
// maximum.
type maxErr struct {
	t   *testing.T
	op  string
	max float64
	at  string
	n   int
}

func (m *maxErr) check(e, tol float64, what string, args ...any) {
	m.t.Helper()
	m.n++
	w := fmt.Sprintf(what, args...)
	if e > m.max || math.IsNaN(e) {
		m.max, m.at = e, w
	}
	if !(e <= tol) {
		m.t.Errorf("%s %s: relative error %.3g > %.0e", m.op, w, e, tol)
	}
}

func (m *maxErr) report() {
	m.t.Helper()
	m.t.Logf("%-40s max relative error %.3g over %d cases (at %s)", m.op, m.max, m.n, m.at)
}

// compare downloads a buffer from both devices and checks the relative error.
func (m *maxErr) compare(c, g device.Device, p pair, what string, args ...any) {
	m.t.Helper()
	m.check(relErr(down(m.t, g, p.g), down(m.t, c, p.c)), tol, what, args...)
}

func TestGPUGemm(t *testing.T) { onTargets(t, testGPUGemm) }

func testGPUGemm(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(1, 2))
	me := &maxErr{t: t, op: "Gemm"}
	for _, s := range [][3]int{{1, 1, 1}, {7, 5, 3}, {64, 33, 17}, {300, 200, 100}, {1000, 64, 257}, {5, 6, 0}} {
		m, n, k := s[0], s[1], s[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, beta := range []float64{0, 0.7} {
				a := both(t, c, g, randVec(r, m*k))
				b := both(t, c, g, randVec(r, k*n))
				cc := both(t, c, g, randVec(r, m*n))
				if err := c.Gemm(tr[0], tr[1], m, n, k, 1.3, a.c, b.c, beta, cc.c); err != nil {
					t.Fatal(err)
				}
				if err := g.Gemm(tr[0], tr[1], m, n, k, 1.3, a.g, b.g, beta, cc.g); err != nil {
					t.Fatal(err)
				}
				me.compare(c, g, cc, "m=%d n=%d k=%d transA=%v transB=%v beta=%g", m, n, k, tr[0], tr[1], beta)
				a.free(c, g)
				b.free(c, g)
				cc.free(c, g)
			}
		}
	}
	me.report()
	// A = B is allowed: S = W W^T.
	w := both(t, c, g, randVec(r, 40*15))
	s := both(t, c, g, make([]float64, 40*40))
	if err := c.Gemm(false, true, 40, 40, 15, 0.5, w.c, w.c, 0, s.c); err != nil {
		t.Fatal(err)
	}
	if err := g.Gemm(false, true, 40, 40, 15, 0.5, w.g, w.g, 0, s.g); err != nil {
		t.Fatal(err)
	}
	me.compare(c, g, s, "W W^T")
}

func TestGPUGemmStridedBatched(t *testing.T) { onTargets(t, testGPUGemmStridedBatched) }

// testGPUGemmStridedBatched checks the batched product against the cpu's (one Gemm per product)
// with packed, shared (stride 0) and padded operands, every transposition and beta; the shapes
// include those of gradient descent's batched students (X S_p with X shared, W_p^T W_p).
func testGPUGemmStridedBatched(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(5, 6))
	me := &maxErr{t: t, op: "GemmStridedBatched"}
	type shape struct{ m, n, k, batch, padA, padB, padC int } // pad -1: a stride of 0 (shared)
	for _, s := range []shape{{7, 5, 3, 4, 0, 0, 0}, {64, 33, 17, 3, 5, -1, 2}, {400, 100, 100, 8, -1, 0, 0},
		{100, 100, 50, 8, 0, 0, 0}, {30, 20, 10, 1, 0, 0, 0}, {5, 6, 0, 3, 0, 0, 1}, {4, 4, 4, 0, 0, 0, 0}} {
		stride := func(size, pad int) int {
			if pad < 0 {
				return 0
			}
			return size + pad
		}
		m, n, k, batch := s.m, s.n, s.k, s.batch
		sa, sb, sc := stride(m*k, s.padA), stride(k*n, s.padB), stride(m*n, s.padC)
		extent := func(st, size int) int { return max(0, batch-1)*st + size }
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, beta := range []float64{0, 0.7} {
				a := both(t, c, g, randVec(r, extent(sa, m*k)))
				b := both(t, c, g, randVec(r, extent(sb, k*n)))
				cc := both(t, c, g, randVec(r, extent(sc, m*n)))
				if err := c.GemmStridedBatched(tr[0], tr[1], m, n, k, 1.3, a.c, sa, b.c, sb, beta, cc.c, sc, batch); err != nil {
					t.Fatal(err)
				}
				if err := g.GemmStridedBatched(tr[0], tr[1], m, n, k, 1.3, a.g, sa, b.g, sb, beta, cc.g, sc, batch); err != nil {
					t.Fatal(err)
				}
				me.compare(c, g, cc, "m=%d n=%d k=%d batch=%d strides %d,%d,%d transA=%v transB=%v beta=%g",
					m, n, k, batch, sa, sb, sc, tr[0], tr[1], beta)
				a.free(c, g)
				b.free(c, g)
				cc.free(c, g)
			}
		}
	}
	me.report()
}

func TestGPUGemmPrecision(t *testing.T) { onTargets(t, testGPUGemmPrecision) }

func TestGPUScratch(t *testing.T) { onTargets(t, testGPUScratch) }

// testGPUScratch: what Scratch reports for the operations of a run (device.Work), asked before
// them as a memory plan asks and again after them, is the memory the backend then holds (the
// GPU's scratch arrays, the CPU's work arrays), on a fresh device for each precision: EighSym at D = 100 then 150 and SpectralCompose at 150, ChannelGOut of
// the hardmax at T = 3 (one partial per sample on the GPU), Dot over D^2 values and SumDiag,
// and at FP64 QuadFormSum on 300 samples at T = 2 (where the device has it), at a reduced
// precision an iteration's two products over 300 samples and one larger in a single array.
func testGPUScratch(t *testing.T, g target) {
	r := rand.New(rand.NewPCG(17, 18))
	const D, nq, T = 150, 300, 2
	nc := 600
	if !g.onGPU() {
		nc = 40 // the CPU's lattice rule costs milliseconds a sample
	}
	ch := channel.Spec{Kind: channel.KindHardmax, T: 3, Points: 64, Tol: -1}
	shapes := [][3]int{{nq * T, D, D}, {D, D, nq * T}, {5, 900, 3}}
	for _, p := range []device.Precision{device.FP64, device.FP32, device.TF32, device.BF16x9} {
		d, err := g.reopen()
		if err != nil {
			t.Fatal(err)
		}
		w := device.Work{Eigh: D, Compose: D, Samples: nc, Reduce: D * D, Precision: p}
		q := d.Capabilities().QuadFormSummer
		if p == device.FP64 && q != nil {
			w.QuadForm = [3]int{nq, T, D}
		}
		if p != device.FP64 {
			w.Products = shapes
		}
		planned := d.Scratch(w) // as a memory plan asks: before any operation
		for _, dd := range []int{100, D} {
			a, vals, vecs := up(t, d, randSym(r, dd)), up(t, d, make([]float64, dd)), up(t, d, make([]float64, dd*dd))
			if err := d.EighSym(vals, vecs, a, dd); err != nil {
				t.Fatal(err)
			}
			if dd == D {
				if err := d.SpectralCompose(a, vecs, vals, dd); err != nil {
					t.Fatal(err)
				}
				if _, err := d.Dot(a, a); err != nil {
					t.Fatal(err)
				}
				if _, err := d.SumDiag(a, 1, dd); err != nil {
					t.Fatal(err)
				}
			}
			device.FreeAll(d, a, vals, vecs)
		}
		h, y, g3 := up(t, d, randSymBatch(r, nc, 3, 1)), up(t, d, make([]float64, nc*9)), up(t, d, make([]float64, nc*9))
		if err := d.ChannelOutput(ch, y, h, nc); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ChannelGOut(ch, g3, y, h, nc, 0.8); err != nil {
			t.Fatal(err)
		}
		device.FreeAll(d, h, y, g3)
		if w.QuadForm[0] > 0 {
			c, x, sc, out := up(t, d, randSymBatch(r, nq, T, 1)), up(t, d, randVec(r, nq*T*D)), up(t, d, make([]float64, nq*T*D)), up(t, d, make([]float64, D*D))
			if err := q.QuadFormSum(out, c, x, sc, nq, T, D, 0.5); err != nil {
				t.Fatal(err)
			}
			device.FreeAll(d, c, x, sc, out)
		}
		if p != device.FP64 {
			pg := d.Capabilities().PrecisionGemmer
			for _, s := range shapes {
				m, n, k := s[0], s[1], s[2]
				a, b, c := up(t, d, randVec(r, m*k)), up(t, d, randVec(r, k*n)), up(t, d, make([]float64, m*n))
				if err := pg.GemmPrecision(p, false, false, m, n, k, 1, a, b, 0, c); err != nil {
					t.Fatal(err)
				}
				device.FreeAll(d, a, b, c)
			}
		}
		if got, held := d.Scratch(w), scratchHeld(t, d); got != held || planned != held {
			t.Errorf("%v: Scratch %d bytes before the operations and %d after, the backend holds %d", p, planned, got, held)
		}
		d.Close()
	}
}

// scratchHeld returns the memory dev's backend keeps between calls now: the GPU's scratch
// arrays, or the CPU's work arrays (cpu.Device.Held).
func scratchHeld(t *testing.T, dev device.Device) uint64 {
	t.Helper()
	switch d := dev.(type) {
	case *Device:
		b := d.b
		return 8 * uint64(b.part.n+b.square.n+b.work.n+b.info.n+b.lowp.n)
	case *cpu.Device:
		return d.Held()
	}
	t.Fatalf("scratchHeld: a %T", dev)
	return 0
}

// testGPUGemmPrecision checks the products at fp32, tf32 and bf16x9 against the CPU's
// emulation of the same precision (device.Precision): element by element within
// 2 (4 sqrt(k) 2^-24) |alpha| sum_l |a_il b_lj| of each other (each is within half of that of
// the exact product of the rounded inputs; only the order of the float32 sums differs), with
// beta 0 (C overwritten, NaN included) and beta 0.7; and the relative RMS error against the
// fp64 product within a factor 4 of the CPU's, so that a GPU product that quietly computes at
// another precision (tf32 where fp32 is asked for, or fp64) fails. The shapes include the
// engine's forward product (n T x D times D x D) and back-projection (D x n T times n T x D).
func testGPUGemmPrecision(t *testing.T, g target) {
	c := cpu.New(0)
	cg, gg := c.Capabilities().PrecisionGemmer, g.Capabilities().PrecisionGemmer
	if gg == nil {
		t.Fatal("the device has no PrecisionGemmer")
	}
	r := rand.New(rand.NewPCG(9, 10))
	type shape struct {
		m, n, k    int
		transposes bool // all four transpositions (else none, and A^T B: the back-projection)
	}
	for _, p := range []device.Precision{device.FP32, device.TF32, device.BF16x9} {
		worst, ratios := 0.0, [2]float64{math.Inf(1), 0}
		for _, s := range []shape{{1, 1, 1, true}, {7, 5, 3, true}, {64, 33, 17, true}, {300, 200, 100, true}, {1000, 64, 257, false}, {4000, 200, 200, false}} {
			trs := [][2]bool{{false, false}, {true, false}}
			if s.transposes {
				trs = append(trs, [2]bool{false, true}, [2]bool{true, true})
			}
			for _, tr := range trs {
				m, n, k := s.m, s.n, s.k
				if tr[0] && !s.transposes { // the back-projection's shape: D x D from n T rows
					m, n, k = s.n, s.n, s.m
				}
				for _, beta := range []float64{0, 0.7} {
					av, bv, cv := randVec(r, m*k), randVec(r, k*n), randVec(r, m*n)
					if beta == 0 {
						cv[0] = math.NaN()
					}
					a, b := both(t, c, g, av), both(t, c, g, bv)
					cc := both(t, c, g, cv)
					if err := cg.GemmPrecision(p, tr[0], tr[1], m, n, k, 1.3, a.c, b.c, beta, cc.c); err != nil {
						t.Fatal(err)
					}
					if err := gg.GemmPrecision(p, tr[0], tr[1], m, n, k, 1.3, a.g, b.g, beta, cc.g); err != nil {
						t.Fatal(err)
					}
					got, want := down(t, g, cc.g), down(t, c, cc.c)
					// The scale sum_l |a_il b_lj| and the fp64 product, on the cpu.
					abs := func(v []float64) []float64 {
						out := make([]float64, len(v))
						for i, x := range v {
							out[i] = math.Abs(x)
						}
						return out
					}
					sa, sb, sab := up(t, c, abs(av)), up(t, c, abs(bv)), up(t, c, make([]float64, m*n))
					if err := c.Gemm(tr[0], tr[1], m, n, k, 1, sa, sb, 0, sab); err != nil {
						t.Fatal(err)
					}
					scale := down(t, c, sab)
					exact := up(t, c, cv)
					if err := c.Gemm(tr[0], tr[1], m, n, k, 1.3, a.c, b.c, beta, exact); err != nil {
						t.Fatal(err)
					}
					ref := down(t, c, exact)
					bound := 2 * 4 * math.Sqrt(float64(k)) * 0x1p-24 * 1.3
					for i := range got {
						d := math.Abs(got[i] - want[i])
						if !(d <= bound*scale[i]) {
							t.Fatalf("%v m=%d n=%d k=%d trans=%v beta=%g: entry %d is %v on the device, %v on the cpu (bound %.3g)",
								p, m, n, k, tr, beta, i, got[i], want[i], bound*scale[i])
						}
						if scale[i] > 0 {
							worst = math.Max(worst, d/(bound*scale[i]))
						}
					}
					if m*n*k >= 100000 {
						eg, ec := relErr(got, ref), relErr(want, ref)
						ratio := eg / ec
						ratios[0], ratios[1] = math.Min(ratios[0], ratio), math.Max(ratios[1], ratio)
						if !(ratio >= 0.25 && ratio <= 4) {
							t.Errorf("%v m=%d n=%d k=%d trans=%v: relative RMS error against fp64 %.3g on the device, %.3g on the cpu",
								p, m, n, k, tr, eg, ec)
						}
					}
					for _, q := range []pair{a, b, cc} {
						q.free(c, g)
					}
					device.FreeAll(c, sa, sb, sab, exact)
				}
			}
		}
		t.Logf("%-6v largest |device - cpu| / bound %.3g; device/cpu RMS error against fp64 in [%.3g, %.3g]", p, worst, ratios[0], ratios[1])
	}
}

func TestGPUTokens(t *testing.T) { onTargets(t, testGPUTokens) }

func testGPUTokens(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(3, 4))
	dots := &maxErr{t: t, op: "TokenDots"}
	mix := &maxErr{t: t, op: "TokenMix"}
	batched := &maxErr{t: t, op: "TokenDots vs cublasDgemmStridedBatched"}
	for _, s := range [][3]int{{1, 1, 1}, {3, 2, 5}, {100, 3, 64}, {2000, 2, 200}, {17, 5, 300}, {5000, 2, 33}, {4, 2, 0}} {
		n, T, d := s[0], s[1], s[2]
		y := both(t, c, g, randVec(r, n*T*d))
		x := both(t, c, g, randVec(r, n*T*d))
		h := both(t, c, g, randVec(r, n*T*T)) // garbage: overwritten
		if err := c.TokenDots(h.c, y.c, x.c, n, T, d); err != nil {
			t.Fatal(err)
		}
		if err := g.TokenDots(h.g, y.g, x.g, n, T, d); err != nil {
			t.Fatal(err)
		}
		dots.compare(c, g, h, "n=%d t=%d d=%d", n, T, d)
		if d > 0 {
			hb, _ := g.Alloc(n * T * T)
			if err := g.GemmStridedBatched(false, true, T, T, d, 1, y.g, T*d, x.g, T*d, 0, hb, T*T, n); err != nil {
				t.Fatal(err)
			}
			batched.check(relErr(down(t, g, hb), down(t, g, h.g)), tol, "n=%d t=%d d=%d", n, T, d)
			g.Free(hb)
		}

		cm := both(t, c, g, randVec(r, n*T*T))
		z := both(t, c, g, randVec(r, n*T*d))
		if err := c.TokenMix(z.c, cm.c, x.c, n, T, d); err != nil {
			t.Fatal(err)
		}
		if err := g.TokenMix(z.g, cm.g, x.g, n, T, d); err != nil {
			t.Fatal(err)
		}
		mix.compare(c, g, z, "n=%d t=%d d=%d", n, T, d)
		for _, p := range []pair{y, x, h, cm, z} {
			p.free(c, g)
		}
	}
	dots.report()
	mix.report()
	batched.report()
}

// TestGPUQuadFormSum: the back-projection alpha sum_mu X_mu^T C_mu X_mu of the QuadFormSummer
// (on the GPU Dsyrkx on one triangle, then the other filled in) against TokenMix then Gemm on
// the CPU, for symmetric C_mu, within tol (relative); the result is exactly symmetric. An
// empty sum (n = 0) gives zero.
func TestGPUQuadFormSum(t *testing.T) { onTargets(t, testGPUQuadFormSum) }

func testGPUQuadFormSum(t *testing.T, g target) {
	c := cpu.New(0)
	q := g.Capabilities().QuadFormSummer
	if q == nil {
		t.Fatal("no QuadFormSummer")
	}
	r := rand.New(rand.NewPCG(15, 16))
	me := &maxErr{t: t, op: "QuadFormSum"}
	for _, s := range [][3]int{{1, 1, 1}, {3, 2, 5}, {100, 3, 64}, {2000, 2, 200}, {17, 5, 300}, {0, 2, 7}} {
		n, T, d := s[0], s[1], s[2]
		cm := randVec(r, n*T*T)
		for mu := range n { // C_mu symmetric
			for a := range T {
				for b := range a {
					cm[mu*T*T+a*T+b] = cm[mu*T*T+b*T+a]
				}
			}
		}
		x := randVec(r, n*T*d)
		alpha := 0.75
		// The reference: TokenMix then Gemm on the CPU.
		cc, xc, zc, want := up(t, c, cm), up(t, c, x), up(t, c, make([]float64, n*T*d)), up(t, c, make([]float64, d*d))
		if err := c.TokenMix(zc, cc, xc, n, T, d); err != nil {
			t.Fatal(err)
		}
		if err := c.Gemm(true, false, d, d, n*T, alpha, xc, zc, 0, want); err != nil {
			t.Fatal(err)
		}
		cg, xg, sg, out := up(t, g, cm), up(t, g, x), up(t, g, make([]float64, n*T*d)), up(t, g, randVec(r, d*d))
		if err := q.QuadFormSum(out, cg, xg, sg, n, T, d, alpha); err != nil {
			t.Fatal(err)
		}
		got := down(t, g, out)
		me.check(relErr(got, down(t, c, want)), tol, "n=%d t=%d d=%d", n, T, d)
		for i := range d {
			for j := range i {
				if got[i*d+j] != got[j*d+i] {
					t.Fatalf("n=%d t=%d d=%d: out[%d][%d] = %v, out[%d][%d] = %v: not symmetric", n, T, d, i, j, got[i*d+j], j, i, got[j*d+i])
				}
			}
		}
		device.FreeAll(c, cc, xc, zc, want)
		device.FreeAll(g, cg, xg, sg, out)
	}
	me.report()
}

var testChannels = []channel.Spec{
	{Kind: channel.KindSoftmax, T: 2, Beta: 1},
	{Kind: channel.KindSoftmax, T: 3, Beta: 0.7},
	{Kind: channel.KindSoftmax, T: 5, Beta: 1.3},
	{Kind: channel.KindHardmax, T: 2},
	{Kind: channel.KindHardmax, T: 2, PaperCompat: true},
	// The linear channel, composed by the device front from Copy, Axpby and Dot.
	{Kind: channel.KindLinear, T: 1},
	{Kind: channel.KindLinear, T: 1, Noise: 0.25},
}

func TestGPUChannels(t *testing.T) { onTargets(t, testGPUChannels) }

func testGPUChannels(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(5, 6))
	const vz = 0.8
	for _, ch := range testChannels {
		out := &maxErr{t: t, op: fmt.Sprintf("ChannelOutput %v T=%d", ch, ch.T)}
		gout := &maxErr{t: t, op: fmt.Sprintf("ChannelGOut %v T=%d", ch, ch.T)}
		T := ch.T
		for _, n := range []int{1, 7, 300, 1000, 5001} {
			h := randSymBatch(r, n, T, 1)
			hp := both(t, c, g, h)
			yp := both(t, c, g, randVec(r, n*T*T))
			if err := c.ChannelOutput(ch, yp.c, hp.c, n); err != nil {
				t.Fatal(err)
			}
			if err := g.ChannelOutput(ch, yp.g, hp.g, n); err != nil {
				t.Fatal(err)
			}
			out.compare(c, g, yp, "n=%d", n)
			// In place: y = h.
			ip := both(t, c, g, h)
			if err := c.ChannelOutput(ch, ip.c, ip.c, n); err != nil {
				t.Fatal(err)
			}
			if err := g.ChannelOutput(ch, ip.g, ip.g, n); err != nil {
				t.Fatal(err)
			}
			out.compare(c, g, ip, "n=%d in place", n)
			ip.free(c, g)

			// omega: the teacher's h in z-coordinates plus noise; y from the cpu on both.
			y := down(t, c, yp.c)
			_ = g.Upload(yp.g, y)
			omega := randSymBatch(r, n, T, 0.5)
			for mu := 0; mu < n; mu++ {
				for a := 0; a < T; a++ {
					for b := 0; b < T; b++ {
						tau := 1.0
						if a != b {
							tau = math.Sqrt2
						}
						omega[(mu*T+a)*T+b] += tau * h[(mu*T+a)*T+b]
					}
				}
			}
			op := both(t, c, g, omega)
			gp := both(t, c, g, randVec(r, n*T*T))
			sc, err := c.ChannelGOut(ch, gp.c, yp.c, op.c, n, vz)
			if err != nil {
				t.Fatal(err)
			}
			sg, err := g.ChannelGOut(ch, gp.g, yp.g, op.g, n, vz)
			if err != nil {
				t.Fatal(err)
			}
			gout.compare(c, g, gp, "n=%d g", n)
			gout.check(relScalar(sg, sc), tol, "n=%d sum", n)
			sg2, err := g.ChannelGOut(ch, gp.g, yp.g, op.g, n, vz)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(sg2) != math.Float64bits(sg) {
				t.Errorf("ChannelGOut %v n=%d: sum not deterministic: %v then %v", ch, n, sg, sg2)
			}
			// g = omega is allowed.
			if _, err := c.ChannelGOut(ch, op.c, yp.c, op.c, n, vz); err != nil {
				t.Fatal(err)
			}
			if _, err := g.ChannelGOut(ch, op.g, yp.g, op.g, n, vz); err != nil {
				t.Fatal(err)
			}
			gout.compare(c, g, op, "n=%d g = omega", n)
			for _, p := range []pair{hp, yp, op, gp} {
				p.free(c, g)
			}
		}
		out.report()
		gout.report()
	}
}

// TestGPUHardmaxT compares hardmaxt_gout with the CPU's ChannelGOut (channel.HardmaxT per
// sample) at T = 3 and 4: with a fixed number of points (Tol < 0) g agrees to 1e-12 of max |g|
// (only the order of the sums over points differs); with the default adaptive rule a sample may
// stop at another doubling where an error is within rounding of Tol, so the share of samples
// that agree to 1e-12 is reported and must be at least 99%.
func TestGPUHardmaxT(t *testing.T) { onTargets(t, testGPUHardmaxT) }

func testGPUHardmaxT(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(9, 10))
	const vz = 0.8
	n := 600
	if !g.onGPU() {
		n = 40 // the stand-in runs the harness; the CPU's lattice rule costs about 10 ms a sample
	}
	for _, ch := range []channel.Spec{
		{Kind: channel.KindHardmax, T: 3, Points: 256, Tol: -1}, {Kind: channel.KindHardmax, T: 4, Points: 256, Tol: -1}, {Kind: channel.KindHardmax, T: 3},
	} {
		T := ch.T
		h := randSymBatch(r, n, T, 1)
		hp, yp := both(t, c, g, h), both(t, c, g, make([]float64, n*T*T))
		if err := c.ChannelOutput(ch, yp.c, hp.c, n); err != nil {
			t.Fatal(err)
		}
		if err := g.ChannelOutput(ch, yp.g, hp.g, n); err != nil {
			t.Fatal(err)
		}
		(&maxErr{t: t, op: fmt.Sprintf("ChannelOutput %v T=%d", ch, T)}).compare(c, g, yp, "n=%d", n)
		omega := randSymBatch(r, n, T, 0.5)
		for i := range omega {
			tau := math.Sqrt2
			if a, b := (i/T)%T, i%T; a == b {
				tau = 1
			}
			omega[i] += tau * h[i]
		}
		op, gp := both(t, c, g, omega), both(t, c, g, make([]float64, n*T*T))
		sc, err := c.ChannelGOut(ch, gp.c, yp.c, op.c, n, vz)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		sg, err := g.ChannelGOut(ch, gp.g, yp.g, op.g, n, vz)
		if err != nil {
			t.Fatal(err)
		}
		sec := time.Since(start).Seconds()
		gc, gg := down(t, c, gp.c), down(t, g, gp.g)
		var scale float64
		for _, v := range gc {
			scale = math.Max(scale, math.Abs(v))
		}
		worst, agree := 0.0, 0
		for mu := 0; mu < n; mu++ {
			e := 0.0
			for i := mu * T * T; i < (mu+1)*T*T; i++ {
				e = math.Max(e, math.Abs(gg[i]-gc[i])/scale)
			}
			if e <= 1e-12 {
				agree++
			}
			worst = math.Max(worst, e)
		}
		points, tol := ch.Lattice()
		t.Logf("hardmax T=%d points %d tol %g: %d samples, %d agree to 1e-12 (worst %.3g), sums %.15g / %.15g, GPU %.3g s (%.3g us a sample)",
			T, points, tol, n, agree, worst, sg, sc, sec, sec/float64(n)*1e6)
		if ch.Tol < 0 && (agree != n || math.Abs(sg-sc) > 1e-12*sc) {
			t.Errorf("hardmax T=%d fixed points: %d of %d samples agree, sums %v / %v", T, agree, n, sg, sc)
		}
		if ch.Tol >= 0 && agree < n*99/100 {
			t.Errorf("hardmax T=%d adaptive: only %d of %d samples agree", T, agree, n)
		}
		for _, p := range []pair{hp, yp, op, gp} {
			p.free(c, g)
		}
	}
}

func TestGPUEighSym(t *testing.T) { onTargets(t, testGPUEighSym) }

// testGPUEighSym checks EighSym with each of cuSOLVER's eigensolvers (syevd, EighSym's, and
// syevj): ascending eigenvalues within 1e-12 of the cpu's (relative RMS), the residual and the
// orthogonality of the eigenvectors within 1e-10, A unchanged.
func testGPUEighSym(t *testing.T, g target) {
	for _, m := range []eighMethod{eighSyevd, eighSyevj} {
		testGPUEighWith(t, g, m)
	}
}

func testGPUEighWith(t *testing.T, g target, m eighMethod) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(7, 8))
	res := &maxErr{t: t, op: m.String() + " residual ||AO - O diag(lambda)||_F/||A||_F"}
	orth := &maxErr{t: t, op: m.String() + " orthogonality ||O^T O - I||_F/sqrt(D)"}
	vals := &maxErr{t: t, op: m.String() + " eigenvalues vs cpu"}
	for _, D := range []int{1, 5, 64, 200, 501} {
		a := randSym(r, D)
		ab := up(t, g, a)
		vb, _ := g.Alloc(D)
		ob, _ := g.Alloc(D * D)
		if err := g.eigh(m, vb, ob, ab, D); err != nil {
			t.Fatal(err)
		}
		lam, o := down(t, g, vb), down(t, g, ob)
		if got := down(t, g, ab); relErr(got, a) != 0 {
			t.Errorf("EighSym changed A at D=%d", D)
		}
		for k := 1; k < D; k++ {
			if lam[k] < lam[k-1] {
				t.Errorf("D=%d: eigenvalues not ascending at %d: %g < %g", D, k, lam[k], lam[k-1])
			}
		}
		// Residual and orthogonality with the cpu's Gemm (row-major O: column k = vector k).
		ac, oc := up(t, c, a), up(t, c, o)
		ao, _ := c.Alloc(D * D)
		gram, _ := c.Alloc(D * D)
		_ = c.Gemm(false, false, D, D, D, 1, ac, oc, 0, ao)
		_ = c.Gemm(true, false, D, D, D, 1, oc, oc, 0, gram)
		aoH, gramH := down(t, c, ao), down(t, c, gram)
		var rs, as, os float64
		for i := 0; i < D; i++ {
			for k := 0; k < D; k++ {
				e := aoH[i*D+k] - o[i*D+k]*lam[k]
				rs += e * e
				as += a[i*D+k] * a[i*D+k]
				q := gramH[i*D+k]
				if i == k {
					q--
				}
				os += q * q
			}
		}
		res.check(math.Sqrt(rs/as), 1e-10, "D=%d", D)
		orth.check(math.Sqrt(os/float64(D)), 1e-10, "D=%d", D)
		cv, _ := c.Alloc(D)
		co, _ := c.Alloc(D * D)
		if err := c.EighSym(cv, co, ac, D); err != nil {
			t.Fatal(err)
		}
		vals.check(relErr(lam, down(t, c, cv)), tol, "D=%d", D)
		device.FreeAll(g, ab, vb, ob)
		device.FreeAll(c, ac, oc, ao, gram, cv, co)
	}
	res.report()
	orth.report()
	vals.report()
	// Aliasing is refused.
	x, _ := g.Alloc(16)
	y, _ := g.Alloc(4)
	if err := g.EighSym(y, x, x, 4); err == nil {
		t.Error("EighSym accepted vecs = a")
	}
	device.FreeAll(g, x, y)
}

func TestGPUSpectralCompose(t *testing.T) { onTargets(t, testGPUSpectralCompose) }

func testGPUSpectralCompose(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(9, 10))
	me := &maxErr{t: t, op: "SpectralCompose"}
	for _, D := range []int{1, 5, 64, 200, 333} {
		o := both(t, c, g, randVec(r, D*D)) // any matrix: the operation is O diag(f) O^T
		f := both(t, c, g, randVec(r, D))
		out := both(t, c, g, randVec(r, D*D))
		if err := c.SpectralCompose(out.c, o.c, f.c, D); err != nil {
			t.Fatal(err)
		}
		if err := g.SpectralCompose(out.g, o.g, f.g, D); err != nil {
			t.Fatal(err)
		}
		me.compare(c, g, out, "D=%d", D)
		for _, p := range []pair{o, f, out} {
			p.free(c, g)
		}
	}
	me.report()
}

func TestGPUSmallOps(t *testing.T) { onTargets(t, testGPUSmallOps) }

func testGPUSmallOps(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(11, 12))
	errs := map[string]*maxErr{}
	var order []string
	chk := func(op string, e float64, what string, args ...any) {
		t.Helper()
		if errs[op] == nil {
			errs[op] = &maxErr{t: t, op: op}
			order = append(order, op)
		}
		errs[op].check(e, tol, what, args...)
	}
	for _, n := range []int{1, 7, 300, 4096, 4097, 20001, 1 << 20} {
		x := both(t, c, g, randVec(r, n))
		y := both(t, c, g, randVec(r, n))
		if got := down(t, g, x.g); relErr(got, down(t, c, x.c)) != 0 {
			t.Errorf("Upload/Download n=%d not exact", n)
		}
		_ = c.Scal(x.c, -0.3)
		if err := g.Scal(x.g, -0.3); err != nil {
			t.Fatal(err)
		}
		chk("Scal", relErr(down(t, g, x.g), down(t, c, x.c)), "n=%d", n)
		_ = c.Axpby(y.c, 0.7, x.c, -1.1)
		if err := g.Axpby(y.g, 0.7, x.g, -1.1); err != nil {
			t.Fatal(err)
		}
		chk("Axpby", relErr(down(t, g, y.g), down(t, c, y.c)), "n=%d", n)
		dc, _ := c.Dot(x.c, y.c)
		dg, err := g.Dot(x.g, y.g)
		if err != nil {
			t.Fatal(err)
		}
		chk("Dot", relScalar(dg, dc), "n=%d", n)
		sc, _ := c.SqDist(x.c, y.c)
		sg, err := g.SqDist(x.g, y.g)
		if err != nil {
			t.Fatal(err)
		}
		chk("SqDist", relScalar(sg, sc), "n=%d", n)
		for rep := 0; rep < 2; rep++ { // deterministic: the same bits twice
			d2, _ := g.Dot(x.g, y.g)
			s2, _ := g.SqDist(x.g, y.g)
			if math.Float64bits(d2) != math.Float64bits(dg) || math.Float64bits(s2) != math.Float64bits(sg) {
				t.Errorf("n=%d: reductions not deterministic: Dot %v then %v, SqDist %v then %v", n, dg, d2, sg, s2)
			}
		}
		z := both(t, c, g, make([]float64, n+3))
		_ = c.Copy(z.c, x.c)
		if err := g.Copy(z.g, x.g); err != nil {
			t.Fatal(err)
		}
		if relErr(down(t, g, z.g), down(t, c, z.c)) != 0 {
			t.Errorf("Copy n=%d not exact", n)
		}
		for _, p := range []pair{x, y, z} {
			p.free(c, g)
		}
	}
	for _, s := range [][2]int{{1, 1}, {5, 2}, {300, 3}, {5000, 2}, {4097, 5}, {100000, 2}} {
		n, T := s[0], s[1]
		x := both(t, c, g, randVec(r, n*T*T))
		_ = c.AddDiag(x.c, n, T, 0.25)
		if err := g.AddDiag(x.g, n, T, 0.25); err != nil {
			t.Fatal(err)
		}
		chk("AddDiag", relErr(down(t, g, x.g), down(t, c, x.c)), "n=%d t=%d", n, T)
		sc, _ := c.SumDiag(x.c, n, T)
		sg, err := g.SumDiag(x.g, n, T)
		if err != nil {
			t.Fatal(err)
		}
		chk("SumDiag", relScalar(sg, sc), "n=%d t=%d", n, T)
		if s2, _ := g.SumDiag(x.g, n, T); math.Float64bits(s2) != math.Float64bits(sg) {
			t.Errorf("SumDiag n=%d: not deterministic: %v then %v", n, sg, s2)
		}
		p := both(t, c, g, randVec(r, T*T))
		_ = c.MulPattern(x.c, p.c, n, T*T)
		if err := g.MulPattern(x.g, p.g, n, T*T); err != nil {
			t.Fatal(err)
		}
		chk("MulPattern", relErr(down(t, g, x.g), down(t, c, x.c)), "n=%d m=%d", n, T*T)
		x.free(c, g)
		p.free(c, g)
	}
	// The AMP shape: AddDiag on one D x D matrix, SumDiag of it.
	const D = 1000
	s := both(t, c, g, randVec(r, D*D))
	_ = c.AddDiag(s.c, 1, D, 0.7)
	_ = g.AddDiag(s.g, 1, D, 0.7)
	chk("AddDiag", relErr(down(t, g, s.g), down(t, c, s.c)), "n=1 t=%d", D)
	sc, _ := c.SumDiag(s.c, 1, D)
	sg, _ := g.SumDiag(s.g, 1, D)
	chk("SumDiag", relScalar(sg, sc), "n=1 t=%d", D)
	s.free(c, g)
	for _, op := range order {
		errs[op].report()
	}
}

func TestGPUGaussianFill(t *testing.T) { onTargets(t, testGPUGaussianFill) }

func testGPUGaussianFill(t *testing.T, g target) {
	var mismatches, total int
	for _, c := range []struct {
		n            int
		seed, offset uint64
		scale        float64
	}{
		{1, 0, 0, 1}, {2, 1, 1, 1}, {7, 42, 3, 0.5}, {1000, 7, 1 << 52, 1}, {4097, 9, 1<<53 + 1, -2.5},
		{100001, 123456789, 0, 1}, {5, 3, math.MaxUint64 - 2, 1}, {1 << 20, 77, 12345, 0.1},
	} {
		b, err := g.Alloc(c.n)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.GaussianFill(b, c.seed, c.offset, c.scale); err != nil {
			t.Fatal(err)
		}
		got := down(t, g, b)
		want := make([]float64, c.n)
		device.FillNormals(want, c.seed, c.offset)
		bad := 0
		for i := range want {
			w := want[i]
			if c.scale != 1 {
				w *= c.scale
			}
			total++
			if math.Float64bits(got[i]) != math.Float64bits(w) {
				if bad < 3 {
					t.Errorf("n=%d seed=%d offset=%d: x[%d] = %v (%#x), want %v (%#x)",
						c.n, c.seed, c.offset, i, got[i], math.Float64bits(got[i]), w, math.Float64bits(w))
				}
				bad++
			}
		}
		mismatches += bad
		g.Free(b)
	}
	t.Logf("GaussianFill: %d of %d values differ from device.FillNormals in their bits", mismatches, total)
}

// TestGPUGaussianFillAsync: fills started with the Prefetcher into one half of a buffer, while
// Gemm runs on other buffers, hold after their wait the bits of device.FillNormals, and leave
// the other half as it was.
func TestGPUGaussianFillAsync(t *testing.T) { onTargets(t, testGPUGaussianFillAsync) }

func testGPUGaussianFillAsync(t *testing.T, g target) {
	pf := g.Capabilities().Prefetcher
	if pf == nil {
		t.Fatal("no Prefetcher")
	}
	const k = 256
	r := rand.New(rand.NewPCG(13, 14))
	a, b, c := up(t, g, randVec(r, k*k)), up(t, g, randVec(r, k*k)), up(t, g, make([]float64, k*k))
	for _, n := range []int{1, 4097, 1 << 20} {
		buf, err := g.Alloc(2 * n)
		if err != nil {
			t.Fatal(err)
		}
		fixed := randVec(r, n)
		if err := g.Upload(device.MustView(buf, 0, n), fixed); err != nil {
			t.Fatal(err)
		}
		seed, offset := uint64(n), uint64(12345)
		wait, err := pf.GaussianFillAsync(device.MustView(buf, n, n), seed, offset, 1)
		if err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if err := g.Gemm(false, false, k, k, k, 1, a, b, 1, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		got := down(t, g, buf)
		want := make([]float64, n)
		device.FillNormals(want, seed, offset)
		for i := range n {
			if math.Float64bits(got[n+i]) != math.Float64bits(want[i]) || got[i] != fixed[i] {
				t.Fatalf("n = %d: x[%d] = %v, filled %v (want %v, %v)", n, i, got[i], got[n+i], fixed[i], want[i])
			}
		}
		g.Free(buf)
	}
	device.FreeAll(g, a, b, c)
}

func TestGPUInfoAndErrors(t *testing.T) { onTargets(t, testGPUInfoAndErrors) }

func testGPUInfoAndErrors(t *testing.T, g target) {
	info := g.Info()
	t.Logf("Info: %+v", info)
	g.checkInfo(t, info)

	// Refusal before allocating.
	if g.onGPU() {
		n := int(info.FreeBytes/8) + 1<<28 // 2 GiB more than is free
		if _, err := g.Alloc(n); err == nil || !strings.Contains(err.Error(), "bytes") || !strings.Contains(err.Error(), "available") {
			t.Errorf("Alloc(%d) beyond free memory: %v", n, err)
		} else {
			t.Logf("refused: %v", err)
		}
	}
	if _, err := g.Alloc(-1); err == nil {
		t.Error("Alloc(-1) succeeded")
	}
	// Fresh buffers are zero.
	z, err := g.Alloc(12345)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range down(t, g, z) {
		if v != 0 {
			t.Fatalf("fresh buffer: x[%d] = %v", i, v)
		}
	}
	e, err := g.Alloc(0)
	if err != nil || e.Len() != 0 {
		t.Fatalf("Alloc(0): %v, len %d", err, e.Len())
	}
	g.Free(e)

	// Freed buffers.
	x := up(t, g, []float64{1, 2, 3})
	y := up(t, g, []float64{4, 5, 6})
	g.Free(x)
	g.Free(x) // twice: nothing
	if x.Len() != 0 {
		t.Errorf("freed buffer has Len %d", x.Len())
	}
	for name, err := range map[string]error{
		"Upload":   g.Upload(x, []float64{1}),
		"Download": g.Download(make([]float64, 1), x),
		"Copy":     g.Copy(y, x),
		"Scal":     g.Scal(x, 2),
		"Axpby":    g.Axpby(y, 1, x, 1),
		"Gemm":     g.Gemm(false, false, 1, 1, 1, 1, x, y, 0, z),
	} {
		if err == nil || !strings.Contains(err.Error(), "was freed") {
			t.Errorf("%s on a freed buffer: %v", name, err)
		}
	}
	if _, err := g.Dot(x, y); err == nil || !strings.Contains(err.Error(), "was freed") {
		t.Errorf("Dot on a freed buffer: %v", err)
	}
	// Foreign buffers, sizes, aliasing.
	cb, _ := cpu.New(1).Alloc(3) // another device's buffer, on either target
	want := "not a buffer of the cuda device"
	if !g.onGPU() {
		want = "belongs to another cpu device"
	}
	if err := g.Scal(cb, 2); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Scal on another device's buffer: %v", err)
	}
	if err := g.Axpby(y, 1, z, 1); !errors.Is(err, device.ErrSize) {
		t.Errorf("Axpby of unequal lengths: %v", err)
	}
	if err := g.Gemm(false, false, 2, 2, 2, 1, y, y, 0, z); !errors.Is(err, device.ErrSize) {
		t.Errorf("Gemm with a short A: %v", err)
	}
	if err := g.TokenDots(y, y, z, 1, 1, 3); err == nil {
		t.Error("TokenDots accepted h = y")
	}
	if _, err := g.ChannelGOut(channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, z, y, z, 0, -1); err == nil {
		t.Error("ChannelGOut accepted V = -1")
	}
	if err := g.ChannelOutput(channel.Spec{Kind: channel.KindHardmax, T: 7}, z, z, 1); err == nil {
		t.Error("ChannelOutput accepted hardmax with T = 7")
	}
	device.FreeAll(g, y, z)

	// A closed device refuses work.
	d2, err := g.reopen()
	if err != nil {
		t.Fatal(err)
	}
	b2 := up(t, d2, []float64{1})
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d2.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := d2.Scal(b2, 2); !errors.Is(err, ErrClosed) {
		t.Errorf("Scal after Close: %v", err)
	}
	if _, err := d2.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close: %v", err)
	}
	d2.Free(b2) // no panic
	if _, err := Open(1 << 20); g.onGPU() && (err == nil || !strings.Contains(err.Error(), "out of range")) {
		t.Errorf("Open of a missing ordinal: %v", err)
	}
	// The shared device still works after another Device on the same GPU was closed (the
	// primary context is reference counted).
	w := up(t, g, []float64{3, 4})
	if s, err := g.Dot(w, w); err != nil || s != 25 {
		t.Errorf("Dot after closing a second device: %v, %v", s, err)
	}
	g.Free(w)
}
