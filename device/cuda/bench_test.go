package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/bench"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/gd"
)

// Benchmarks run only with a GPU (they skip otherwise). The AMP shapes use alpha = 0.25, T = 2:
// N = D^2 / 4 samples, X is N T x D.

// benchAlloc allocates and fills buffers with normals, or skips when they do not fit.
func benchAlloc(b *testing.B, g *Device, sizes ...int) []device.Buffer {
	b.Helper()
	var need uint64
	for _, n := range sizes {
		need += 8 * uint64(n)
	}
	if free := g.Info().FreeBytes; need > free {
		b.Skipf("needs %s, %s free", device.Bytes(need), device.Bytes(free))
	}
	bufs, err := device.AllocAll(g, sizes...)
	if err != nil {
		b.Fatal(err)
	}
	for i, buf := range bufs {
		if err := g.GaussianFill(buf, 99, uint64(i)<<40, 1); err != nil {
			b.Fatal(err)
		}
	}
	return bufs
}

// BenchmarkCublasDgemm measures cuBLAS Dgemm, the ceiling of the Gemm-bound steps: a square
// 4096 product and the two AMP shapes at D = 1000 (forward X S: NT x D x D, back X^T Z:
// D x D x NT).
func BenchmarkCublasDgemm(b *testing.B) {
	g := gpu(b)
	const D = 1000
	nt := 2 * D * D / 4
	for _, s := range []struct {
		name    string
		transA  bool
		m, n, k int
	}{
		{"square4096", false, 4096, 4096, 4096},
		{"forward_NTxDxD_D1000", false, nt, D, D},
		{"back_DxDxNT_D1000", true, D, D, nt},
	} {
		b.Run(s.name, func(b *testing.B) {
			bufs := benchAlloc(b, g, s.m*s.k, s.k*s.n, s.m*s.n)
			defer device.FreeAll(g, bufs...)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := g.Gemm(s.transA, false, s.m, s.n, s.k, 1, bufs[0], bufs[1], 0, bufs[2]); err != nil {
					b.Fatal(err)
				}
			}
			flops := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkForwardBack measures the two contractions of an AMP iteration at D = 1000: the
// forward X S X^T (Gemm then TokenDots) and the back-projection X^T C X (TokenMix then Gemm).
// It reports the GFLOP/s of the Gemm part and the fraction of the time spent outside Gemm.
func BenchmarkForwardBack(b *testing.B) {
	g := gpu(b)
	const D, T = 1000, 2
	N := D * D / 4
	bufs := benchAlloc(b, g, N*T*D, N*T*D, D*D, N*T*T, N*T*T, D*D)
	defer device.FreeAll(g, bufs...)
	x, xs, s, h, c, back := bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5]
	var gemmSec, otherSec float64
	timed := func(acc *float64, f func() error) {
		sec, err := g.Time(f)
		if err != nil {
			b.Fatal(err)
		}
		*acc += sec
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		timed(&gemmSec, func() error { return g.Gemm(false, false, N*T, D, D, 1, x, s, 0, xs) })
		timed(&otherSec, func() error { return g.TokenDots(h, xs, x, N, T, D) })
		timed(&otherSec, func() error { return g.TokenMix(xs, c, x, N, T, D) })
		timed(&gemmSec, func() error { return g.Gemm(true, false, D, D, N*T, 1, x, xs, 0, back) })
	}
	flops := 4 * float64(N*T) * float64(D) * float64(D) * float64(b.N)
	b.ReportMetric(flops/gemmSec/1e9, "GFLOP/s(gemm)")
	b.ReportMetric(otherSec/(gemmSec+otherSec), "frac_outside_gemm")
	b.ReportMetric((gemmSec+otherSec)/float64(b.N), "s/iter")
}

// BenchmarkBackProjection times GAMP-RIE's back-projection alpha sum_mu X_mu^T C_mu X_mu at
// D = 1000 and 2000 (alpha = 0.25, T = 2) both ways, back to back in each iteration: TokenMix
// then Gemm (2 N T D^2 flops of product), and the QuadFormSummer (TokenMix, then Dsyrkx on one
// triangle: half of them). It reports each one's seconds and their ratio.
func BenchmarkBackProjection(b *testing.B) {
	g := gpu(b)
	q := g.Capabilities().QuadFormSummer
	for _, D := range []int{1000, 2000} {
		b.Run(fmt.Sprintf("D%d", D), func(b *testing.B) {
			const T = 2
			N := D * D / 4
			bufs := benchAlloc(b, g, N*T*D, N*T*D, N*T*T, D*D)
			defer device.FreeAll(g, bufs...)
			x, z, c, back := bufs[0], bufs[1], bufs[2], bufs[3]
			var gemm, syrkx float64
			for b.Loop() {
				sec, err := g.Time(func() error {
					if err := g.TokenMix(z, c, x, N, T, D); err != nil {
						return err
					}
					return g.Gemm(true, false, D, D, N*T, 1, x, z, 0, back)
				})
				if err != nil {
					b.Fatal(err)
				}
				gemm += sec
				if sec, err = g.Time(func() error { return q.QuadFormSum(back, c, x, z, N, T, D, 1) }); err != nil {
					b.Fatal(err)
				}
				syrkx += sec
			}
			n := float64(b.N)
			b.ReportMetric(gemm/n, "s-tokenmix-gemm")
			b.ReportMetric(syrkx/n, "s-quadformsum")
			b.ReportMetric(syrkx/gemm, "quadformsum/gemm")
		})
	}
}

// ampIterations generates the data at D and runs maxIter GAMP-RIE iterations, returning the
// seconds per iteration after the first (the first when there is one) and the first's.
func ampIterations(b *testing.B, g *Device, p aim.Params, maxIter int) (perIter, first float64) {
	b.Helper()
	data, err := aim.Generate(g, p)
	if err != nil {
		b.Fatal(err)
	}
	defer data.Free(g)
	o := amp.DefaultOptions()
	o.MaxIter = maxIter
	o.Tol = 1e-300
	res, err := amp.Run(g, data, o)
	if err != nil {
		b.Fatal(err)
	}
	tr := res.Trace
	if len(tr) == 0 {
		b.Fatal("no iterations")
	}
	first = tr[0].Seconds
	if len(tr) == 1 {
		return first, first
	}
	return (tr[len(tr)-1].Seconds - tr[0].Seconds) / float64(len(tr)-1), first
}

// needBytes returns the peak device memory of generating the data at p and running AMP on it,
// with the backend's scratch (two D x D matrices and the Dsyevd workspace) and a margin.
func needBytes(p aim.Params) uint64 {
	D, N, T := uint64(p.D), uint64(p.N()), uint64(p.T())
	kept := 8 * (D*D + N*T*D + N*T*T) // S, X, Y after Generate
	run := kept + amp.Bytes(p, p.N())
	peak := max(p.Bytes(p.N()), run)
	return peak + 8*(4*D*D+8*D) + 256<<20
}

// BenchmarkAMPIteration times GAMP-RIE iterations (engine/amp) at D = 1000 and 2000.
func BenchmarkAMPIteration(b *testing.B) {
	g := gpu(b)
	for _, D := range []int{1000, 2000} {
		b.Run(fmt.Sprintf("D%d", D), func(b *testing.B) {
			p := softmaxParams(D, 0.25, 5)
			if need, free := needBytes(p), g.Info().FreeBytes; need > free {
				b.Skipf("D = %d needs %s, %s free", D, device.Bytes(need), device.Bytes(free))
			}
			var per, first float64
			for i := 0; i < b.N; i++ {
				pi, fi := ampIterations(b, g, p, 3)
				per += pi
				first += fi
			}
			b.ReportMetric(per/float64(b.N), "s/iter")
			b.ReportMetric(first/float64(b.N), "s/first_iter")
		})
	}
}

// BenchmarkAMPStreamedPrefetch is bench.StreamedPrefetch on the GPU at D = 2000 (alpha = 0.25,
// T = 2, chunks of 4096 samples, the automatic chunk): a streamed iteration with each next
// chunk drawn on the second stream beside the products, against one that draws them in turn.
func BenchmarkAMPStreamedPrefetch(b *testing.B) {
	g := gpu(b)
	p := softmaxParams(2000, 0.25, 5)
	if need := amp.StreamedBytes(p, p.N(), 4096) + p.StreamedBytes(p.N(), 4096); need > g.Info().FreeBytes {
		b.Skipf("needs %s, %s free", device.Bytes(need), device.Bytes(g.Info().FreeBytes))
	}
	bench.StreamedPrefetch(b, g, p, 4096, 2)
}

// BenchmarkLargestD finds the largest D at alpha = 0.25, T = 2 whose data and AMP run fit in the
// free GPU memory (aim.Params.Bytes, amp.Bytes and the backend's scratch), reports it, and
// times two iterations there.
func BenchmarkLargestD(b *testing.B) {
	g := gpu(b)
	free := g.Info().FreeBytes
	budget := free - free/50 // 2% for cuBLAS, cuSOLVER and the allocator
	lo, hi := 2, 2
	for needBytes(softmaxParams(hi, 0.25, 1)) <= budget {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if needBytes(softmaxParams(mid, 0.25, 1)) <= budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	p := softmaxParams(lo, 0.25, 1)
	b.Logf("largest D = %d: N = %d, needs %s of %s free", lo, p.N(), device.Bytes(needBytes(p)), device.Bytes(free))
	var per float64
	for i := 0; i < b.N; i++ {
		pi, _ := ampIterations(b, g, p, 2)
		per += pi
	}
	b.ReportMetric(float64(lo), "D")
	b.ReportMetric(per/float64(b.N), "s/iter")
}

// BenchmarkGDStep times one Adam step of the softmax student on the GPU at alpha-bar = 1
// (alpha = 0.25, T = 2, rho = 0.5), as bench.BenchmarkGDStep does on the CPU.
func BenchmarkGDStep(b *testing.B) {
	g := gpu(b)
	for _, D := range []int{200, 400, 1000} {
		b.Run(fmt.Sprintf("D%d", D), func(b *testing.B) {
			p := softmaxParams(D, 0.25, 1)
			data, err := aim.Generate(g, p)
			if err != nil {
				b.Fatal(err)
			}
			defer data.Free(g)
			o := gd.DefaultOptions()
			o.Steps = 5
			var res gd.Result
			for b.Loop() {
				if res, err = gd.Run(g, data, o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.Seconds/float64(o.Steps+1), "s/step")
		})
	}
}

// BenchmarkGDRestarts is bench.GDRestarts on the GPU at alpha-bar = 1 (alpha = 0.25, T = 2,
// rho = 0.5, stored tokens): averaged GD's 8 restarts one at a time and all at once.
func BenchmarkGDRestarts(b *testing.B) {
	g := gpu(b)
	for _, D := range []int{100, 200, 500} {
		b.Run(fmt.Sprintf("D%d", D), func(b *testing.B) {
			data, err := aim.Generate(g, softmaxParams(D, 0.25, 1))
			if err != nil {
				b.Fatal(err)
			}
			defer data.Free(g)
			bench.GDRestarts(b, g, data)
		})
	}
}

// BenchmarkEighSym times the eigendecomposition of a random symmetric D x D matrix with each
// of cuSOLVER's eigensolvers (syevd, EighSym's, and syevj) and with the host's (download, the
// cpu backend's dsyevd on all cores, upload), at D = 500, 1000 and 2000: the candidates for
// the D^3 part of a GAMP-RIE iteration. It reports each one's largest eigenvalue difference
// from the cpu's, over the spectral scale max |lambda|.
func BenchmarkEighSym(b *testing.B) {
	g := gpu(b)
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(3, 4))
	for _, D := range []int{500, 1000, 2000} {
		a := randSym(r, D)
		ab, vb, ob := up(b, g, a), mustAlloc(b, g, D), mustAlloc(b, g, D*D)
		ac, vc, oc := up(b, c, a), mustAlloc(b, c, D), mustAlloc(b, c, D*D)
		if err := c.EighSym(vc, oc, ac, D); err != nil {
			b.Fatal(err)
		}
		want := down(b, c, vc)
		diff := func(got []float64) float64 {
			var d, s float64
			for i := range got {
				d, s = math.Max(d, math.Abs(got[i]-want[i])), math.Max(s, math.Abs(want[i]))
			}
			return d / s
		}
		for _, m := range []eighMethod{eighSyevd, eighSyevj} {
			b.Run(fmt.Sprintf("D%d/%v", D, m), func(b *testing.B) {
				vr, or, ar := mustBackend(b, g, vb, D), mustBackend(b, g, ob, D*D), mustBackend(b, g, ab, D*D)
				for b.Loop() {
					if err := g.b.eigh(m, vr, or, ar, D); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(diff(down(b, g, vb)), "max-dlambda/scale")
			})
		}
		b.Run(fmt.Sprintf("D%d/host", D), func(b *testing.B) {
			host, vh := make([]float64, D*D), make([]float64, D)
			for b.Loop() {
				if err := device.Seq(
					func() error { return g.Download(host, ab) },
					func() error { return c.Upload(ac, host) },
					func() error { return c.EighSym(vc, oc, ac, D) },
					func() error { return c.Download(host, oc) },
					func() error { return g.Upload(ob, host) },
					func() error { return c.Download(vh, vc) },
					func() error { return g.Upload(vb, vh) },
				); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(diff(down(b, g, vb)), "max-dlambda/scale")
		})
		device.FreeAll(g, ab, vb, ob)
		device.FreeAll(c, ac, vc, oc)
	}
}

// mustAlloc allocates n values on dev or fails the benchmark.
func mustAlloc(b *testing.B, dev device.Device, n int) device.Buffer {
	x, err := dev.Alloc(n)
	if err != nil {
		b.Fatal(err)
	}
	return x
}

// mustBackend unwraps a buffer of the GPU's front for its backend.
func mustBackend(b *testing.B, g *Device, x device.Buffer, n int) device.Buffer {
	raw, err := g.BackendBuffer("EighSym", "buffer", x, n)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}
