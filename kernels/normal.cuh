// normal.cuh: the Gaussian stream G(seed, i) of device/normal.go and device/philox.go, bit for
// bit: Philox4x32-10, fdlibm's log and the sin/cos of Box-Muller as device functions, shared by
// gauss.cu (gaussian_fill) and deep.cu (deep_sample). gauss_pair(j, key) returns G(seed, 2j) and
// G(seed, 2j+1) under key = (seed, seed >> 32).
//
// Every floating-point operation is one correctly rounded IEEE binary64 operation, in the order
// of the Go source. Go writes float64(x * y) wherever a product must not be fused into a
// multiply-add; this file writes __dmul_rn(x, y) at exactly those places (an explicit
// round-to-nearest product, which the compiler never contracts), so the bits do not even depend
// on --fmad=false (which the generator passes anyway). Division and __dsqrt_rn are correctly
// rounded in CUDA as in Go. The functions below are line-by-line ports of the Go functions
// named in their comments.
//
// Decimal constants carry 17 significant digits, which round to the hex-float value in the
// comment beside them exactly (embed_test.go checks every "// 0x..." comment of this form).
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// Log constants (fdlibm e_log.c), device/normal.go.
#define LOG_LN2HI 0.69314718036912382      // 0x1.62e42feep-01
#define LOG_LN2LO 1.9082149292705877e-10   // 0x1.a39ef35793c76p-33
#define LOG_L1 0.66666666666667351         // 0x1.5555555555593p-01
#define LOG_L2 0.39999999999409419         // 0x1.999999997fa04p-02
#define LOG_L3 0.28571428743662391         // 0x1.2492494229359p-02
#define LOG_L4 0.22222198432149784         // 0x1.c71c51d8e78afp-03
#define LOG_L5 0.1818357216161805          // 0x1.7466496cb03dep-03
#define LOG_L6 0.15313837699209373         // 0x1.39a09d078c69fp-03
#define LOG_L7 0.14798198605116586         // 0x1.2f112df3e5244p-03
#define LOG_SQRT2_BITS 0x3ff6a09e667f3bcdULL // bits of 0x1.6a09e667f3bcdp+00 (sqrt 2 rounded up)
#define TWO_P54 18014398509481984.0        // 0x1p54
#define TWO_M1022 2.2250738585072014e-308  // 0x1p-1022
#define TWO_M53 1.1102230246251565e-16     // 0x1p-53

// SinCos2Pi constants: pi/4 = TRIG_P1 + TRIG_P2, and fdlibm's k_sin.c / k_cos.c.
#define TRIG_P1 0.78539815545082092        // 0x1.921fb5p-01
#define TRIG_P2 7.946627386764098e-09      // 0x1.110b4611a6263p-27
#define TRIG_S1 -0.16666666666666632       // -0x1.5555555555549p-03
#define TRIG_S2 0.0083333333333224895      // 0x1.111111110f8a6p-07
#define TRIG_S3 -0.00019841269829857949    // -0x1.a01a019c161d5p-13
#define TRIG_S4 2.7557313707070068e-06     // 0x1.71de357b1fe7dp-19
#define TRIG_S5 -2.5050760253406863e-08    // -0x1.ae5e68a2b9cebp-26
#define TRIG_S6 1.5896909952115501e-10     // 0x1.5d93a5acfd57cp-33
#define TRIG_C1 0.041666666666666602       // 0x1.555555555554cp-05
#define TRIG_C2 -0.001388888888887411      // -0x1.6c16c16c15177p-10
#define TRIG_C3 2.4801587289476729e-05     // 0x1.a01a019cb159p-16
#define TRIG_C4 -2.7557314351390663e-07    // -0x1.27e4f809c52adp-22
#define TRIG_C5 2.0875723212981748e-09     // 0x1.1ee9ebdb4b1c4p-29
#define TRIG_C6 -1.1359647557788195e-11    // -0x1.8fae9be8838d4p-37

// Philox constants, device/philox.go.
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static __device__ __forceinline__ u64 f64bits(double x) { return (u64)__double_as_longlong(x); }
static __device__ __forceinline__ double f64frombits(u64 b) { return __longlong_as_double((i64)b); }

// philox4x32_10 is Philox4x32 (philox.go): 10 rounds, the key bumped by (W0, W1) between rounds.
static __device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
#pragma unroll
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k.x += PHILOX_W0;
            k.y += PHILOX_W1;
        }
        // philoxRound: p0 = M0 c0, p1 = M1 c2 (64-bit products, split into hi and lo).
        u32 hi0 = __umulhi(PHILOX_M0, c.x), lo0 = PHILOX_M0 * c.x;
        u32 hi1 = __umulhi(PHILOX_M1, c.z), lo1 = PHILOX_M1 * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

