package amp

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
)

// TestERMHostProxLinear runs GAMP for ERM on the linear channel twice on the same data: with
// the closed-form channel step on the device (g = (y - omega)/(V + 1/2), A = 2 alpha/(V + 1/2))
// and with the host's proximal map of channel.SquareLoss, the softmax's step (Newton's method
// in unit coordinates, A from the Jacobian's trace). The two trajectories agree iteration by
// iteration to rounding.
func TestERMHostProxLinear(t *testing.T) {
	dev := cpu.New(0)
	p := aim.Params{D: 30, Alpha: 0.6, Rho: 0.5, Seed: 3, Channel: channel.Spec{Kind: channel.KindLinear, T: 1, Noise: 0.25}}
	data, err := aim.Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free(dev)
	o := DefaultOptions()
	o.ERM, o.WeightDecay, o.MaxIter, o.Tol = true, 0.1, 40, 1e-14
	closed, err := Run(dev, data, o)
	if err != nil {
		t.Fatal(err)
	}
	o.hostProx = true
	host, err := Run(dev, data, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(closed.Trace) != len(host.Trace) {
		t.Fatalf("%d iterations closed-form, %d through the host's proximal map", len(closed.Trace), len(host.Trace))
	}
	worst := 0.0
	for i := range closed.Trace {
		a, b := closed.Trace[i], host.Trace[i]
		worst = math.Max(worst, math.Abs(a.Error-b.Error)+math.Abs(a.Delta-b.Delta)/a.Delta)
	}
	t.Logf("%d iterations, final error %.12f; largest difference %.1e", len(closed.Trace), closed.Error, worst)
	if worst > 1e-10 {
		t.Errorf("the host's proximal map departs from the closed form by %.1e", worst)
	}
}
