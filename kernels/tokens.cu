// tokens.cu: token_dots and token_mix, the memory-bound per-sample contractions of GAMP-RIE;
// the CPU twins are TokenDots / tokenDots and TokenMix / tokenMix in cpu/tokens.go.
//
// Layout (row-major, sample after sample): y, x, z are n x t x d, h and c are n x t x t.

#include "common.cuh"

#define MAX_FIXED_T 8 // token_dots keeps t*t sums in registers for t <= MAX_FIXED_T
#define TILE 4        // and tiles of TILE x TILE sums above

// ---------------------------------------------------------------------------------------
// token_dots: h[mu,a,b] = sum_i y[mu,a,i] x[mu,b,i].
//
// Launch: one block per sample, grid-stride over samples (block mu, mu + gridDim.x, ...);
// grid = GridSamples(n). In a block, thread i accumulates the products of the columns
// i, i + BLOCK, ... (coalesced loads of 2 t rows) in registers; each sum is then reduced by
// a fixed shuffle tree in every warp and the 8 warp sums are added in warp order by one
// thread (deterministic). For t <= 8 all t*t sums are held at once (one pass over the
// sample); for larger t, TILE x TILE tiles of h are computed one after another (every row is
// read ceil(t/TILE) times, mostly from L2).

// dots_tile computes h[a0 + p, b0 + q] for p < TA, q < TB (where inside t x t) of one
// sample: ym and xm are its t x d rows, hm its t x t output. sh holds (BLOCK/32) TA TB values.
// Every thread of the block must call it (it synchronises).
template <int TA, int TB>
static __device__ void dots_tile(double *hm, const double *ym, const double *xm, int t, int d,
                                 int a0, int b0, double *sh) {
    double acc[TA][TB];
#pragma unroll
    for (int p = 0; p < TA; p++) {
#pragma unroll
        for (int q = 0; q < TB; q++) {
            acc[p][q] = 0;
        }
    }
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        double yv[TA], xv[TB];
#pragma unroll
        for (int p = 0; p < TA; p++) {
            yv[p] = a0 + p < t ? ym[(i64)(a0 + p) * d + i] : 0.0;
        }
#pragma unroll
        for (int q = 0; q < TB; q++) {
            xv[q] = b0 + q < t ? xm[(i64)(b0 + q) * d + i] : 0.0;
        }
#pragma unroll
        for (int p = 0; p < TA; p++) {
#pragma unroll
            for (int q = 0; q < TB; q++) {
                acc[p][q] += yv[p] * xv[q];
            }
        }
    }
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int p = 0; p < TA; p++) {
#pragma unroll
        for (int q = 0; q < TB; q++) {
            double v = acc[p][q];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                v += __shfl_down_sync(0xffffffffu, v, o);
            }
            if (lane == 0) {
                sh[warp * (TA * TB) + p * TB + q] = v;
            }
        }
    }
    __syncthreads();
    const int nw = blockDim.x >> 5;
    for (int k = threadIdx.x; k < TA * TB; k += blockDim.x) {
        const int a = a0 + k / TB, b = b0 + k % TB;
        if (a < t && b < t) {
            double s = sh[k];
            for (int w = 1; w < nw; w++) {
                s += sh[w * (TA * TB) + k];
            }
            hm[(i64)a * t + b] = s;
        }
    }
    __syncthreads(); // sh is reused by the next tile or sample
}

// dots_fixed computes token_dots for t = T <= MAX_FIXED_T: one T x T tile per sample.
template <int T>
static __device__ void dots_fixed(double *h, const double *y, const double *x, i64 n, int d) {
    __shared__ double sh[(BLOCK / 32) * T * T];
    const i64 td = (i64)T * d;
    for (i64 mu = blockIdx.x; mu < n; mu += gridDim.x) {
        dots_tile<T, T>(h + mu * (T * T), y + mu * td, x + mu * td, T, d, 0, 0, sh);
    }
}

// dots_tiled computes token_dots for any t, TILE x TILE tiles of each sample in turn.
static __device__ void dots_tiled(double *h, const double *y, const double *x, i64 n, int t, int d) {
    __shared__ double sh[(BLOCK / 32) * TILE * TILE];
    const i64 td = (i64)t * d, tt = (i64)t * t;
    for (i64 mu = blockIdx.x; mu < n; mu += gridDim.x) {
        for (int a0 = 0; a0 < t; a0 += TILE) {
            for (int b0 = 0; b0 < t; b0 += TILE) {
                dots_tile<TILE, TILE>(h + mu * tt, y + mu * td, x + mu * td, t, d, a0, b0, sh);
            }
        }
    }
}

