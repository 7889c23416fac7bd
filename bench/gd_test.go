package bench

import (
	"fmt"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/gd"
)

// BenchmarkGDStep times one Adam step of the softmax student on the CPU at alpha-bar = 1
// (alpha = 0.25, T = 2, rho = 0.5): the forward product, the softmax loss gradient, the
// back-projection and the update.
func BenchmarkGDStep(b *testing.B) {
	dev := cpu.New(0)
	for _, D := range []int{100, 200, 400} {
		b.Run(fmt.Sprintf("D=%d", D), func(b *testing.B) {
			p := aim.Params{D: D, Alpha: 0.25, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 1}
			data, err := aim.Generate(dev, p)
			if err != nil {
				b.Fatal(err)
			}
			defer data.Free(dev)
			o := gd.DefaultOptions()
			o.Steps = 3
			var res gd.Result
			for b.Loop() {
				if res, err = gd.Run(dev, data, o); err != nil {
					b.Fatal(err)
				}
			}
			// Run makes Steps updates plus one final evaluation of the loss and gradient.
			b.ReportMetric(res.Seconds/float64(o.Steps+1), "s/step")
		})
	}
}

// BenchmarkGDRestarts is GDRestarts on the CPU at alpha-bar = 1 (alpha = 0.25, T = 2,
// rho = 0.5), with stored tokens and streamed ones (chunks of 1024 samples).
func BenchmarkGDRestarts(b *testing.B) {
	dev := cpu.New(0)
	for _, c := range []struct{ D, chunk int }{{50, 0}, {100, 0}, {200, 0}, {100, 1024}, {200, 1024}} {
		name := fmt.Sprintf("D=%d", c.D)
		if c.chunk > 0 {
			name += "/streamed"
		}
		b.Run(name, func(b *testing.B) {
			p := aim.Params{D: c.D, Alpha: 0.25, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 1}
			var data *aim.Data
			var err error
			if c.chunk > 0 {
				data, err = aim.GenerateStreamed(dev, p, c.chunk)
			} else {
				data, err = aim.Generate(dev, p)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer data.Free(dev)
			GDRestarts(b, dev, data)
		})
	}
}
