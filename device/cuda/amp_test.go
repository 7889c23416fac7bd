package cuda

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/bench"
	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
)

// softmaxParams are the AIM parameters of the whole-run tests and benchmarks.
func softmaxParams(D int, alpha float64, seed uint64) aim.Params {
	return aim.Params{D: D, Alpha: alpha, Rho: 0.5, Seed: seed,
		Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}}
}

// TestAMPTrajectoryCPUvsGPU runs GAMP-RIE at D = 200 (alpha = 0.25, T = 2, softmax; D = 60 on
// the cpu stand-in) with the same seed on the cpu backend (stored tokens) and on the GPU, its
// tokens stored and then streamed in chunks of about N/3 samples (each next chunk drawn on the
// second stream while the current one is used: GaussianFillAsync): the data are the same
// (Philox), and the chunks change only the order of the back-projection's sum, so the
// per-iteration errors ||S-hat - S||^2/D must agree to 1e-8 (relative) over the first 10
// iterations; the largest difference is logged.
func TestAMPTrajectoryCPUvsGPU(t *testing.T) { onTargets(t, testAMPTrajectoryCPUvsGPU) }

func testAMPTrajectoryCPUvsGPU(t *testing.T, g target) {
	c := cpu.New(0)
	D := 200
	if !g.onGPU() {
		D = 60
	}
	p := softmaxParams(D, 0.25, 2024)
	o := amp.DefaultOptions()
	o.MaxIter = 10
	o.Tol = 1e-300 // run all 10 iterations

	rc, yc, trc := runAMP(t, c, p, o, 0)
	for _, chunk := range []int{0, p.N()/3 + 1} {
		t.Logf("GPU tokens in chunks of %d samples (0: stored)", chunk)
		rg, yg, trg := runAMP(t, g, p, o, chunk)
		t.Logf("data: Tr S relative difference %.3g, outputs Y relative error %.3g", relScalar(trg, trc), relErr(yg, yc))
		if e := relErr(yg, yc); e > tol {
			t.Errorf("teacher outputs differ: relative error %.3g", e)
		}
		compareTrajectories(t, rc, rg, 10, 1e-8)
	}
}

// TestAMPPrecisionCPUvsGPU runs GAMP-RIE at each reduced precision (fp32, tf32, bf16x9) on the
// GPU and on the cpu's emulation of it, D = 200 (60 on the cpu stand-in), alpha = 0.1 (below
// the transition, where the iteration contracts), the same seed: the two compute the same
// rounded products summed in another order, a perturbation of the size of fp32's, so the
// per-iteration errors must agree to 2e-6 (relative) over 10 iterations: about 6 times the
// largest difference between fp32 and fp64 at D = 200, alpha = 0.1 on the CPU (3.5e-7, after
// up to 100 iterations), where tf32 and fp64 differ by 1e-4 (docs/validation/precision.md).
func TestAMPPrecisionCPUvsGPU(t *testing.T) { onTargets(t, testAMPPrecisionCPUvsGPU) }

func testAMPPrecisionCPUvsGPU(t *testing.T, g target) {
	c := cpu.New(0)
	D := 200
	if !g.onGPU() {
		D = 60
	}
	p := softmaxParams(D, 0.1, 2025)
	for _, prec := range []device.Precision{device.FP32, device.TF32, device.BF16x9} {
		o := amp.DefaultOptions()
		o.MaxIter, o.Tol, o.Precision = 10, 1e-300, prec
		t.Logf("precision %v", prec)
		rc, _, _ := runAMP(t, c, p, o, 0)
		rg, _, _ := runAMP(t, g, p, o, 0)
		compareTrajectories(t, rc, rg, 10, 2e-6)
	}
}

// runAMP draws the data of p on dev, its tokens stored (chunk 0) or streamed in chunks of chunk
// samples, and runs GAMP-RIE with o: the result, the teacher's outputs Y (downloaded) and Tr S.
func runAMP(t *testing.T, dev device.Device, p aim.Params, o amp.Options, chunk int) (amp.Result, []float64, float64) {
	t.Helper()
	data := bench.Data(t, dev, p, chunk)
	defer data.Free(dev)
	y := down(t, dev, data.Y)
	res, err := amp.Run(dev, data, o)
	if err != nil {
		t.Fatalf("%s %v: %v", dev.Info().Name, o.Precision, err)
	}
	return res, y, data.TrS
}

// compareTrajectories fails the test unless the first iters iterations of the CPU's and the
// GPU's runs have errors ||S-hat - S||^2/D within tol of each other (relative), and logs every
// iteration and the largest difference.
func compareTrajectories(t *testing.T, rc, rg amp.Result, iters int, tol float64) {
	t.Helper()
	if len(rc.Trace) < iters || len(rg.Trace) != len(rc.Trace) {
		t.Fatalf("trajectories of %d (cpu) and %d (cuda) iterations, want %d each", len(rc.Trace), len(rg.Trace), iters)
	}
	var worst float64
	at := 0
	for i := 0; i < iters; i++ {
		ec, eg := rc.Trace[i].Error, rg.Trace[i].Error
		d := relScalar(eg, ec)
		t.Logf("iteration %2d: error cpu %.15g cuda %.15g  relative difference %.3g  (delta cpu %.6g cuda %.6g)",
			i+1, ec, eg, d, rc.Trace[i].Delta, rg.Trace[i].Delta)
		if d > worst || math.IsNaN(d) {
			worst, at = d, i+1
		}
		if !(d < tol) {
			t.Errorf("iteration %d: error cpu %.15g, cuda %.15g: relative difference %.3g >= %.0e", i+1, ec, eg, d, tol)
		}
	}
	t.Logf("%s: max relative difference of the error over %d iterations %.3g (iteration %d); cpu %.2f s, cuda %.2f s",
		t.Name(), iters, worst, at, rc.Seconds, rg.Seconds)
}
