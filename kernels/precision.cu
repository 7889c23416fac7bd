// precision.cu: the conversions around cuBLAS's reduced-precision products (GemmPrecision at
// fp32, tf32 and bf16x9; device/precision.go specifies every rounding bit for bit): the float64
// inputs to the float32 a product reads (to_f32) or to three bfloat16 parts (split_bf16), and
// the float32 product back to float64 (from_f32). Unlike the other kernels these read or write
// float32 and bfloat16 arrays (the bfloat16 as their 16-bit patterns). Grid-stride loops.
#include "common.cuh"

static __device__ __forceinline__ i64 first_item() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
static __device__ __forceinline__ i64 item_stride() { return (i64)gridDim.x * blockDim.x; }

#define F32_EXP 0x7f800000u
#define F32_FRAC 0x007fffffu
#define F32_SIGN 0x80000000u
#define F32_QUIET 0x00400000u
#define MAX_BF16 0x7f7f0000u

// round_tf32: device.RoundTF32 on the bits of a float32: NaN quieted with the 13 low bits
// cleared, Inf unchanged, finite values rounded to nearest with ties away from zero.
static __device__ __forceinline__ unsigned round_tf32(unsigned b) {
    if ((b & F32_EXP) == F32_EXP) {
        return (b & F32_FRAC) != 0 ? (b | F32_QUIET) & ~0x1fffu : b;
    }
    return (b + 0x1000u) & ~0x1fffu;
}

// round_bf16: device.RoundBF16 on the bits of a float32: NaN quieted with the 16 low bits
// cleared, Inf unchanged, finite values rounded to nearest with ties to even.
static __device__ __forceinline__ unsigned round_bf16(unsigned b) {
    if ((b & F32_EXP) == F32_EXP) {
        return (b & F32_FRAC) != 0 ? (b | F32_QUIET) & ~0xffffu : b;
    }
    return (b + 0x7fffu + ((b >> 16) & 1u)) & ~0xffffu;
}

// to_f32: out[i] = the float32 that a product at fp32 (tf32 = 0) or tf32 (tf32 = 1) reads for
// in[i] (device.RoundInput): fl32(in[i]), round to nearest even, then RoundTF32 at tf32. A NaN
// stays a NaN, its payload that of the hardware's conversion (CUDA's is 0x7fffffff, Go's on
// x86 the quieted, truncated payload), as in split_bf16.
extern "C" __global__ void to_f32(float *out, const double *in, long long len, int tf32) {
    for (i64 i = first_item(); i < len; i += item_stride()) {
        float x = __double2float_rn(in[i]);
        out[i] = tf32 ? __uint_as_float(round_tf32(__float_as_uint(x))) : x;
    }
}

// split_bf16: the bfloat16 parts hi, mid, lo of fl32(in[i]) (device.SplitBF16), as 16-bit
// patterns at out[i], out[stride + i] and out[2 stride + i] (stride >= len).
extern "C" __global__ void split_bf16(unsigned short *out, const double *in, long long len, long long stride) {
    for (i64 i = first_item(); i < len; i += item_stride()) {
        const float x = __double2float_rn(in[i]);
        const unsigned b = __float_as_uint(x);
        unsigned hi = round_bf16(b), mid = 0, lo = 0;
        if ((b & F32_EXP) != F32_EXP && (b & ~F32_SIGN) != 0) {
            if ((hi & F32_EXP) == F32_EXP) { // overflow to Inf: the largest bfloat16 instead
                hi = (b & F32_SIGN) | MAX_BF16;
            }
            const float r = x - __uint_as_float(hi);
            mid = round_bf16(__float_as_uint(r));
            lo = round_bf16(__float_as_uint(r - __uint_as_float(mid)));
        }
        out[i] = (unsigned short)(hi >> 16);
        out[stride + i] = (unsigned short)(mid >> 16);
        out[2 * stride + i] = (unsigned short)(lo >> 16);
    }
}

// from_f32: c[i] = alpha (double) p[i] + beta c[i], with beta = 0 overwriting c (NaN
// included), as the CPU backend's GemmPrecision finishes.
extern "C" __global__ void from_f32(double *c, const float *p, long long len, double alpha, double beta) {
    for (i64 i = first_item(); i < len; i += item_stride()) {
        const double v = alpha * (double)p[i];
        c[i] = beta == 0 ? v : v + beta * c[i];
    }
}
