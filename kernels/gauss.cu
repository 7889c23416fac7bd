// gauss.cu: gaussian_fill, the Gaussian stream G(seed, i) of device/normal.go and
// device/philox.go, bit for bit. The stream's device functions (Philox, log, sin/cos,
// Box-Muller: gauss_pair) are in normal.cuh, shared with deep.cu.

#include "normal.cuh"

#define BLOCK 256

// gaussian_fill sets x[k] = scale * G(seed, offset + k) for k in [0, len) (indices modulo 2^64),
// the values of device.FillNormals (then scaled, as cpu.GaussianFill does: x * scale, and
// G * 1 = G exactly).
//
// Launch: grid-stride over the Philox blocks touched, nblk = (len + (offset & 1) + 1) / 2;
// grid = GridElems(nblk). Thread item jj computes block j = ((offset & ~1) + 2 jj) / 2 and
// writes its lane-0 value to x[2 jj - (offset & 1)] and its lane-1 value to the next index,
// each only inside [0, len).
extern "C" __global__ void gaussian_fill(double *x, long long len, unsigned long long seed,
                                         unsigned long long offset, double scale) {
    if (len <= 0) {
        return;
    }
    const i64 odd0 = (i64)(offset & 1);
    const i64 nblk = (len - 1 + odd0) / 2 + 1;
    const uint2 key = make_uint2((u32)seed, (u32)(seed >> 32));
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 jj = (i64)blockIdx.x * blockDim.x + threadIdx.x; jj < nblk; jj += stride) {
        u64 base = (offset & ~1ULL) + 2ULL * (u64)jj; // first stream index of the block, mod 2^64
        double z0, z1;
        gauss_pair(base >> 1, key, &z0, &z1);
        i64 k0 = 2 * jj - odd0; // position of lane 0 in x
        if (k0 >= 0) {
            x[k0] = __dmul_rn(z0, scale);
        }
        if (k0 + 1 < len) {
            x[k0 + 1] = __dmul_rn(z1, scale);
        }
    }
}
