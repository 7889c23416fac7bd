package cuda

import (
	"errors"
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
	// eigh runs EighSym with the eigensolver m; on the stand-in, the cpu's EighSym (the same
	// for every m).
	eigh(m eighMethod, vals, vecs, a device.Buffer, d int) error
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

// eigh unwraps the front's buffers (checked as EighSym checks them: lengths, no overlap) and
// runs the eigensolver m on the backend.
func (g gpuTarget) eigh(m eighMethod, vals, vecs, a device.Buffer, d int) error {
	if err := g.EighSym(vals, vecs, a, d); err != nil { // the front's checks, and syevd once
		return err
	}
	vb, err1 := g.BackendBuffer("EighSym", "vals", vals, d)
	ob, err2 := g.BackendBuffer("EighSym", "vecs", vecs, d*d)
	ab, err3 := g.BackendBuffer("EighSym", "a", a, d*d)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	return g.b.eigh(m, vb, ob, ab, d)
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

func (c cpuTarget) eigh(_ eighMethod, vals, vecs, a device.Buffer, d int) error {
	return c.EighSym(vals, vecs, a, d)
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

// TestHarnessTargets checks the stand-in's own entry points: reopen.
func TestHarnessTargets(t *testing.T) {
	c := cpuTarget{cpu.New(0)}
	if d, err := c.reopen(); err != nil || d.Info().Name != "cpu" {
		t.Errorf("reopen: %v, %v", d, err)
	}
}
