package amp

import (
	"math"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
)

// TestAMPPrecision runs GAMP-RIE at D = 60 (softmax, T = 2, alpha = 0.15, 12 iterations) from
// one seed at every precision and compares the trajectory with FP64's. The products' relative
// error is about 2^-22 at FP32 and BF16x9 and 2^-12 at TF32 (package cpu's tests); over these
// first iterations, where the iteration contracts, the error of S-hat differs from FP64's by
// a few times that relative to the error itself: measured 3e-7 (FP32, BF16x9) and 5e-4 (TF32)
// for this seed, checked against 1e-5 and 5e-3. (Runs that end in the damped oscillation of
// a finite-D softmax run, 100 iterations without converging, amplify the differences further:
// docs/validation/precision.md.) The differences are printed in the test log.
func TestAMPPrecision(t *testing.T) {
	dev := cpu.New(2)
	p := softmaxParams(60, 2, 0.15, 3)
	o := DefaultOptions()
	o.MaxIter, o.Tol = 12, 1e-12
	runAt := func(pr device.Precision) Result {
		oo := o
		oo.Precision = pr
		return runOnce(t, dev, p, oo)
	}
	ref := runAt(device.FP64)
	for _, c := range []struct {
		p   device.Precision
		tol float64
	}{{device.FP32, 1e-5}, {device.TF32, 5e-3}, {device.BF16x9, 1e-5}} {
		res := runAt(c.p)
		var worst float64 // the largest relative difference of the error along the trajectory
		for i := range min(len(res.Trace), len(ref.Trace)) {
			worst = max(worst, math.Abs(res.Trace[i].Error-ref.Trace[i].Error)/ref.Trace[i].Error)
		}
		final := math.Abs(res.Error-ref.Error) / ref.Error
		t.Logf("D = 60, %d iterations: %v final error %.8f, fp64 %.8f: relative difference %.3g (largest along the run %.3g)",
			res.Iterations, c.p, res.Error, ref.Error, final, worst)
		if res.Iterations != ref.Iterations || !(worst < c.tol) {
			t.Errorf("%v: %d iterations (fp64 %d), relative difference of the error %.3g, want < %g", c.p, res.Iterations, ref.Iterations, worst, c.tol)
		}
		if c.p != device.FP64 && res.Error == ref.Error {
			t.Errorf("%v: the same final error as fp64 to the bit: the precision was not applied", c.p)
		}
	}
}

// noPrecision is a device without the PrecisionGemmer capability: the path of a device that
// computes FP64 only.
type noPrecision struct{ device.Device }

func (d noPrecision) Capabilities() device.Caps {
	c := d.Device.Capabilities()
	c.PrecisionGemmer = nil
	return c
}

// TestAMPPrecisionFP64: at FP64 the run is bit for bit the run of a device without the
// capability, and a device without it refuses another precision before computing anything.
func TestAMPPrecisionFP64(t *testing.T) {
	dev := cpu.New(2)
	p := softmaxParams(60, 2, 0.15, 5)
	o := DefaultOptions()
	o.MaxIter = 5
	a, b := runOnce(t, dev, p, o), runOnce(t, noPrecision{dev}, p, o)
	for i := range a.Trace {
		if a.Trace[i].Error != b.Trace[i].Error || a.Trace[i].Step != b.Trace[i].Step {
			t.Fatalf("iteration %d differs: %+v vs %+v", i+1, a.Trace[i], b.Trace[i])
		}
	}
	o.Precision = device.TF32
	data, err := aim.Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free(dev)
	if _, err := Run(noPrecision{dev}, data, o); err == nil || !strings.Contains(err.Error(), "precision tf32 is not supported on this device yet") {
		t.Errorf("tf32 on a device without the capability: %v", err)
	}
}
