// Host emulation of the CUDA subset the kernels use: blocks run one after another, the threads
// of a block as std::threads; __syncthreads is a block barrier, shuffles use per-warp barriers.
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#include <functional>
#include <memory>

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __constant__
#define __shared__ static

struct dim3e { unsigned x, y, z; };
thread_local dim3e threadIdx, blockIdx;
dim3e blockDim, gridDim;
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
static inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
static inline double __dsqrt_rn(double a) { return std::sqrt(a); }
static inline long long __double_as_longlong(double x) { long long r; memcpy(&r, &x, 8); return r; }
static inline double __longlong_as_double(long long x) { double r; memcpy(&r, &x, 8); return r; }
static inline float __double2float_rn(double x) { volatile float r = (float)x; return r; } // round to nearest even
static inline unsigned __float_as_uint(float x) { unsigned r; memcpy(&r, &x, 4); return r; }
static inline float __uint_as_float(unsigned x) { float r; memcpy(&r, &x, 4); return r; }
using std::exp; using std::log; using std::erfc; using std::log1p; using std::asin; using std::sin; using std::sqrt; using std::fabs;
using std::expm1; using std::floor; using std::fmax; using std::copysign; // glibc's, correctly rounded or within 1 ulp, as CUDA's

static std::unique_ptr<std::barrier<>> g_block_bar;
static std::vector<std::unique_ptr<std::barrier<>>> g_warp_bar;
static std::vector<double> g_shfl;
static inline void __syncthreads() { g_block_bar->arrive_and_wait(); }
static inline double __shfl_down_sync(unsigned, double v, int o) {
    unsigned t = threadIdx.x, w = t >> 5, lane = t & 31;
    g_shfl[t] = v;
    g_warp_bar[w]->arrive_and_wait();
    double r = lane + o < 32 ? g_shfl[t + o] : v;
    g_warp_bar[w]->arrive_and_wait();
    return r;
}

static void launch(unsigned grid, unsigned block, std::function<void()> k) {
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    g_shfl.assign(block, 0);
    for (unsigned b = 0; b < grid; b++) {
        g_block_bar.reset(new std::barrier<>(block));
        g_warp_bar.clear();
        for (unsigned w = 0; w < block / 32; w++) g_warp_bar.emplace_back(new std::barrier<>(32));
        std::vector<std::thread> th;
        for (unsigned t = 0; t < block; t++) {
            th.emplace_back([=] { threadIdx = {t, 0, 0}; blockIdx = {b, 0, 0}; k(); });
        }
        for (auto &x : th) x.join();
    }
}
