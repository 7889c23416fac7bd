package bench

import (
	"testing"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
)

// IterationSeconds returns the seconds per GAMP-RIE iteration on dev after the first (which
// includes warm-up), over iters iterations, on the data of p with its tokens stored (chunk 0)
// or streamed in chunks of chunk samples.
func IterationSeconds(b *testing.B, dev device.Device, p aim.Params, iters, chunk int) float64 {
	b.Helper()
	data := Data(b, dev, p, chunk)
	defer data.Free(dev)
	o := amp.DefaultOptions()
	o.MaxIter = iters + 1
	o.Tol = 1e-300 // run every iteration
	res, err := amp.Run(dev, data, o)
	if err != nil {
		b.Fatal(err)
	}
	tr := res.Trace
	return (tr[len(tr)-1].Seconds - tr[0].Seconds) / float64(len(tr)-1)
}

// Data draws the teacher and data of p on dev, the tokens stored (chunk 0) or streamed in
// chunks of chunk samples, failing tb on an error.
func Data(tb testing.TB, dev device.Device, p aim.Params, chunk int) *aim.Data {
	tb.Helper()
	var data *aim.Data
	var err error
	if chunk > 0 {
		data, err = aim.GenerateStreamed(dev, p, chunk)
	} else {
		data, err = aim.Generate(dev, p)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// SerialFills is dev with its Prefetcher hidden: streamed tokens are then drawn chunk by chunk
// before each chunk's products (aim.Data.EachChunk), the baseline of StreamedPrefetch.
func SerialFills(dev device.Device) device.Device { return serialFills{dev} }

type serialFills struct{ device.Device }

func (s serialFills) Capabilities() device.Caps {
	c := s.Device.Capabilities()
	c.Prefetcher = nil
	return c
}

// StreamedPrefetch times a GAMP-RIE iteration on tokens streamed in chunks of chunk samples,
// over iters iterations, with each next chunk drawn while the current one is used (the
// device's Prefetcher) and with each chunk drawn before its products (SerialFills), back to
// back in each iteration of b, and reports both and their ratio. BenchmarkAMPStreamed runs it
// on the CPU, device/cuda's BenchmarkAMPStreamedPrefetch on the GPU.
func StreamedPrefetch(b *testing.B, dev device.Device, p aim.Params, chunk, iters int) {
	var pre, ser float64
	for b.Loop() {
		pre += IterationSeconds(b, dev, p, iters, chunk)
		ser += IterationSeconds(b, SerialFills(dev), p, iters, chunk)
	}
	n := float64(b.N)
	b.ReportMetric(pre/n, "s/iter-prefetch")
	b.ReportMetric(ser/n, "s/iter-serial")
	b.ReportMetric(pre/ser, "prefetch/serial")
}
