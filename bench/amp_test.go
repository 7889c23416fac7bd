package bench

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
)

// iterationFlops counts the floating-point work of one GAMP-RIE iteration: two N T x D x D
// products (X S-hat and X^T Z) of 2 N T D^2 each, and the D x D x D product of SpectralCompose.
func iterationFlops(p aim.Params) float64 {
	D, NT := float64(p.D), float64(p.N()*p.T())
	return 2*2*NT*D*D + 2*D*D*D
}

// timeIterations returns the seconds per GAMP-RIE iteration (after the first, which includes
// warm-up) on dev, with stored tokens.
func timeIterations(b *testing.B, dev device.Device, p aim.Params, iters int) float64 {
	return IterationSeconds(b, dev, p, iters, 0)
}

// BenchmarkAMPIteration times one GAMP-RIE iteration, softmax T = 2, rho = 0.5, alpha = 0.2
// (N = 0.2 D^2), on the CPU, and reports the GFLOP/s of its dense products.
func BenchmarkAMPIteration(b *testing.B) {
	dev := cpu.New(0)
	for _, D := range []int{100, 200} {
		b.Run(fmt.Sprintf("D=%d", D), func(b *testing.B) {
			p := aim.Params{D: D, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 1}
			var s float64
			for b.Loop() {
				s = timeIterations(b, dev, p, 3)
			}
			b.ReportMetric(s, "s/iter")
			b.ReportMetric(iterationFlops(p)/s/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkAMPStreamed times one GAMP-RIE iteration with streamed tokens (chunks of 1024
// samples, regenerated once per iteration) against the stored one, back to back in each
// round, at D = 200 and 400 (softmax T = 2, rho = 0.5, alpha = 0.2), and reports the median
// ratio of three rounds and the regeneration rate in normals per second.
func BenchmarkAMPStreamed(b *testing.B) {
	dev := cpu.New(0)
	for _, D := range []int{200, 400} {
		b.Run(fmt.Sprintf("D=%d", D), func(b *testing.B) {
			p := aim.Params{D: D, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 1}
			for b.Loop() {
				var ratios []float64
				var stored, streamed float64
				for round := 0; round < 3; round++ {
					stored = IterationSeconds(b, dev, p, 2, 0)
					streamed = IterationSeconds(b, dev, p, 2, 1024)
					ratios = append(ratios, streamed/stored)
				}
				slices.Sort(ratios)
				b.ReportMetric(stored, "s/iter-stored")
				b.ReportMetric(streamed, "s/iter-streamed")
				b.ReportMetric(ratios[1], "streamed/stored")
			}
			x, err := dev.Alloc(1 << 22)
			if err != nil {
				b.Fatal(err)
			}
			defer dev.Free(x)
			start := time.Now()
			for i := 0; i < 4; i++ {
				if err := dev.GaussianFill(x, 1, uint64(i)<<22, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(4*float64(1<<22)/time.Since(start).Seconds(), "normals/s")
		})
	}
}

// BenchmarkAMPStreamedPrefetch is StreamedPrefetch on the CPU, at the shapes of
// BenchmarkAMPStreamed: a streamed iteration with each next chunk's tokens drawn beside the
// products against one that draws them in turn.
func BenchmarkAMPStreamedPrefetch(b *testing.B) {
	dev := cpu.New(0)
	for _, D := range []int{200, 400} {
		b.Run(fmt.Sprintf("D=%d", D), func(b *testing.B) {
			p := aim.Params{D: D, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 1}
			StreamedPrefetch(b, dev, p, 1024, 2)
		})
	}
}

// BenchmarkAMPScaling times an iteration at D = 100, 200, 300, 400 (alpha = 0.2, T = 2) and
// reports the least-squares slope of log(seconds) against log(D): near 4 when the N T D^2
// products dominate, as they do from D of a few hundred.
func BenchmarkAMPScaling(b *testing.B) {
	dev := cpu.New(0)
	Ds := []int{100, 200, 300, 400}
	for b.Loop() {
		var sx, sy, sxx, sxy float64
		for _, D := range Ds {
			p := aim.Params{D: D, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 1}
			start := time.Now()
			s := timeIterations(b, dev, p, 2)
			b.Logf("D = %d: %.3f s/iter, %.2f GFLOP/s (%.1f s with data and warm-up)", D, s, iterationFlops(p)/s/1e9, time.Since(start).Seconds())
			x, y := math.Log(float64(D)), math.Log(s)
			sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
			b.ReportMetric(s, fmt.Sprintf("s/iter@D=%d", D))
		}
		n := float64(len(Ds))
		b.ReportMetric((n*sxy-sx*sy)/(n*sxx-sx*sx), "exponent")
	}
}

// BenchmarkAMPHardmaxT3 times one GAMP-RIE iteration with the hardmax channel at T = 3
// (rho = 0.5, alpha = 0.2: N = 4500 at D = 150), on the CPU, with the engine's default lattice
// rule (up to 1024 points of 8 shifts per sample, Tol 1e-3) and with the simulations' default
// (64 points of 8 shifts, every point: job.DefaultSimPoints), and reports the seconds per
// iteration and per sample of it: the polytope estimates of g_out dominate the dense products.
func BenchmarkAMPHardmaxT3(b *testing.B) {
	dev := cpu.New(0)
	for _, rule := range []struct {
		name string
		ch   channel.Spec
	}{
		{"rule=1024x8-tol1e-3", channel.Spec{Kind: channel.KindHardmax, T: 3}},
		{"rule=64x8", channel.Spec{Kind: channel.KindHardmax, T: 3, Points: 64, Tol: -1}},
	} {
		b.Run(rule.name, func(b *testing.B) {
			p := aim.Params{D: 150, Alpha: 0.2, Rho: 0.5, Channel: rule.ch, Seed: 1}
			var s float64
			for b.Loop() {
				s = timeIterations(b, dev, p, 1)
			}
			b.ReportMetric(s, "s/iter")
			b.ReportMetric(s/float64(p.N())*1e6, "us/sample")
		})
	}
}
