// common.cuh: what several kernel files share: the block size of the launch contract
// (kernels.Block), the 64-bit index type, and the fixed-order block reduction.
#pragma once

#define BLOCK 256

typedef long long i64;

// block_sum returns, in thread 0, the sum of v over the block in a fixed order: a shuffle tree
// within each warp, then the same tree over the warp sums; the result depends only on the data,
// never on the GPU. blockDim.x must be a multiple of 32 (it is BLOCK). Every thread of the
// block must call it; sh holds BLOCK/32 values.
static __device__ double block_sum(double v, double *sh) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, o);
    }
    if (lane == 0) {
        sh[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x >> 5) ? sh[lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            v += __shfl_down_sync(0xffffffffu, v, o);
        }
    }
    __syncthreads(); // sh may be reused by the next call
    return v;
}
