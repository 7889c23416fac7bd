// Package kernels holds the CUDA C sources of aim's device operations (*.cu), the PTX they
// compile to (*.ptx, generated for compute_80 by `make kernels` and committed), and the launch
// contract that the CUDA backend (device/cuda) follows: CUDA only. Every kernels/X.cu has a
// CPU twin, kept by name: the channel math of channel.cu and the deep channel's sampler of
// deep.cu in package channel (channel/channel.go, channel/deep.go and the files they use), the
// others in package cpu and the device's normal stream; the emulator tests of kernels/emu
// compare each kernel with its twin without a GPU (and fail for a .cu without one), the GPU
// tests of device/cuda on fresh random inputs.
//
// The launch contract. All kernels are extern "C", work in float64 (the conversions of
// precision.cu read or write float32 and bfloat16 arrays too), take sizes as long long
// (int64) except T-like small sizes as int, and run with Block threads per block:
//
//	elementwise   scal, axpby, add_diag, mul_pattern, scale_columns, token_mix, gaussian_fill,
//	              adam_step, to_f32, split_bf16, from_f32:
//	              grid-stride loops; grid = GridElems(work), work as documented per kernel.
//	per sample    token_dots: block mu (grid-stride over samples) reduces sample mu;
//	              grid = GridSamples(n).
//	              hardmaxt_gout (hardmax at T > 2): block b (grid-stride over samples)
//	              estimates sample mu's polytope integral, its threads over the lattice points
//	              (thread k takes points k, k + Block, ... of each shift), and writes one
//	              square-sum per sample to part[mu], so part has n entries; grid =
//	              GridSamples(n). Static shared memory about 31 KB.
//	per thread    softmax_output, hardmax_output, softmax_gout, hardmax_gout,
//	              softmax_loss_grad, deep_sample: thread
//	              mu = blockIdx.x * Block + threadIdx.x handles sample (task) mu (no grid
//	              stride); grid = GridThreads(n). The g_out and loss kernels also write one
//	              partial sum per block to part[blockIdx.x], so part has GridThreads(n) entries.
//	per warp      deep_sample_warp: warp mu = (blockIdx.x * Block + threadIdx.x) / 32 handles
//	              task mu, its lanes over the task's draws, lane 0 writing; grid =
//	              GridWarps(n).
//	reductions    dot_partial, sqdist_partial, sumdiag_partial: block b reduces the fixed chunk
//	              [b ReduceChunk, (b+1) ReduceChunk) of elements (of samples for sumdiag) into
//	              part[b]; grid = GridReduce(len) (len = 0 gives one partial, 0). The host adds
//	              the partials in order, so a sum does not depend on the GPU model.
//
// The kernels assume blockDim.x = Block (a multiple of 32: warp shuffles and shared arrays are
// sized for it). Dynamic shared memory: none. The PTX modules and the kernel -> module map
// are in embed.go (PTX, KernelModule, KernelParams).
//
// Kernel signatures (C):
//
//	token_dots(double *h, const double *y, const double *x, long long n, int t, int d)
//	    h[mu,a,b] = sum_i y[mu,a,i] x[mu,b,i]
//	token_mix(double *z, const double *c, const double *x, long long n, int t, int d)
//	    z[mu,a,i] = sum_b c[mu,a,b] x[mu,b,i]; work = n*d (one thread per (mu, i), all a)
//	scal(double *x, long long len, double a)                       x = a x; work = len
//	axpby(double *y, double a, const double *x, double b, long long len)
//	    y = a x + b y; work = len
//	add_diag(double *x, long long n, int t, double v)              x[mu,a,a] += v; work = n*t
//	mul_pattern(double *x, const double *p, long long n, int m)    x[mu,k] *= p[k]; work = n*m
//	scale_columns(double *out, const double *o, const double *f, int d)
//	    out[i,k] = o[i,k] f[k]; work = d*d
//	dot_partial(double *part, const double *x, const double *y, long long len)
//	sqdist_partial(double *part, const double *x, const double *y, long long len)
//	sumdiag_partial(double *part, const double *x, long long n, int t)
//	softmax_output(double *y, const double *h, long long n, int t, double beta)
//	hardmax_output(double *y, const double *h, long long n, int t)
//	softmax_gout(double *g, double *part, const double *y, const double *omega, long long n,
//	             int t, double beta, double v)
//	hardmax_gout(double *g, double *part, const double *y, const double *omega, long long n,
//	             double v, int paper)
//	hardmaxt_gout(double *g, double *part, const double *y, const double *omega, long long n,
//	              int t, double v, int points, int shifts, double tol)
//	    channel.HardmaxT.GOut (3 <= t <= 6, 2 <= shifts <= 16, points >= 1, tol >= 0: 0 = every point)
//	    with cpu.ChannelGOut's coordinates; part[mu] = sum_{a<=b} g_mu,ab^2
//	gaussian_fill(double *x, long long len, unsigned long long seed,
//	              unsigned long long offset, double scale)
//	    x[k] = scale G(seed, offset + k), bit for bit the stream of device.NormalAt;
//	    work = number of Philox blocks touched = (len + (offset & 1) + 1) / 2 (len > 0)
//	softmax_loss_grad(double *gamma, double *part, const double *yhat, const double *y,
//	                  long long n, int t, double beta, double scale)
//	    device.Trainer's SoftmaxLossGrad; part[block] = scale * the block's sum of squares
//	adam_step(double *w, const double *g, double *m, double *v, long long len, double lr,
//	          double b1, double b2, double eps, double c1, double c2)
//	    one Adam update, c1 = 1 - b1^t and c2 = 1 - b2^t from the host; work = len
//	deep_sample(double *out, const double *in, long long n, int L, int draws, double c,
//	            double beta, unsigned long long seed, unsigned long long offset,
//	            unsigned long long stride)
//	    channel.DeepSampleBatch's task t at L layers (channel.DeepMinL <= L <= DeepMaxL): reads
//	    in[t DeepIn(L) .. (t+1) DeepIn(L)) = (slot, u (2), omega (L x 2), V (L x L),
//	    row-major), writes out[t DeepOut(L) .. (t+1) DeepOut(L)) (the layout of channel.DeepOut(L)
//	    and DeepOut*(L); on failure NaN everywhere and the status DeepNotPD, DeepNoPoint or
//	    DeepBadSlot, the last for a slot that is not an integer in [0, 2^53)). Draw i < draws
//	    takes the DeepNormals(L) = 2 (L - 1) normals G(seed, base + 2 (L - 1) i + k),
//	    base = offset + slot stride (mod 2^64): L - 1 gauss_pair calls, pair p at
//	    (base + 2 (L - 1) i + 2 p) >> 1. The caller guarantees draws >= 2, offset and stride
//	    even (so base is even) and L in range; for another L the kernel reads nothing and, for
//	    1 <= L <= 64, writes NaN everywhere and the kernel-only status 4 at DeepOut(L)'s
//	    layout, for any other L nothing.
//	deep_sample_warp(the arguments of deep_sample)
//	    deep_sample with one task per warp: lane l takes the draws l, l + 32, ..., and the
//	    lanes' weighted sums are merged in a fixed tree (lane l with l + o, o = 16, ..., 1).
//	    The same draws and estimator, summed in another order: the same results to rounding.
//	to_f32(float *out, const double *in, long long len, int tf32)
//	    out = fl32(in), then device.RoundTF32 where tf32 != 0 (device.RoundInput); work = len
//	split_bf16(unsigned short *out, const double *in, long long len, long long stride)
//	    the bfloat16 bit patterns of device.SplitBF16(fl32(in)): hi at out[i], mid at
//	    out[stride + i], lo at out[2 stride + i] (stride >= len); work = len
//	from_f32(double *c, const float *p, long long len, double alpha, double beta)
//	    c = alpha (double) p + beta c, or alpha (double) p where beta = 0; work = len
//
// The channel kernels follow device.Device's conventions: z-coordinates, full symmetric T x T
// matrices per sample, only the upper triangle of omega read, g written full and symmetric.
package kernels

