// vector.cu: element-wise operations and fixed-chunk reductions over whole buffers; the CPU
// twins are in cpu/vector.go (Scal, Axpby, AddDiag, MulPattern, Dot, SqDist, SumDiag) and
// cpu/linalg.go (the column scaling of SpectralCompose).
//
// Element-wise kernels compute each element with the same operations as their twins, so with
// --fmad=false they give the same bits. Reductions: block b sums the fixed chunk
// [b REDUCE_CHUNK, (b+1) REDUCE_CHUNK) into part[b], thread i taking the elements
// i, i + BLOCK, ... of the chunk (coalesced), then a fixed tree over the block (warp shuffles,
// then the 8 warp sums); the result depends only on the data and the chunk size, never on the
// GPU, and the host adds the partials in order.

#include "common.cuh"

#define REDUCE_CHUNK 4096

static __device__ __forceinline__ i64 first_item() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
static __device__ __forceinline__ i64 item_stride() { return (i64)gridDim.x * blockDim.x; }

// chunk_count is the number of partials of a reduction over len items: max(ceil(len/CHUNK), 1),
// as kernels.GridReduce.
static __device__ __forceinline__ i64 chunk_count(i64 len) {
    i64 c = (len + REDUCE_CHUNK - 1) / REDUCE_CHUNK;
    return c > 0 ? c : 1;
}

// scal: x = a x (Scal: v[i] *= alpha). Grid-stride over len.
extern "C" __global__ void scal(double *x, long long len, double a) {
    for (i64 i = first_item(); i < len; i += item_stride()) {
        x[i] *= a;
    }
}

// axpby: y = a x + b y (Axpby: yv[i] = a*xv[i] + b*yv[i]). Grid-stride over len.
extern "C" __global__ void axpby(double *y, double a, const double *x, double b, long long len) {
    for (i64 i = first_item(); i < len; i += item_stride()) {
        y[i] = a * x[i] + b * y[i];
    }
}

// add_diag: x[mu,a,a] += v for n stacked t x t matrices (AddDiag). Grid-stride over the n t
// diagonal entries, item k = mu t + a.
extern "C" __global__ void add_diag(double *x, long long n, int t, double v) {
    const i64 work = n * (i64)t;
    for (i64 k = first_item(); k < work; k += item_stride()) {
        i64 mu = k / t, a = k - mu * t;
        x[mu * t * t + a * t + a] += v;
    }
}

// mul_pattern: x[mu,k] *= p[k] for n stacked blocks of m values (MulPattern: blk[k] *= pk).
// Grid-stride over the n m values.
extern "C" __global__ void mul_pattern(double *x, const double *p, long long n, int m) {
    if (m <= 0) {
        return;
    }
    const i64 work = n * (i64)m;
    for (i64 k = first_item(); k < work; k += item_stride()) {
        x[k] *= p[k % m];
    }
}

// scale_columns: out[i,k] = o[i,k] f[k] for a d x d matrix o (the O diag(f) factor of
// SpectralCompose). Grid-stride over the d d values.
extern "C" __global__ void scale_columns(double *out, const double *o, const double *f, int d) {
    if (d <= 0) {
        return;
    }
    const i64 work = (i64)d * d;
    for (i64 k = first_item(); k < work; k += item_stride()) {
        out[k] = o[k] * f[k % d];
    }
}

// dot_partial: part[c] = sum of x[i] y[i] over chunk c (Dot). Grid = GridReduce(len); a block
// also takes chunks c + gridDim.x, ... if the grid is smaller.
extern "C" __global__ void dot_partial(double *part, const double *x, const double *y, long long len) {
    __shared__ double sh[BLOCK / 32];
    const i64 nc = chunk_count(len);
    for (i64 c = blockIdx.x; c < nc; c += gridDim.x) {
        const i64 lo = c * REDUCE_CHUNK;
        const i64 hi = len - lo < REDUCE_CHUNK ? len : lo + REDUCE_CHUNK;
        double s = 0;
        for (i64 i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            s += x[i] * y[i];
        }
        s = block_sum(s, sh);
        if (threadIdx.x == 0) {
            part[c] = s;
        }
    }
}

// sqdist_partial: part[c] = sum of (x[i] - y[i])^2 over chunk c (SqDist). Launch as
// dot_partial.
extern "C" __global__ void sqdist_partial(double *part, const double *x, const double *y, long long len) {
    __shared__ double sh[BLOCK / 32];
    const i64 nc = chunk_count(len);
    for (i64 c = blockIdx.x; c < nc; c += gridDim.x) {
        const i64 lo = c * REDUCE_CHUNK;
        const i64 hi = len - lo < REDUCE_CHUNK ? len : lo + REDUCE_CHUNK;
        double s = 0;
        for (i64 i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            double e = x[i] - y[i];
            s += e * e;
        }
        s = block_sum(s, sh);
        if (threadIdx.x == 0) {
            part[c] = s;
        }
    }
}

// sumdiag_partial: part[c] = sum over the samples mu of chunk c (REDUCE_CHUNK samples) of
// sum_a x[mu,a,a] (SumDiag). Grid = GridReduce(n).
extern "C" __global__ void sumdiag_partial(double *part, const double *x, long long n, int t) {
    __shared__ double sh[BLOCK / 32];
    const i64 nc = chunk_count(n);
    const i64 tt = (i64)t * t;
    for (i64 c = blockIdx.x; c < nc; c += gridDim.x) {
        const i64 lo = c * REDUCE_CHUNK;
        const i64 hi = n - lo < REDUCE_CHUNK ? n : lo + REDUCE_CHUNK;
        double s = 0;
        for (i64 mu = lo + threadIdx.x; mu < hi; mu += blockDim.x) {
            const double *m = x + mu * tt;
            for (int a = 0; a < t; a++) {
                s += m[(i64)a * t + a];
            }
        }
        s = block_sum(s, sh);
        if (threadIdx.x == 0) {
            part[c] = s;
        }
    }
}
