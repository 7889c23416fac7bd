#!/usr/bin/env bash
# The GPU check: run on a machine with an NVIDIA GPU (no Go needed), from the repository root,
# with the binaries that `make gpu-check-bin` built on a Go machine (bin/gpu/). It prints the
# GPU's facts and the libraries found, runs every GPU test verbosely (each kernel against its
# CPU twin, GaussianFill bit for bit, a whole GAMP-RIE run on CPU and GPU), runs the GPU
# benchmarks, and prints a short table last. Logs go to $OUT (default results/gpu-check).
# It is sized to finish in under 5 minutes; it never changes the GPU's settings.
set -u
BIN=${BIN:-bin/gpu}
OUT=${OUT:-results/gpu-check}
mkdir -p "$OUT"
export CUDA_CACHE_PATH=${CUDA_CACHE_PATH:-$OUT/cuda-cache}
# On the GPU machine a skipped GPU test is a failure: the point is to run them.
export AIM_REQUIRE_GPU=${AIM_REQUIRE_GPU:-1}
start=$(date +%s)

section() { printf '\n== %s\n' "$*"; }

section "nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,compute_cap --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"

section "aim device"
"$BIN/aim" device 2>&1 | tee "$OUT/device.txt"

section "GPU tests (every kernel against its CPU twin, GaussianFill bits, GAMP-RIE CPU vs GPU)"
timeout 150 "$BIN/cuda.test" -test.v -test.count=1 -test.timeout=140s 2>&1 | tee "$OUT/gpu-tests.log"
tests_rc=${PIPESTATUS[0]}

section "GPU benchmarks"
timeout 120 "$BIN/cuda.test" -test.run='^$' -test.bench=. -test.benchtime=1x -test.timeout=110s 2>&1 | tee "$OUT/gpu-bench.log"
bench_rc=${PIPESTATUS[0]}

section "summary"
{
	printf '%-40s %s\n' "tests passed" "$(grep -c -- '^--- PASS' "$OUT/gpu-tests.log")"
	printf '%-40s %s\n' "tests failed" "$(grep -c -- '^--- FAIL' "$OUT/gpu-tests.log")"
	printf '%-40s %s\n' "tests skipped" "$(grep -c -- '^--- SKIP' "$OUT/gpu-tests.log")"
	printf '%-40s %s\n' "test binary exit status" "$tests_rc"
	printf '%-40s %s\n' "benchmark binary exit status" "$bench_rc"
	grep -E '^Benchmark' "$OUT/gpu-bench.log" | awk '{ name = $1; $1 = ""; $2 = ""; printf "%-40s %s\n", name, $0 }'
	printf '%-40s %s s\n' "wall time" "$(( $(date +%s) - start ))"
} | tee "$OUT/summary.txt"
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
