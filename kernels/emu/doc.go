// Package emu checks the CUDA kernels without a GPU: its tests compile kernels/*.cu as C++20
// with testdata/cuda_emu.h, a host emulation of the CUDA subset the kernels use (blocks one
// after another, the 256 threads of a block as OS threads, __syncthreads and warp shuffles as
// barriers), run each kernel on random inputs and compare with its CPU twin (package channel
// for channel.cu and deep.cu, through the CPU backend, package cpu and the device's normal
// stream for the others; TestTwins holds the pairing and fails for a .cu without a twin):
// bit for bit where the arithmetic is the same (GaussianFill, the elementwise kernels,
// token_mix), to 1e-12 where the summation order differs, and deep_sample (twin
// channel.DeepSampleBatch) to 1e-9 of each value's scale, glibc's exp and log against Go's. It
// validates the kernels' logic (indexing, bounds, reductions, the channel math); timing and
// real-GPU behaviour wait for the GPU check (bench/gpu-check.sh).
package emu
