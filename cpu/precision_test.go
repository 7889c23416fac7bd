package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/aimtheory/aim/device"
)

// opAt returns op(M)[i, j] of a packed row-major matrix stored r x c (c x r when trans).
func opAt(v []float64, trans bool, i, j, rows, cols int) float64 {
	if trans {
		return v[j*rows+i]
	}
	return v[i*cols+j]
}

// naivePrecision returns the product P = op(A) op(B) at precision p by a triple loop over
// rounded inputs with a float32 accumulator summed in index order (BF16x9: the nine split
// products of each term added into it, smallest first), the exact product of the rounded
// inputs in float64, and sum_l |a_il b_lj| (the scale of the rounding errors).
func naivePrecision(p device.Precision, ta, tb bool, m, n, k int, a, b []float64) (p32, exact, scale []float64) {
	p32, exact, scale = make([]float64, m*n), make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc float32
			var ex, sc float64
			for l := 0; l < k; l++ {
				av := device.RoundInput(p, opAt(a, ta, i, l, m, k))
				bv := device.RoundInput(p, opAt(b, tb, l, j, k, n))
				if p == device.BF16x9 {
					ah, am, al := device.SplitBF16(av)
					bh, bm, bl := device.SplitBF16(bv)
					ap, bp := [3]float32{ah, am, al}, [3]float32{bh, bm, bl}
					for _, st := range device.BF16x9Order {
						acc += float32(ap[st[0]] * bp[st[1]])
					}
				} else {
					acc += float32(av * bv)
				}
				ex += float64(av) * float64(bv)
				sc += math.Abs(float64(av) * float64(bv))
			}
			p32[i*n+j], exact[i*n+j], scale[i*n+j] = float64(acc), ex, sc
		}
	}
	return p32, exact, scale
}

// precisionDevices returns the gonum device and, where a library is installed, the native one
// (on 2 threads).
func precisionDevices(t *testing.T, workers int) []*Device {
	g, err := Open(Options{Workers: workers, Threads: 2, BLAS: GonumBLAS})
	if err != nil {
		t.Fatal(err)
	}
	devs := []*Device{g}
	if n, err := Open(Options{Workers: workers, Threads: 2, BLAS: "auto"}); err == nil && n.BLAS().Native {
		devs = append(devs, n)
	} else {
		t.Logf("no native BLAS: the gonum path only")
	}
	return devs
}

// gemmAt runs GemmPrecision on d with alpha = 1.5, beta = 0.5 and returns C.
func gemmAt(t *testing.T, d *Device, p device.Precision, ta, tb bool, m, n, k int, a, b, c []float64) []float64 {
	t.Helper()
	cb := up(t, d, c)
	if err := d.Capabilities().PrecisionGemmer.GemmPrecision(p, ta, tb, m, n, k, 1.5, up(t, d, a), up(t, d, b), 0.5, cb); err != nil {
		t.Fatal(err)
	}
	return down(t, d, cb)
}

// TestGemmPrecisionNaive: FP32, TF32 and BF16x9 on both BLAS paths against the naive loop with
// the same rounding, for the four transposition cases and odd shapes. The float32 sums of the
// library and of the loop differ only by their order: |P - P_naive| <= 4 sqrt(k) 2^-24
// sum |a b| (the bound of random-sign rounding errors, with a margin). BF16x9 is within float32
// accuracy of the exact product of fl32(A) and fl32(B) (the same bound), like FP32.
func TestGemmPrecisionNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, d := range precisionDevices(t, 3) {
		for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {37, 29, 41}, {20, 13, 300}} {
			m, n, k := sz[0], sz[1], sz[2]
			a, b, c := randVec(r, m*k), randVec(r, k*n), randVec(r, m*n)
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, p := range []device.Precision{device.FP32, device.TF32, device.BF16x9} {
						got := gemmAt(t, d, p, ta, tb, m, n, k, a, b, c)
						p32, exact, scale := naivePrecision(p, ta, tb, m, n, k, a, b)
						var worst, worstEx float64
						for i := range got {
							prod := (got[i] - 0.5*c[i]) / 1.5
							bound := 4 * math.Sqrt(float64(k)) * 0x1p-24 * scale[i]
							worst = max(worst, math.Abs(prod-p32[i])/bound)
							worstEx = max(worstEx, math.Abs(prod-exact[i])/bound)
						}
						if !(worst <= 1) || (p == device.BF16x9 && !(worstEx <= 1)) {
							t.Errorf("%s %v m,n,k = %d,%d,%d ta %v tb %v: |P - naive| %.3g, |P - exact| %.3g of the bound 4 sqrt(k) 2^-24 sum|ab|",
								d.BLAS().short(), p, m, n, k, ta, tb, worst, worstEx)
						}
					}
				}
			}
		}
	}
}

