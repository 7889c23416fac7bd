package cuda

import (
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

var _ device.DeepSampler = (*backend)(nil)

// deepKernel is a variant of the deep channel's sampler: the kernel's name and its grid over
// n tasks.
type deepKernel struct {
	name string
	grid func(n int64) uint32
}

// The two variants of the sampler (kernels/deep.cu). deepPerThread runs one task per thread,
// the rule of its CPU twin channel.DeepSampleBatch; deepPerWarp runs one task per warp, its
// draws over the 32 lanes and the lanes' sums merged in a fixed tree: the same draws and
// estimator, summed in another order. An SE iteration has 8000 tasks, 32 blocks of threads
// for deepPerThread, a quarter of an H200's 132 multiprocessors; deepPerWarp has 32 times the
// threads. DeepSample uses deepPerWarp; BenchmarkDeepSample times both.
var (
	deepPerThread = deepKernel{"deep_sample", kernels.GridThreads}
	deepPerWarp   = deepKernel{"deep_sample_warp", kernels.GridWarps}
)

// DeepSample is device.DeepSampler: the kernel deep_sample_warp, one task per warp
// (channel.DeepSampleBatch is its CPU twin), each lane drawing its normals from the stream of
// device.NormalAt itself.
func (d *backend) DeepSample(out, in device.Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error {
	return d.deepSample(deepPerWarp, out, in, n, L, draws, c, beta, seed, offset, stride)
}

// deepSample is DeepSample with the variant k.
func (d *backend) deepSample(k deepKernel, out, in device.Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error {
	const op = "cuda DeepSample"
	if err := fitsInt32(op, "draws", draws); err != nil {
		return err
	}
	ob, ib := buf(out), buf(in)
	if n == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync(k.name, k.grid(int64(n)), ob.ptr, ib.ptr, int64(n), int32(L), int32(draws), c, beta, seed, offset, stride)
	}))
}
