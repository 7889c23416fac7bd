package cuda

import (
	"fmt"
	"testing"
	"time"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// deepRun runs DeepSample at L layers on dev over the tasks in (channel.DeepTasks) and
// returns the results.
func deepRun(t testing.TB, dev device.Device, in []float64, L, draws int, c, beta float64) []float64 {
	return deepRunWith(t, dev, dev.Capabilities().DeepSampler.DeepSample, in, L, draws, c, beta)
}

// deepRunVariant is deepRun on the target g with the sampler's variant k.
func deepRunVariant(t testing.TB, g target, k deepKernel, in []float64, L, draws int, c, beta float64) []float64 {
	sample := func(out, in device.Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error {
		return g.deepSample(k, out, in, n, L, draws, c, beta, seed, offset, stride)
	}
	return deepRunWith(t, g, sample, in, L, draws, c, beta)
}

// deepRunWith is deepRun with the sampler sample (a device.DeepSampler's DeepSample).
func deepRunWith(t testing.TB, dev device.Device, sample func(out, in device.Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error,
	in []float64, L, draws int, c, beta float64) []float64 {
	t.Helper()
	n := len(in) / channel.DeepIn(L)
	ib := up(t, dev, in)
	ob := up(t, dev, make([]float64, n*channel.DeepOut(L)))
	defer dev.Free(ib)
	defer dev.Free(ob)
	const seed, offset, stride = 7, 1<<60 + 1<<40, 1 << 24
	if err := sample(ob, ib, n, L, draws, c, beta, seed, offset, stride); err != nil {
		t.Fatal(err)
	}
	return down(t, dev, ob)
}

// TestGPUDeepSample compares both variants of the kernel, deep_sample (one task per thread)
// and deep_sample_warp (one per warp, which DeepSample runs), with their CPU twin on the same
// tasks (broad, sharp and correlated, channel.DeepTasks) at L = 2, 3 and 4: the statuses equal,
// and each task's values within 1e-9 relative (the GPU's exp and log differ from Go's in the
// last bits, and deep_sample_warp sums in another order).
func TestGPUDeepSample(t *testing.T) { onTargets(t, testGPUDeepSample) }

func testGPUDeepSample(t *testing.T, g target) {
	c := cpu.New(0)
	for _, k := range []deepKernel{deepPerThread, deepPerWarp} {
		t.Run(k.name, func(t *testing.T) { testDeepVariant(t, g, c, k) })
	}
}

func testDeepVariant(t *testing.T, g target, c device.Device, k deepKernel) {
	m := &maxErr{t: t, op: k.name}
	sizes := []int{1, 37, 600}
	if !g.onGPU() {
		sizes = sizes[:2]
	}
	for L := channel.DeepMinL; L <= channel.DeepMaxL; L++ {
		nout, st := channel.DeepOut(L), channel.DeepOutStatus(L)
		for _, cb := range [][2]float64{{1, 1}, {0.5, 2}} {
			for _, n := range sizes {
				in := channel.DeepTasks(uint64(n), n, L, cb[0], cb[1])
				want, got := deepRun(t, c, in, L, 500, cb[0], cb[1]), deepRunVariant(t, g, k, in, L, 500, cb[0], cb[1])
				for i := 0; i < n; i++ {
					w, h := want[i*nout:(i+1)*nout], got[i*nout:(i+1)*nout]
					if w[st] != h[st] {
						t.Fatalf("L = %d, c = %g, beta = %g, task %d: status %v on the GPU, %v on the CPU", L, cb[0], cb[1], i, h[st], w[st])
					}
					if w[st] != channel.DeepOK {
						continue
					}
					m.check(relErr(h, w), 1e-9, "L = %d, c = %g, beta = %g, n = %d, task %d", L, cb[0], cb[1], n, i)
				}
			}
		}
	}
	m.report()
}

// BenchmarkDeepSample times one SE iteration's channel integrals at L = 3 and 4 (4000
// samples, two halves of 2000 draws: 8000 tasks) on the GPU, with each variant of the kernel,
// and on the CPU backend of the host, back to back, and reports the times and the ratios
// cpu/gpu (the CPU over the variant) and thread/warp (deep_sample over deep_sample_warp).
func BenchmarkDeepSample(b *testing.B) {
	g := gpu(b)
	c := cpu.New(0)
	const n, draws = 8000, 2000
	for _, L := range []int{3, 4} {
		b.Run(fmt.Sprintf("L%d", L), func(b *testing.B) {
			in := channel.DeepTasks(1, n, L, 1, 1)
			var tt, tw, tc time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				deepRunVariant(b, gpuTarget{g}, deepPerThread, in, L, draws, 1, 1)
				tt += time.Since(t0)
				t0 = time.Now()
				deepRunVariant(b, gpuTarget{g}, deepPerWarp, in, L, draws, 1, 1)
				tw += time.Since(t0)
				t0 = time.Now()
				deepRun(b, c, in, L, draws, 1, 1)
				tc += time.Since(t0)
			}
			b.ReportMetric(tt.Seconds()/float64(b.N), "s/thread")
			b.ReportMetric(tw.Seconds()/float64(b.N), "s/warp")
			b.ReportMetric(tc.Seconds()/float64(b.N), "s/cpu")
			b.ReportMetric(tc.Seconds()/tw.Seconds(), "cpu/warp")
			b.ReportMetric(tt.Seconds()/tw.Seconds(), "thread/warp")
			b.ReportMetric(float64(n)*draws*float64(b.N)/tw.Seconds(), "draws/s")
		})
	}
}
