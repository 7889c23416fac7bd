package amp

import (
	"math"
	"runtime"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
)

// TestAMPGonumVsNative runs whole GAMP-RIE runs on the gonum path and on the native library
// (OpenBLAS) from the same seed: the same number of iterations, and the error of every
// iteration, the final one included, equal to 1e-10 relative. The native path differs in every
// dense step (dgemm, the dsyrk back-projection and SpectralCompose, dsyevd), so this checks
// that the fast path computes the same algorithm, not just the same kernels.
func TestAMPGonumVsNative(t *testing.T) {
	g, err := cpu.Open(cpu.Options{BLAS: cpu.GonumBLAS})
	if err != nil {
		t.Fatal(err)
	}
	n, err := cpu.Open(cpu.Options{BLAS: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if !n.BLAS().Native {
		t.Skipf("no OpenBLAS or MKL on this machine (%s): nothing to compare gonum with", n.BLAS().Note)
	}
	for _, c := range []struct {
		name  string
		p     aim.Params
		paper bool
	}{
		{"softmax T=2", aim.Params{D: 80, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 3}, false},
		{"softmax T=3", aim.Params{D: 60, Alpha: 0.04, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 3, Beta: 1}, Seed: 4}, false},
		{"softmax T=2 paper start", aim.Params{D: 70, Alpha: 0.12, Rho: 0.3, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 2}, Seed: 5}, true},
		{"hardmax", aim.Params{D: 60, Alpha: 0.3, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindHardmax, T: 2}, Seed: 6}, false},
	} {
		o := DefaultOptions()
		o.PaperInit = c.paper
		var res [2]Result
		for i, dev := range []*cpu.Device{g, n} {
			data, err := aim.Generate(dev, c.p)
			if err != nil {
				t.Fatal(err)
			}
			res[i], err = Run(dev, data, o)
			data.Free(dev)
			if err != nil {
				t.Fatalf("%s on %s: %v", c.name, dev.Info().Description, err)
			}
		}
		if res[0].Iterations != res[1].Iterations || res[0].Converged != res[1].Converged {
			t.Errorf("%s: gonum %d iterations (converged %v), native %d (converged %v)", c.name,
				res[0].Iterations, res[0].Converged, res[1].Iterations, res[1].Converged)
			continue
		}
		var worst float64
		for k := range res[0].Trace {
			a, b := res[0].Trace[k], res[1].Trace[k]
			worst = math.Max(worst, math.Abs(a.Error-b.Error)/math.Abs(a.Error))
			worst = math.Max(worst, math.Abs(a.Delta-b.Delta)/math.Abs(a.Delta))
		}
		if !(worst < 1e-10) {
			t.Errorf("%s: errors of gonum and native differ by %.3g relative (final %.15g vs %.15g)", c.name, worst, res[0].Error, res[1].Error)
		}
		t.Logf("%s: %d iterations, final error %.12g (gonum) %.12g (native), worst relative difference %.2g",
			c.name, res[0].Iterations, res[0].Error, res[1].Error, worst)
	}
}

// TestAMPIterationGarbage: the heap allocation of one GAMP-RIE iteration on the CPU device,
// measured between runs of 3 and 9 iterations at N = 21600, D = 60. On the native path it is a
// few kilobytes whatever N (the buffers of the loop are reused; under 32 KiB asserted). On the
// gonum path gonum's parallel Dgemm allocates a small job record per block of 64 rows, about 7
// bytes per sample: under 8 N bytes asserted, so no buffer of the size of the data or of D x D
// is allocated inside the loop on either path.
func TestAMPIterationGarbage(t *testing.T) {
	p := aim.Params{D: 60, Alpha: 6, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 9}
	for _, choice := range []string{cpu.GonumBLAS, "auto"} {
		dev, err := cpu.Open(cpu.Options{BLAS: choice})
		if err != nil {
			t.Fatal(err)
		}
		data, err := aim.Generate(dev, p)
		if err != nil {
			t.Fatal(err)
		}
		alloc := func(iters int) uint64 {
			o := DefaultOptions()
			o.MaxIter, o.Tol = iters, 1e-300
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, err := Run(dev, data, o); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			return after.TotalAlloc - before.TotalAlloc
		}
		alloc(2) // warm the device's scratch
		a3, a9 := alloc(3), alloc(9)
		per := (float64(a9) - float64(a3)) / 6
		limit := 8 * float64(p.N())
		if dev.BLAS().Native {
			limit = 32 << 10
		}
		if !(per < limit) {
			t.Errorf("%s: %.0f bytes allocated per iteration, want under %.0f", dev.Info().Description, per, limit)
		}
		t.Logf("%s: %.0f bytes per iteration (N = %d, D = %d)", dev.Info().Description, per, p.N(), p.D)
		data.Free(dev)
	}
}
