package cpu

import (
	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
)

var _ device.DeepSampler = (*backend)(nil)

// DeepSample estimates n tasks' posterior moments of the L-layer deep attention channel by
// importance sampling (device.DeepSampler): the CPU twin of the CUDA kernel deep_sample,
// channel.DeepSampleBatch, over the backend's workers, with the normals of device.FillNormals.
// Each task is computed alone, so the results do not depend on the worker count.
func (d *backend) DeepSample(out, in device.Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error {
	return channel.DeepSampleBatch(data(out), data(in), n, L, draws, c, beta, seed, offset, stride, d.workers, device.FillNormals)
}