// Block is the number of threads per block of every kernel.
const Block = 256

// ReduceChunk is the number of elements (samples, for sumdiag_partial) one block of a
// reduction kernel sums.
const ReduceChunk = 4096

// maxGrid caps grid-stride launches: enough blocks to fill any current GPU.
const maxGrid = 1 << 16

// GridElems returns the grid of a grid-stride elementwise kernel over work items.
func GridElems(work int64) uint32 {
	g := (work + Block - 1) / Block
	return uint32(min(max(g, 1), maxGrid))
}

// GridSamples returns the grid of a block-per-sample kernel over n samples.
func GridSamples(n int64) uint32 { return uint32(min(max(n, 1), maxGrid)) }

// GridThreads returns the grid of a thread-per-sample kernel over n samples: ceil(n / Block).
func GridThreads(n int64) uint32 { return uint32(max((n+Block-1)/Block, 1)) }

// GridWarps returns the grid of a per-warp kernel over n items: one warp of 32 threads each,
// GridThreads(32 n).
func GridWarps(n int64) uint32 { return GridThreads(32 * n) }

// GridReduce returns the grid (and the number of partials) of a reduction over len items.
func GridReduce(length int64) uint32 { return uint32(max((length+ReduceChunk-1)/ReduceChunk, 1)) }