extern "C" __global__ void token_dots(double *h, const double *y, const double *x, long long n, int t, int d) {
    if (t <= 0 || d < 0) {
        return;
    }
    switch (t) {
    case 1: dots_fixed<1>(h, y, x, n, d); break;
    case 2: dots_fixed<2>(h, y, x, n, d); break;
    case 3: dots_fixed<3>(h, y, x, n, d); break;
    case 4: dots_fixed<4>(h, y, x, n, d); break;
    case 5: dots_fixed<5>(h, y, x, n, d); break;
    case 6: dots_fixed<6>(h, y, x, n, d); break;
    case 7: dots_fixed<7>(h, y, x, n, d); break;
    case 8: dots_fixed<8>(h, y, x, n, d); break;
    default: dots_tiled(h, y, x, n, t, d); break;
    }
}

// ---------------------------------------------------------------------------------------
// token_mix: z[mu,a,i] = sum_b c[mu,a,b] x[mu,b,i].
//
// Launch: grid-stride over the n d pairs (mu, i), item k = mu d + i; grid = GridElems(n d).
// The thread of (mu, i) writes z[mu,a,i] for every a: the loads x[mu,b,i] are coalesced
// across the threads of a warp (consecutive i), the c[mu,a,b] are broadcasts. Each sum is
// formed in the order of tokenMix, so with --fmad=false the bits equal the CPU's:
//
//	t = 1:  z = c0 x0
//	t >= 2: z = c0 x0 + c1 x1;  z += c_b x_b + c_{b+1} x_{b+1} for b = 2, 4, ...;  z += c_b x_b (t odd)

// mix_row is one output value of tokenMix: sum_b ca[b] xv(b) in tokenMix's order, where
// xv(b) = x column value of row b. ca is row a of c (t values).
template <typename XV>
static __device__ __forceinline__ double mix_row(const double *ca, XV xv, int t) {
    if (t == 1) {
        return ca[0] * xv(0);
    }
    double za = ca[0] * xv(0) + ca[1] * xv(1);
    int b = 2;
    for (; b + 2 <= t; b += 2) {
        za += ca[b] * xv(b) + ca[b + 1] * xv(b + 1);
    }
    if (b < t) {
        za += ca[b] * xv(b);
    }
    return za;
}

// RegCol reads x[b] from a column held in registers (T <= MAX_FIXED_T, fully unrolled).
template <int T>
struct RegCol {
    double v[T];
    __device__ __forceinline__ double operator()(int b) const { return v[b]; }
};

// MemCol reads x[b, i] from memory (any t; repeated reads hit L1).
struct MemCol {
    const double *col; // &x[mu, 0, i]
    i64 d;
    __device__ __forceinline__ double operator()(int b) const { return col[(i64)b * d]; }
};

// mix_fixed computes token_mix for t = T <= MAX_FIXED_T, the column x[mu,:,i] in registers.
template <int T>
static __device__ void mix_fixed(double *z, const double *c, const double *x, i64 n, int d) {
    const i64 work = n * (i64)d, td = (i64)T * d;
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < work; k += (i64)gridDim.x * blockDim.x) {
        const i64 mu = k / d, i = k - mu * d;
        const double *cm = c + mu * (T * T);
        const double *col = x + mu * td + i;
        double *zc = z + mu * td + i;
        RegCol<T> xv;
#pragma unroll
        for (int b = 0; b < T; b++) {
            xv.v[b] = col[(i64)b * d];
        }
#pragma unroll
        for (int a = 0; a < T; a++) {
            zc[(i64)a * d] = mix_row(cm + a * T, xv, T);
        }
    }
}

// mix_any computes token_mix for any t, reading the column from memory.
static __device__ void mix_any(double *z, const double *c, const double *x, i64 n, int t, int d) {
    const i64 work = n * (i64)d, td = (i64)t * d, tt = (i64)t * t;
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < work; k += (i64)gridDim.x * blockDim.x) {
        const i64 mu = k / d, i = k - mu * d;
        const double *cm = c + mu * tt;
        MemCol xv = {x + mu * td + i, d};
        double *zc = z + mu * td + i;
        for (int a = 0; a < t; a++) {
            zc[(i64)a * d] = mix_row(cm + (i64)a * t, xv, t);
        }
    }
}

extern "C" __global__ void token_mix(double *z, const double *c, const double *x, long long n, int t, int d) {
    if (t <= 0 || d <= 0) {
        return;
    }
    switch (t) {
    case 1: mix_fixed<1>(z, c, x, n, d); break;
    case 2: mix_fixed<2>(z, c, x, n, d); break;
    case 3: mix_fixed<3>(z, c, x, n, d); break;
    case 4: mix_fixed<4>(z, c, x, n, d); break;
    case 5: mix_fixed<5>(z, c, x, n, d); break;
    case 6: mix_fixed<6>(z, c, x, n, d); break;
    case 7: mix_fixed<7>(z, c, x, n, d); break;
    case 8: mix_fixed<8>(z, c, x, n, d); break;
    default: mix_any(z, c, x, n, t, d); break;
    }
}
