package cuda

import (
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

var _ device.DeepSampler = (*backend)(nil)

// DeepSample is device.DeepSampler: the kernel deep_sample, one task per thread
// (kernels.DeepSampleBatch is its CPU twin), each thread drawing its normals from the stream
// of device.NormalAt itself.
func (d *backend) DeepSample(out, in device.Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error {
	const op = "cuda DeepSample"
	if err := fitsInt32(op, "draws", draws); err != nil {
		return err
	}
	ob, ib := buf(out), buf(in)
	if n == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync("deep_sample", kernels.GridThreads(int64(n)), ob.ptr, ib.ptr, int64(n), int32(L), int32(draws), c, beta, seed, offset, stride)
	}))
}
