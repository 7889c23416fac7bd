package cuda

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// A GPU test is a function of a target, the device it checks against the cpu backend. It runs
// twice over: as the subtest "gpu" on the GPU (skipped without one, a failure with
// AIM_REQUIRE_GPU set), and, where there is no GPU, as the subtest "cpu" on the cpu backend
// standing in for it. The stand-in computes what the cpu reference computes, so its errors are
// zero; what it proves is that the harness itself (the allocations, the views, the unwrapping
// of buffers, the host-side references) runs, so that a GPU run can fail only on what the GPU
// computes. CI has no GPU: it runs every harness this way.
//
// Tests with no cpu counterpart stay GPU-only: the JIT's error log (a PTX module) and NCCL
// (a library of the GPU machine).

// target is the device under test with the entry points GPU tests use beyond device.Device.
type target interface {
	device.Device
	// gemmStridedBatched is cuBLAS's strided batched Gemm (Device.GemmStridedBatched); on the
	// stand-in, one Gemm per batch entry on views.
	gemmStridedBatched(transA, transB bool, m, n, k int, alpha float64, a device.Buffer, strideA int,
		b device.Buffer, strideB int, beta float64, c device.Buffer, strideC int, batch int) error
	// deepSample runs the variant k of the deep channel's sampler; on the stand-in, its CPU
	// twin (the same for every variant).
	deepSample(k deepKernel, out, in device.Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error
	// reopen opens a second device on the same hardware (the GPU's ordinal 0; a new cpu
	// backend).
	reopen() (device.Device, error)
	// checkInfo checks Info's description and memory figures.
	checkInfo(t *testing.T, info device.Info)
	// onGPU says whether the target is the GPU.
	onGPU() bool
}

// gpuTarget is the GPU as a target.
type gpuTarget struct{ *Device }

func (g gpuTarget) gemmStridedBatched(transA, transB bool, m, n, k int, alpha float64, a device.Buffer, strideA int,
	b device.Buffer, strideB int, beta float64, c device.Buffer, strideC int, batch int) error {
	return g.GemmStridedBatched(transA, transB, m, n, k, alpha, a, strideA, b, strideB, beta, c, strideC, batch)
}

// deepSample unwraps the front's buffers (the front's checks of a live buffer of the device
// and its length) and runs the variant k on the backend.
func (g gpuTarget) deepSample(k deepKernel, out, in device.Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error {
	ob, err := g.BackendBuffer("DeepSample", "out", out, out.Len())
	if err != nil {
		return err
	}
	ib, err := g.BackendBuffer("DeepSample", "in", in, in.Len())
	if err != nil {
		return err
	}
	return g.b.deepSample(k, ob, ib, n, L, draws, c, beta, seed, offset, stride)
}

func (g gpuTarget) reopen() (device.Device, error) { return Open(0) }

func (g gpuTarget) checkInfo(t *testing.T, info device.Info) {
	t.Helper()
	if info.Name != "cuda" || !strings.HasPrefix(info.Description, "cuda: "+g.Name()+", CC ") ||
		!strings.Contains(info.Description, "driver ") || !strings.Contains(info.Description, "cuBLAS libcublas.so.") {
		t.Errorf("Info description %q", info.Description)
	}
	if info.TotalBytes == 0 || info.FreeBytes == 0 || info.FreeBytes > info.TotalBytes {
		t.Errorf("Info memory: total %d, free %d", info.TotalBytes, info.FreeBytes)
	}
}

func (g gpuTarget) onGPU() bool { return true }

// cpuTarget is the cpu backend standing in for the GPU.
type cpuTarget struct{ *cpu.Device }

func (c cpuTarget) gemmStridedBatched(transA, transB bool, m, n, k int, alpha float64, a device.Buffer, strideA int,
	b device.Buffer, strideB int, beta float64, cc device.Buffer, strideC int, batch int) error {
	for p := 0; p < batch; p++ {
		av, err1 := device.View(a, p*strideA, m*k)
		bv, err2 := device.View(b, p*strideB, k*n)
		cv, err3 := device.View(cc, p*strideC, m*n)
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("cpu GemmStridedBatched, entry %d: %w", p, err)
		}
		if err := c.Gemm(transA, transB, m, n, k, alpha, av, bv, beta, cv); err != nil {
			return err
		}
	}
	return nil
}

func (c cpuTarget) deepSample(_ deepKernel, out, in device.Buffer, n, L, draws int, cs, beta float64, seed, offset, stride uint64) error {
	return c.Capabilities().DeepSampler.DeepSample(out, in, n, L, draws, cs, beta, seed, offset, stride)
}

func (c cpuTarget) reopen() (device.Device, error) { return cpu.New(0), nil }

func (c cpuTarget) checkInfo(t *testing.T, info device.Info) {
	t.Helper()
	if info.Name != "cpu" || info.Description == "" {
		t.Errorf("Info %+v", info)
	}
}

func (c cpuTarget) onGPU() bool { return false }

// onTargets runs test on the GPU (subtest "gpu") and, where there is none, on the cpu stand-in
// (subtest "cpu"). A GPU that is present runs the harness itself: the stand-in then skips.
func onTargets(t *testing.T, test func(t *testing.T, g target)) {
	t.Run("gpu", func(t *testing.T) { test(t, gpuTarget{gpu(t)}) })
	t.Run("cpu", func(t *testing.T) {
		if gpuPresent() {
			t.Skip("the GPU ran this harness")
		}
		test(t, cpuTarget{cpu.New(0)})
	})
}

// gpuPresent says whether the GPU tests have a GPU (without skipping or failing).
func gpuPresent() bool {
	gpuOnce.Do(openGPU)
	return gpuSkip == "" && gpuErr == nil
}

// TestHarnessTargets checks the stand-in's own entry points against the cpu backend's plain
// operations: the batched Gemm entry by entry, and the sampler's variants alike.
func TestHarnessTargets(t *testing.T) {
	c := cpuTarget{cpu.New(0)}
	const m, n, k, batch = 3, 4, 5, 3
	r := rand.New(rand.NewPCG(51, 52))
	a, b := randVec(r, batch*m*k), randVec(r, batch*n*k)
	ab, bb := up(t, c, a), up(t, c, b)
	cb, _ := c.Alloc(batch * m * n)
	defer device.FreeAll(c, ab, bb, cb)
	if err := c.gemmStridedBatched(false, true, m, n, k, 1, ab, m*k, bb, n*k, 0, cb, m*n, batch); err != nil {
		t.Fatal(err)
	}
	got := down(t, c, cb)
	for p := 0; p < batch; p++ {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var want float64
				for l := 0; l < k; l++ {
					want += a[p*m*k+i*k+l] * b[p*n*k+j*k+l]
				}
				if d := got[p*m*n+i*n+j] - want; d*d > 1e-24 {
					t.Errorf("entry %d (%d, %d): %v, want %v", p, i, j, got[p*m*n+i*n+j], want)
				}
			}
		}
	}
	if d, err := c.reopen(); err != nil || d.Info().Name != "cpu" {
		t.Errorf("reopen: %v, %v", d, err)
	}
}
