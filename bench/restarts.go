package bench

import (
	"testing"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/gd"
)

// GDRestarts times averaged GD's 8 restarts on data (4 Adam steps and the final evaluation)
// trained one at a time and all at once (gd.Options.Batch), back to back in each iteration of
// b, and reports the seconds of one step of the 8 students each way and their ratio (all at
// once over one at a time). BenchmarkGDRestarts runs it on the CPU, device/cuda's on the GPU.
func GDRestarts(b *testing.B, dev device.Device, data *aim.Data) {
	o := gd.DefaultOptions()
	o.Steps, o.Restarts = 4, 8
	var seq, bat float64
	for b.Loop() {
		for _, batch := range []int{1, 0} {
			o.Batch = batch
			res, err := gd.Run(dev, data, o)
			if err != nil {
				b.Fatal(err)
			}
			if batch == 1 {
				seq += res.Seconds
			} else {
				bat += res.Seconds
			}
		}
	}
	steps := float64(b.N * (o.Steps + 1))
	b.ReportMetric(seq/steps, "s/step-one-at-a-time")
	b.ReportMetric(bat/steps, "s/step-batched")
	b.ReportMetric(bat/seq, "batched/one-at-a-time")
}
