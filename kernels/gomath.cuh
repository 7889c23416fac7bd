// gomath.cuh: Go's math.Inf, NaN (Go's bits), IsInf, IsNaN, Max and Min with Go's semantics for
// NaN, infinities and signed zeros, shared by the kernels whose CPU twins call them (channel.cu,
// deep.cu).
#pragma once

static __device__ __forceinline__ double pos_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
static __device__ __forceinline__ double neg_inf() { return __longlong_as_double((long long)0xfff0000000000000ULL); }
static __device__ __forceinline__ double go_nan() { return __longlong_as_double(0x7ff8000000000001LL); }
static __device__ __forceinline__ bool is_nan(double x) { return x != x; }
// is_inf is math.IsInf(x, sign): sign > 0 +Inf, sign < 0 -Inf, 0 either.
static __device__ __forceinline__ bool is_inf(double x, int sign) {
    return (sign >= 0 && x > 1.7976931348623157e308) || (sign <= 0 && x < -1.7976931348623157e308);
}
static __device__ __forceinline__ bool signbit_(double x) { return __double_as_longlong(x) < 0; }

// go_max is math.Max.
static __device__ __forceinline__ double go_max(double x, double y) {
    if (is_inf(x, 1) || is_inf(y, 1)) {
        return pos_inf();
    }
    if (is_nan(x) || is_nan(y)) {
        return go_nan();
    }
    if (x == 0 && x == y) {
        return signbit_(x) ? y : x;
    }
    return x > y ? x : y;
}

// go_min is math.Min.
static __device__ __forceinline__ double go_min(double x, double y) {
    if (is_inf(x, -1) || is_inf(y, -1)) {
        return neg_inf();
    }
    if (is_nan(x) || is_nan(y)) {
        return go_nan();
    }
    if (x == 0 && x == y) {
        return signbit_(x) ? x : y;
    }
    return x < y ? x : y;
}
