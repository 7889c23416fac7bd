package gd

import (
	"math"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
)

// TestGDPrecision trains one Adam student for 40 steps at D = 60 (alpha = 0.25, softmax T = 2)
// from one seed at every precision and compares the final error with FP64's. Both large
// contractions of the gradient carry the products' relative error (about 2^-22 at FP32 and
// BF16x9, 2^-12 at TF32) into every step, and 40 Adam steps do not amplify it much: the final
// errors and losses differ from FP64's by 1e-8 (FP32, BF16x9) and 2e-4 (TF32) relative
// (measured, printed in the test log), checked against 1e-6 and 3e-3.
func TestGDPrecision(t *testing.T) {
	dev := cpu.New(2)
	p := params(60, 2, 0.25, 0.5, 1, 6)
	data, err := aim.Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free(dev)
	o := DefaultOptions()
	o.Steps = 40
	runAt := func(pr device.Precision) Result {
		oo := o
		oo.Precision = pr
		res, err := Run(dev, data, oo)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ref := runAt(device.FP64)
	for _, c := range []struct {
		p   device.Precision
		tol float64
	}{{device.FP32, 1e-6}, {device.TF32, 3e-3}, {device.BF16x9, 1e-6}} {
		res := runAt(c.p)
		d := math.Abs(res.Error-ref.Error) / ref.Error
		dl := math.Abs(res.FinalLoss[0]-ref.FinalLoss[0]) / ref.FinalLoss[0]
		t.Logf("D = 60, %d Adam steps: %v final error %.8f, fp64 %.8f: relative difference %.3g (final loss %.3g)", o.Steps, c.p, res.Error, ref.Error, d, dl)
		if !(d < c.tol) || !(dl < c.tol) || res.Error == ref.Error {
			t.Errorf("%v: relative difference of the error %.3g, of the loss %.3g, want < %g and not 0", c.p, d, dl, c.tol)
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

// TestGDPrecisionFP64: at FP64 the training is bit for bit that of a device without the
// capability, and such a device refuses another precision before training.
func TestGDPrecisionFP64(t *testing.T) {
	dev := cpu.New(2)
	p := params(40, 2, 0.25, 0.5, 1, 7)
	data, err := aim.Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free(dev)
	o := DefaultOptions()
	o.Steps = 10
	a, err1 := Run(dev, data, o)
	b, err2 := Run(noPrecision{dev}, data, o)
	if err1 != nil || err2 != nil || a.Error != b.Error || a.FinalLoss[0] != b.FinalLoss[0] {
		t.Errorf("fp64: %v %v, error %v vs %v", err1, err2, a.Error, b.Error)
	}
	o.Precision = device.BF16x9
	if _, err := Run(noPrecision{dev}, data, o); err == nil || !strings.Contains(err.Error(), "precision bf16x9 is not supported on this device yet") {
		t.Errorf("bf16x9 on a device without the capability: %v", err)
	}
}
