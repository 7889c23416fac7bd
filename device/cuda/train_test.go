package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// TestGPUTrainer compares the training operations with the CPU backend on the same inputs:
// SoftmaxLossGrad's gamma and loss to 1e-12, AdamStep bit for bit over three steps.
func TestGPUTrainer(t *testing.T) { onTargets(t, testGPUTrainer) }

func testGPUTrainer(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(31, 32))
	m := &maxErr{t: t, op: "SoftmaxLossGrad"}
	for _, n := range []int{1, 300, 1000} {
		for _, T := range []int{2, 3, 5} {
			ch := channel.Spec{Kind: channel.KindSoftmax, T: T, Beta: 1.3}
			h, y := randVec(r, n*T*T), randVec(r, n*T*T)
			hp, yp := both(t, c, g, h), both(t, c, g, y)
			gam := both(t, c, g, make([]float64, n*T*T))
			if err := c.ChannelOutput(ch, hp.c, hp.c, n); err != nil {
				t.Fatal(err)
			}
			if err := g.ChannelOutput(ch, hp.g, hp.g, n); err != nil {
				t.Fatal(err)
			}
			lc, err := c.Capabilities().Trainer.SoftmaxLossGrad(ch, gam.c, hp.c, yp.c, n, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			lg, err := g.Capabilities().Trainer.SoftmaxLossGrad(ch, gam.g, hp.g, yp.g, n, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			m.check(relScalar(lg, lc), tol, "loss n=%d t=%d", n, T)
			m.compare(c, g, gam, "gamma n=%d t=%d", n, T)
			for _, p := range []pair{hp, yp, gam} {
				p.free(c, g)
			}
		}
	}
	m.report()

	const n = 10000
	w, mo, vo, gr := both(t, c, g, randVec(r, n)), both(t, c, g, make([]float64, n)), both(t, c, g, make([]float64, n)), both(t, c, g, make([]float64, n))
	for step := 1; step <= 3; step++ {
		grad := randVec(r, n)
		for _, dev := range []device.Device{c, g} {
			b := gr.c
			if dev == device.Device(g) {
				b = gr.g
			}
			if err := dev.Upload(b, grad); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Capabilities().Trainer.AdamStep(w.c, gr.c, mo.c, vo.c, 0.1, 0.9, 0.999, 1e-8, step); err != nil {
			t.Fatal(err)
		}
		if err := g.Capabilities().Trainer.AdamStep(w.g, gr.g, mo.g, vo.g, 0.1, 0.9, 0.999, 1e-8, step); err != nil {
			t.Fatal(err)
		}
	}
	wc, wg := down(t, c, w.c), down(t, g, w.g)
	for i := range wc {
		if wc[i] != wg[i] {
			t.Fatalf("AdamStep: w[%d] = %v on the GPU, %v on the CPU (want identical bits)", i, wg[i], wc[i])
		}
	}
}