// TestGemmPrecisionAccuracy: against the float64 product of the unrounded inputs (k = 400,
// Gaussian entries), the relative RMS error of FP32 and BF16x9 is at float32 level (< 2^-20)
// and that of TF32 at the TF32 level, about 2^-12 (2^-11, half a TF32 ulp, times the RMS of a
// uniform rounding error over the significand range): between 2^-14 and 2^-10.
func TestGemmPrecisionAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	m, n, k := 40, 30, 400
	a, b, c := randVec(r, m*k), randVec(r, k*n), make([]float64, m*n)
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s neumaier
			for l := 0; l < k; l++ {
				s.add(a[i*k+l] * b[l*n+j])
			}
			want[i*n+j] = s.sum()
		}
	}
	rms := func(p device.Precision, d *Device) float64 {
		got := gemmAt(t, d, p, false, false, m, n, k, a, b, c)
		var num, den float64
		for i := range got {
			e := got[i]/1.5 - want[i]
			num += e * e
			den += want[i] * want[i]
		}
		return math.Sqrt(num / den)
	}
	for _, d := range precisionDevices(t, 2) {
		e64, e32, etf, ebf := rms(device.FP64, d), rms(device.FP32, d), rms(device.TF32, d), rms(device.BF16x9, d)
		t.Logf("%s: relative RMS error of the product, k = %d: fp64 %.3g, fp32 %.3g (2^%.1f), tf32 %.3g (2^%.1f), bf16x9 %.3g (2^%.1f)",
			d.BLAS().short(), k, e64, e32, math.Log2(e32), etf, math.Log2(etf), ebf, math.Log2(ebf))
		if !(e64 < 1e-14) || !(e32 < 0x1p-20) || !(ebf < 0x1p-20) || !(etf > 0x1p-14 && etf < 0x1p-10) || !(etf > 100*e32) {
			t.Errorf("%s: errors out of range: fp64 %.3g fp32 %.3g tf32 %.3g bf16x9 %.3g", d.BLAS().short(), e64, e32, etf, ebf)
		}
	}
}

// TestGemmPrecisionWorkers: the results are bit for bit the same with 1 and 4 workers, on each
// path (the native library on the same thread count: its own sgemm, like its dgemm, may split
// its sums by its thread count); and C is overwritten at beta = 0 (NaN in C does not
// propagate).
func TestGemmPrecisionWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	m, n, k := 150, 70, 9000 // several chunks of the element-wise loops
	a, b := randVec(r, m*k), randVec(r, k*n)
	c := make([]float64, m*n)
	for i := range c {
		c[i] = math.NaN()
	}
	one, four := precisionDevices(t, 1), precisionDevices(t, 4)
	for i := range one {
		for _, p := range []device.Precision{device.FP32, device.TF32, device.BF16x9} {
			run := func(d *Device) []float64 {
				cb := up(t, d, c)
				if err := d.Capabilities().PrecisionGemmer.GemmPrecision(p, true, false, m, n, k, 1, up(t, d, a), up(t, d, b), 0, cb); err != nil {
					t.Fatal(err)
				}
				return down(t, d, cb)
			}
			x, y := run(one[i]), run(four[i])
			if !slices.Equal(x, y) || math.IsNaN(x[0]) {
				t.Errorf("%s %v: 1 and 4 workers differ, or NaN from C at beta = 0", one[i].BLAS().short(), p)
			}
		}
	}
}

// TestGemmPrecisionScratch: once a shape has been seen, further products of that shape or
// smaller allocate no float32 arrays (the bytes allocated per call are a small fraction of
// them).
func TestGemmPrecisionScratch(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	m, n, k := 64, 64, 2000
	d := precisionDevices(t, 2)[0]
	ab, bb, cb := up(t, d, randVec(r, m*k)), up(t, d, randVec(r, k*n)), up(t, d, make([]float64, m*n))
	g := d.Capabilities().PrecisionGemmer
	call := func(p device.Precision, mm int) {
		if err := g.GemmPrecision(p, false, false, mm, n, k, 1, ab, bb, 0, cb); err != nil {
			t.Fatal(err)
		}
	}
	call(device.BF16x9, m)
	scratchBytes := 4 * 3 * (m*k + k*n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 3 {
		call(device.TF32, m)
		call(device.BF16x9, m/2)
	}
	runtime.ReadMemStats(&after)
	if perCall := (after.TotalAlloc - before.TotalAlloc) / 6; perCall > uint64(scratchBytes/50) {
		t.Errorf("%d bytes allocated per call, the float32 arrays are %d bytes", perCall, scratchBytes)
	}
}