// go_log is Log (normal.go): fdlibm's log with the reduction by bit manipulation.
static __device__ double go_log(double x) {
    u64 bits = f64bits(x);
    int adj = 0;
    if (bits - (1ULL << 52) >= (0x7feULL << 52)) { // not a positive normal number
        if (x > 0 && x < TWO_M1022) { // subnormal: scale exactly by 2^54
            bits = f64bits(__dmul_rn(x, TWO_P54));
            adj = -54;
        } else if (x == 0) {
            return f64frombits(0xfff0000000000000ULL); // -Inf
        } else if (x > 0) { // +Inf
            return x;
        } else { // x < 0 or NaN
            return f64frombits(0x7ff8000000000001ULL); // NaN (Go's math.NaN() bits)
        }
    }
    u64 mant = bits & ((1ULL << 52) - 1);
    u64 c = (mant + ((1ULL << 52) - (LOG_SQRT2_BITS & ((1ULL << 52) - 1)))) >> 52;
    int e = (int)(bits >> 52) - 1023 + (int)c + adj;
    double m = f64frombits(mant | (1023 - c) << 52);
    double f = m - 1;
    double k = (double)e;
    double s = f / (2 + f);
    double z = __dmul_rn(s, s);
    double w = __dmul_rn(z, z);
    double t1 = __dmul_rn(z, (LOG_L1 + __dmul_rn(w, (LOG_L3 + __dmul_rn(w, (LOG_L5 + __dmul_rn(w, LOG_L7)))))));
    double t2 = __dmul_rn(w, (LOG_L2 + __dmul_rn(w, (LOG_L4 + __dmul_rn(w, LOG_L6)))));
    double r = t1 + t2;
    double hfsq = __dmul_rn(__dmul_rn(0.5, f), f);
    return __dmul_rn(k, LOG_LN2HI) - ((hfsq - (__dmul_rn(s, (hfsq + r)) + __dmul_rn(k, LOG_LN2LO))) - f);
}

// sin_cos_pi4 is sinCosPi4 (normal.go): sin(pi/4 x) and cos(pi/4 x) for x in [0, 1].
static __device__ void sin_cos_pi4(double x, double *sin_out, double *cos_out) {
    double xh = f64frombits(f64bits(x) & ~((1ULL << 27) - 1));
    double xl = x - xh;
    double a = __dmul_rn(TRIG_P1, xh);
    double b = __dmul_rn(TRIG_P1, xl);
    double c = __dmul_rn(TRIG_P2, x);
    double hi = a + b;
    double lo = ((a - hi) + b) + c;
    double th = hi + lo;
    double tl = lo - (th - hi);

    double z = __dmul_rn(th, th);
    double v3 = __dmul_rn(z, th);
    double rs = TRIG_S2 + __dmul_rn(z, (TRIG_S3 + __dmul_rn(z, (TRIG_S4 + __dmul_rn(z, (TRIG_S5 + __dmul_rn(z, TRIG_S6)))))));
    *sin_out = th - ((__dmul_rn(z, (__dmul_rn(0.5, tl) - __dmul_rn(v3, rs))) - tl) - __dmul_rn(v3, TRIG_S1));
    double rc = __dmul_rn(z, (TRIG_C1 + __dmul_rn(z, (TRIG_C2 + __dmul_rn(z, (TRIG_C3 + __dmul_rn(z, (TRIG_C4 + __dmul_rn(z, (TRIG_C5 + __dmul_rn(z, TRIG_C6)))))))))));
    double hz = __dmul_rn(0.5, z);
    double w = 1 - hz;
    *cos_out = w + (((1 - w) - hz) + (__dmul_rn(z, rc) - __dmul_rn(th, tl)));
}

// sin_cos_2pi is SinCos2Pi (normal.go), with the same branch-free octant selection.
static __device__ void sin_cos_2pi(double u, double *sin_out, double *cos_out) {
    double v = __dmul_rn(8.0, u);
    int q = (int)v;
    double xe = v - (double)q;       // q even
    double xo = (double)(q + 1) - v; // q odd
    u64 odd = -(u64)(q & 1);
    double x = f64frombits((f64bits(xe) & ~odd) | (f64bits(xo) & odd));
    q &= 7;
    double sn, cs;
    sin_cos_pi4(x, &sn, &cs);
    u64 swap = -(u64)(((q + 1) >> 1) & 1); // q = 1, 2, 5, 6
    u64 sb = f64bits(sn), cb = f64bits(cs);
    u64 sb2 = (sb & ~swap) | (cb & swap);
    u64 cb2 = (cb & ~swap) | (sb & swap);
    sb2 ^= (u64)(q & 4) << 61;       // q = 4, 5, 6, 7: sin < 0
    cb2 ^= (u64)((q + 2) & 4) << 61; // q = 2, 3, 4, 5: cos < 0
    *sin_out = f64frombits(sb2);
    *cos_out = f64frombits(cb2);
}

// box_muller is boxMuller (normal.go): the two normals (lanes 0 and 1) of the Philox words r.
static __device__ void box_muller(uint4 r, double *z0, double *z1) {
    u64 a = (((u64)r.x << 32) | (u64)r.y) >> 11;
    u64 b = (((u64)r.z << 32) | (u64)r.w) >> 11;
    double u1 = __dmul_rn((double)(i64)(a + 1), TWO_M53); // a+1 <= 2^53: the conversion is exact
    double u2 = __dmul_rn((double)(i64)b, TWO_M53);
    double rad = __dsqrt_rn(__dmul_rn(-2.0, go_log(u1)));
    double s, c;
    sin_cos_2pi(u2, &s, &c);
    *z0 = __dmul_rn(rad, c);
    *z1 = __dmul_rn(rad, s);
}

// gauss_pair is gaussPair (normal.go): G(seed, 2j) and G(seed, 2j+1) under key = seedKey(seed).
static __device__ void gauss_pair(u64 j, uint2 key, double *z0, double *z1) {
    box_muller(philox4x32_10(make_uint4((u32)j, (u32)(j >> 32), 0u, 0u), key), z0, z1);
}
